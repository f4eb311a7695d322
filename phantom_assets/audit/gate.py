"""The promotion gate (DESIGN §8): what is certified is the agent-aware defence.

1. *Selection* (selection episode seeds only): every policy but the static engine is scored by
   the quantity the gate tests -- the smaller of its mean fitted-profit advantage over the static
   engine and its mean detector value (fitted − permuted-f profit on the same cells) -- and the
   best `n_candidates` go forward. Heuristics take part; with δ = 0 their detector value is 0.
2. *Test* (held-out episode seeds, never used for selection or for choosing the stress α): per
   candidate, one value per held-out seed (training seeds and α0 cells averaged within the seed:
   they share its common random numbers) of (1) the paired profit advantage over the static
   engine and (2) the detector value, each an exact sign-flip test with its inverted CI, and of
   (3) the human-harm share, a one-sided t test against `max_human_harm` whose inverted upper
   bound is reported. The candidate's p is the largest of the three one-sided p's
   (intersection-union: certification claims all three); the candidates' p's are Holm-adjusted,
   so testing several cannot certify a harmful one more often than the level either.
3. *Decision*: certified iff every blocking check passed and the Holm-adjusted p is at most
   (1 − confidence)/2 -- with one candidate exactly: both CIs lie above zero and the harm's upper
   bound is within the bound. The report names the best certified candidate, else the top-ranked
   one, with every condition it failed; the profit advantage at α0 = 1 is reported, not decided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.audit.harm import HarmBound, harm_bound
from phantom_assets.audit.pairs import (
    FITTED,
    SeedValues,
    detector_values,
    per_seed,
    profit_advantages,
    rank_candidates,
)
from phantom_assets.audit.sign_flip import SignFlipResult, sign_flip_test
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT

DEFAULT_CONFIDENCE = 0.95
HARM_METRIC = "human_harm"
REPORTED_ALPHA0 = 1.0
"""The α0 cell whose held-out profit advantage is reported (not decided on): all agents."""
GATE_METHOD = (
    "held-out sign-flip tests (exact up to 16 seeds) of the fitted stress profit vs the static "
    "engine and of the detector value (fitted - permuted-f profit, same seeds); human harm: "
    "one-sided Student-t upper bound of the held-out mean vs max_human_harm, decided on that "
    "bound (H0: mean >= bound); candidate p = max of the three one-sided p's (intersection-"
    "union); Holm across candidates; certified iff Holm p <= (1 - confidence)/2 and blocking "
    "checks passed; selection by min(profit advantage, detector value) on disjoint selection seeds"
)
UNIT = "episode seed (alpha0 cells and training seeds averaged: they share its random numbers)"

__all__ = [
    "DEFAULT_CONFIDENCE",
    "GATE_METHOD",
    "HARM_METRIC",
    "REPORTED_ALPHA0",
    "GateDecision",
    "holm_adjust",
    "promotion_gate",
]


def holm_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as given), capped at 1."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or np.any((p < 0) | (p > 1)):
        raise ValueError(f"p-values must be a 1-D array in [0, 1], got {p_values!r}")
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((p.size - np.arange(p.size)) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


@dataclass(frozen=True)
class _CandidateTest:
    """One candidate's three held-out tests; `p_value` is their intersection-union p."""

    policy: str
    profit: SignFlipResult
    detector: SignFlipResult
    harm: HarmBound

    @property
    def p_value(self) -> float:
        return max(self.profit.p_value, self.detector.p_value, self.harm.p_value)


@dataclass(frozen=True)
class GateDecision:
    """Verdict of `promotion_gate` with the numbers behind it (the report's `gate`).

    Attributes:
        candidate: The certified candidate, else the top-ranked one.
        static: The undefended static engine it is compared with (§12 calls it `baseline`).
        certified: True iff its checks passed and its Holm-adjusted p <= (1 − confidence)/2.
        reasons: Sentences that say exactly why, with the numbers.
        selection_seeds / test_seeds: The disjoint episode-seed sets.
        profit_vs_static: Held-out paired fitted-profit advantage over the static engine.
        detector_value: Held-out paired fitted − permuted-f profit of the candidate.
        human_harm: Held-out mean harm share, its upper bound and the configured bound.
        p_value: The candidate's Holm-adjusted intersection-union p.
        candidates: The Holm table: every tested candidate with its selection scores and p's.
        profit_at_reported_alpha0: `profit_vs_static` on the α0 = `REPORTED_ALPHA0` cell only
            (reported, not decided on); None when the grid lacks that cell.
    """

    candidate: str
    static: str
    certified: bool
    reasons: tuple[str, ...]
    selection_seeds: tuple[int, ...]
    test_seeds: tuple[int, ...]
    profit_vs_static: SignFlipResult
    detector_value: SignFlipResult
    human_harm: HarmBound
    p_value: float
    candidates: tuple[dict[str, Any], ...]
    profit_at_reported_alpha0: SignFlipResult | None
    metric: str
    confidence: float
    method: str = GATE_METHOD
    unit: str = UNIT

    @property
    def n_pairs(self) -> int:
        """Independent held-out units (episode seeds) per comparison."""
        return self.profit_vs_static.n

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (for `CertificationReport.gate`; non-finite numbers become None).

        `baseline`, `mean_diff`, `ci_low` and `ci_high` are the §12 contract names of the
        reference and of the profit advantage over it.
        """
        profit = self.profit_vs_static.to_dict()
        reported = self.profit_at_reported_alpha0
        return {
            "candidate": self.candidate, "static": self.static, "baseline": self.static,
            "certified": self.certified, "reasons": list(self.reasons), "n_pairs": self.n_pairs,
            "selection_seeds": list(self.selection_seeds), "test_seeds": list(self.test_seeds),
            "mean_diff": profit["mean_diff"], "ci_low": profit["ci_low"],
            "ci_high": profit["ci_high"], "p_value": self.p_value, "metric": self.metric,
            "confidence": self.confidence, "level": _level(self.confidence),
            "method": self.method, "unit": self.unit,
            "comparisons": [
                {"role": "profit vs static engine", "reference": self.static, **profit},
                {"role": "detector value", "reference": f"{self.candidate} with permuted f",
                 **self.detector_value.to_dict()},
            ],
            "human_harm": {"metric": HARM_METRIC, **self.human_harm.to_dict()},
            "candidates": list(self.candidates),
            "profit_at_reported_alpha0": None if reported is None else
                {"alpha0": REPORTED_ALPHA0, "reference": self.static, **reported.to_dict()},
        }  # fmt: skip


def _level(confidence: float) -> float:
    """One-sided level of the decision (each CI bound is a one-sided test at this level)."""
    return round((1.0 - confidence) / 2.0, 12)


def _seeds(values: SeedValues) -> tuple[int, ...]:
    return tuple(np.unique([s for seeds, _ in values.by_arm.values() for s in seeds]).tolist())


def _reasons(
    test: _CandidateTest, static: str, holm_p: float, level: float, failed: Sequence[str]
) -> list[str]:
    """Every condition the candidate failed, with its numbers (certified: the numbers it met)."""
    if not failed and holm_p <= level:
        return [f"certified: all blocking checks passed; on held-out episode seeds "
                f"{test.policy} beats the static engine {static}: {test.profit.describe()}; "
                f"detector value: {test.detector.describe()}; {test.harm.describe()}; "
                f"Holm-adjusted one-sided p = {holm_p:.3g} <= {level:.3g}"]  # fmt: skip
    unmet = []
    for role, result in (("profit vs the static engine " + static, test.profit),
                         ("detector value (fitted - permuted f)", test.detector)):  # fmt: skip
        if result.ci_low <= 0.0:
            unmet.append(f"not certified: {role}: the {result.describe()} does not lie above "
                         f"zero")  # fmt: skip
    if test.harm.n == 0:
        unmet.append("not certified: human harm undefined: no held-out seed has human spend")
    elif not test.harm.within:
        unmet.append(f"not certified: {test.harm.describe()}: the upper bound exceeds it")
    if not unmet and holm_p > level:  # each condition met alone, not after multiplicity
        unmet.append(f"not certified: Holm-adjusted p = {holm_p:.3g} exceeds {level:.3g}")
    checks = [f"not certified: blocking checks failed: {', '.join(failed)}"] if failed else []
    return checks + unmet


def _test_candidate(
    profit: SeedValues,
    harm: SeedValues,
    policy: str,
    static: str,
    max_human_harm: float,
    confidence: float,
    rng: np.random.Generator,
) -> _CandidateTest:
    if (policy, FITTED) not in harm.by_arm:
        raise ValueError(f"no held-out {HARM_METRIC} rows for {policy}")
    return _CandidateTest(
        policy,
        sign_flip_test(profit_advantages(profit, policy, static), confidence=confidence, rng=rng),
        sign_flip_test(detector_values(profit, policy), confidence=confidence, rng=rng),
        harm_bound(harm.by_arm[(policy, FITTED)][1], bound=max_human_harm, confidence=confidence),
    )


def _reported_profit(
    held_out: pl.DataFrame, policy: str, static: str, metric: str, confidence: float,
    rng: np.random.Generator,
) -> SignFlipResult | None:  # fmt: skip
    cell = held_out.filter((pl.col("alpha0") - REPORTED_ALPHA0).abs() < 1e-9)
    if cell.is_empty():
        return None
    diff = profit_advantages(per_seed(cell, metric)[TEST_SPLIT], policy, static)
    return sign_flip_test(diff, confidence=confidence, rng=rng)


def select_candidates(
    stress: pl.DataFrame, static: str, max_human_harm: float, n_candidates: int,
    metric: str = "profit",
) -> pl.DataFrame:  # fmt: skip
    """The top `n_candidates` of `rank_candidates` on the selection seeds alone (profit advantage,
    detector value, and the harm bound the gate will test), as the gate and the audit asset see
    them."""
    selection = per_seed(stress, metric)[SELECTION_SPLIT]
    fitted = stress.filter((pl.col("split") == SELECTION_SPLIT) & (pl.col("detector") == FITTED))
    harm = per_seed(fitted, HARM_METRIC)[SELECTION_SPLIT]
    return rank_candidates(selection, static, harm, max_human_harm).head(n_candidates)


def promotion_gate(
    stress: pl.DataFrame,
    *,
    static: str,
    failed_checks: Mapping[str, Sequence[str]],
    rng: np.random.Generator,
    max_human_harm: float,
    metric: str = "profit",
    n_candidates: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
) -> GateDecision:
    """Select on the selection seeds, test on the held-out seeds, decide (module docstring).

    Call `select_candidates(stress, static, max_human_harm, n_candidates, metric)` first to
    learn which candidates' lineages must be checked.

    Args:
        stress: Stress rows of every policy: `policy, split (selection|test), detector
            (fitted|permuted), seed, alpha0, <metric>, human_harm`, optionally `train_seed`.
        static: Policy key of the undefended static engine.
        failed_checks: Per tested candidate, the failed blocking checks in the lineage of the
            candidate and the static engine (empty = all passed).
        rng: Draws random sign flips, needed only above `sign_flip.EXACT_MAX_N` held-out seeds.
        max_human_harm: Bound on the held-out mean human-harm share.
        metric: The pre-registered stress metric (higher is better).
        n_candidates: How many top-ranked candidates are tested (Holm-corrected).
        confidence: Two-sided confidence of each CI; the one-sided level of the decision is
            (1 − confidence)/2.

    Raises:
        ValueError: if a split is missing, the seed sets overlap, there is no candidate, a
            tested candidate has no entry in `failed_checks`, or the pairs do not line up.
    """
    values = per_seed(stress, metric)
    selection = values[SELECTION_SPLIT]
    selection_seeds, test_seeds = _seeds(selection), _seeds(values[TEST_SPLIT])
    if not selection_seeds or not test_seeds:
        raise ValueError("stress rows need both a 'selection' and a 'test' split of seeds")
    if set(selection_seeds) & set(test_seeds):
        raise ValueError(f"selection and test seeds overlap: "
                         f"{sorted(set(selection_seeds) & set(test_seeds))}")  # fmt: skip
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    ranked = select_candidates(stress, static, max_human_harm, n_candidates, metric)
    unknown = [k for k in ranked["policy"].to_list() if k not in failed_checks]
    if unknown:
        raise ValueError(f"no check results given for tested candidates {unknown}")
    # Held-out fitted rows of the tested policies: all the harm and reported numbers need.
    held_out = stress.filter((pl.col("split") == TEST_SPLIT) & (pl.col("detector") == FITTED)
                             & pl.col("policy").is_in([*ranked["policy"], static]))  # fmt: skip
    harm = per_seed(held_out, HARM_METRIC)[TEST_SPLIT]
    tested = [_test_candidate(values[TEST_SPLIT], harm, policy, static, max_human_harm,
                              confidence, rng) for policy in ranked["policy"]]  # fmt: skip
    holm = holm_adjust([t.p_value for t in tested])
    level = _level(confidence)
    passing = [i for i, t in enumerate(tested) if holm[i] <= level and not failed_checks[t.policy]]
    index = passing[0] if passing else 0
    chosen, chosen_holm = tested[index], float(holm[index])
    table = tuple(
        {**row, "p_profit": t.profit.p_value, "p_detector": t.detector.p_value,
         "p_harm": t.harm.p_value, "p_value": t.p_value, "p_holm": float(h),
         "failed_checks": list(failed_checks[t.policy])}
        for row, t, h in zip(ranked.iter_rows(named=True), tested, holm, strict=True)
    )  # fmt: skip
    return GateDecision(
        candidate=chosen.policy, static=static, certified=bool(passing),
        reasons=tuple(_reasons(chosen, static, chosen_holm, level,
                               list(failed_checks[chosen.policy]))),
        selection_seeds=selection_seeds, test_seeds=test_seeds, profit_vs_static=chosen.profit,
        detector_value=chosen.detector, human_harm=chosen.harm, p_value=chosen_holm,
        candidates=table, metric=metric, confidence=confidence,
        profit_at_reported_alpha0=_reported_profit(held_out, chosen.policy, static, metric,
                                                   confidence, rng),
    )  # fmt: skip
