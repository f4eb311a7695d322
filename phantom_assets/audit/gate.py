"""The promotion gate (DESIGN §8): pre-registered selection, held-out test, Holm across candidates.

1. *Selection* (selection episode seeds only): every robust policy with a baseline twin is scored
   by the quantity the gate tests -- the smaller of its mean stress advantage over its twin and
   over the undefended static engine -- and the best `n_candidates` go forward.
2. *Test* (held-out episode seeds, never used for selection or for choosing the stress α): per
   candidate, paired differences against the twin and against the static engine, one pair per
   held-out episode seed (training seeds and α0 cells averaged within the seed first: they share
   the seed's common random numbers, so they are not independent units). Each comparison is an
   exact sign-flip test (`sign_flip`); a candidate's p is the larger of its two p-values (it must
   beat both: an intersection-union test needs no correction), and the candidates' p-values are
   Holm-adjusted.
3. *Decision*: certified iff every blocking check passed and a candidate's Holm-adjusted p is at
   most (1 − confidence)/2 -- equivalently both of its CIs lie above zero when one candidate is
   tested. The report names the best certified candidate, else the top-ranked one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.audit.pairs import SeedValues, paired_differences, per_seed, rank_candidates
from phantom_assets.audit.sign_flip import SignFlipResult, sign_flip_test
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT

DEFAULT_CONFIDENCE = 0.95
GATE_METHOD = (
    "held-out exact sign-flip test per comparison (pairs = held-out episode seeds, training seeds "
    "and alpha0 cells averaged within a seed); candidate p = max over (baseline twin, static "
    "engine); Holm across candidates; selection on disjoint selection seeds"
)
UNIT = "episode seed (alpha0 cells and training seeds averaged: they share its random numbers)"

__all__ = ["DEFAULT_CONFIDENCE", "GATE_METHOD", "GateDecision", "holm_adjust", "promotion_gate"]


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
class GateDecision:
    """Verdict of `promotion_gate` with the numbers behind it (the report's `gate`).

    Attributes:
        candidate: The certified candidate, else the top-ranked one.
        baseline: Its baseline-mode twin.
        static: The undefended static engine it is also compared with.
        certified: True iff its checks passed and its Holm-adjusted p <= (1 − confidence)/2.
        reasons: Sentences that say exactly why.
        n_pairs: Independent held-out units (episode seeds) per comparison.
        selection_seeds / test_seeds: The disjoint episode-seed sets.
        ci_low / ci_high / mean_diff: Candidate − baseline twin on the held-out seeds.
        p_value: The candidate's Holm-adjusted intersection-union p.
        comparisons: Per reference: `SignFlipResult.to_dict()` plus `reference`.
        candidates: Every tested candidate with its selection score, p and Holm p.
    """

    candidate: str
    baseline: str
    static: str
    certified: bool
    reasons: tuple[str, ...]
    n_pairs: int
    selection_seeds: tuple[int, ...]
    test_seeds: tuple[int, ...]
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    metric: str
    confidence: float
    method: str = GATE_METHOD
    unit: str = UNIT
    comparisons: tuple[dict[str, Any], ...] = ()
    candidates: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (for `CertificationReport.gate`; infinite bounds become None)."""
        bounds = {k: (v if np.isfinite(v) else None) for k, v in
                  {"ci_low": self.ci_low, "ci_high": self.ci_high}.items()}  # fmt: skip
        return {
            "candidate": self.candidate, "baseline": self.baseline, "static": self.static,
            "certified": self.certified, "reasons": list(self.reasons), "n_pairs": self.n_pairs,
            "selection_seeds": list(self.selection_seeds), "test_seeds": list(self.test_seeds),
            "mean_diff": self.mean_diff, **bounds, "p_value": self.p_value,
            "metric": self.metric, "confidence": self.confidence, "method": self.method,
            "unit": self.unit, "comparisons": list(self.comparisons),
            "candidates": list(self.candidates),
        }  # fmt: skip


def _seeds(values: SeedValues) -> tuple[int, ...]:
    return tuple(sorted({int(x) for seeds, _ in values.by_policy.values() for x in seeds}))


def _test(
    values: SeedValues,
    candidate: str,
    reference: str,
    confidence: float,
    rng: np.random.Generator,
) -> SignFlipResult:
    diff = paired_differences(values, candidate, reference)
    return sign_flip_test(diff, confidence=confidence, rng=rng)


def _reasons(
    decision_p: float, tests: dict[str, SignFlipResult], level: float, failed: Sequence[str]
) -> list[str]:
    reasons = []
    if failed:
        reasons.append(f"not certified: blocking checks failed: {', '.join(failed)}")
    for role, result in tests.items():
        interval = f"[{result.ci_low:.4g}, {result.ci_high:.4g}]"
        if result.ci_low <= 0.0:
            reasons.append(
                f"not certified: vs the {role}, the {result.confidence:.0%} CI of the held-out "
                f"paired difference {interval} does not lie above zero (n = {result.n} seeds, "
                f"one-sided p = {result.p_value:.3g})"
            )
    if decision_p > level and not reasons:
        reasons.append(f"not certified: Holm-adjusted p = {decision_p:.3g} exceeds {level:.3g}")
    return reasons


def promotion_gate(
    stress: pl.DataFrame,
    *,
    static: str,
    failed_checks: Mapping[str, Sequence[str]],
    rng: np.random.Generator,
    metric: str = "reward",
    n_candidates: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
) -> GateDecision:
    """Select on the selection seeds, test on the held-out seeds, decide (module docstring).

    Call `rank_candidates(per_seed(stress, metric)["selection"], static).head(n_candidates)`
    first to learn which candidates' lineages must be checked.

    Args:
        stress: Stress rows of every policy: `policy, split (selection|test), seed, alpha0,
            <metric>` and optionally `train_seed`.
        static: Policy key of the undefended static engine.
        failed_checks: Per tested candidate, the failed blocking checks in the lineage of the
            candidate, its twin and the static engine (empty = all passed).
        rng: Draws random sign flips, needed only above `sign_flip.EXACT_MAX_N` held-out seeds.
        metric: The pre-registered stress metric (higher is better).
        n_candidates: How many top-ranked candidates are tested (Holm-corrected).
        confidence: Two-sided confidence of each comparison's CI; the one-sided level of the
            decision is (1 − confidence)/2.

    Raises:
        ValueError: if a split is missing, the seed sets overlap, no robust policy has a twin,
            a tested candidate has no entry in `failed_checks`, or the pairs do not line up.
    """
    values = per_seed(stress, metric)
    selection, test = values[SELECTION_SPLIT], values[TEST_SPLIT]
    selection_seeds, test_seeds = _seeds(selection), _seeds(test)
    if not selection_seeds or not test_seeds:
        raise ValueError("stress rows need both a 'selection' and a 'test' split of seeds")
    if set(selection_seeds) & set(test_seeds):
        raise ValueError(f"selection and test seeds overlap: "
                         f"{sorted(set(selection_seeds) & set(test_seeds))}")  # fmt: skip
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    ranked = rank_candidates(selection, static).head(n_candidates)
    unknown = [k for k in ranked["policy"].to_list() if k not in failed_checks]
    if unknown:
        raise ValueError(f"no check results given for tested candidates {unknown}")
    tested = []
    for row in ranked.iter_rows(named=True):  # a handful of candidates
        tests = {
            role: _test(test, row["policy"], ref, confidence, rng)
            for role, ref in (("baseline twin", row["twin"]), ("static engine", static))
        }
        tested.append((row, tests, max(t.p_value for t in tests.values())))
    holm = holm_adjust([p for *_, p in tested])
    level = (1.0 - confidence) / 2.0
    clean = [not failed_checks[row["policy"]] for row, *_ in tested]
    passing = [i for i, p in enumerate(holm) if p <= level and clean[i]]
    chosen = passing[0] if passing else 0
    row, tests, _ = tested[chosen]
    certified = bool(passing)
    twin_test = tests["baseline twin"]
    if certified:
        reasons = [
            f"certified: all blocking checks passed; on {twin_test.n} held-out episode seeds "
            f"{row['policy']} beats its baseline twin by {twin_test.mean_diff:.4g} "
            f"({confidence:.0%} CI [{twin_test.ci_low:.4g}, {twin_test.ci_high:.4g}]) and the "
            f"static engine by {tests['static engine'].mean_diff:.4g}; Holm-adjusted one-sided "
            f"p = {holm[chosen]:.3g} <= {level:.3g}"
        ]
    else:
        reasons = _reasons(float(holm[chosen]), tests, level, failed_checks[row["policy"]])
    return GateDecision(
        candidate=row["policy"], baseline=row["twin"], static=static, certified=certified,
        reasons=tuple(reasons), n_pairs=twin_test.n, selection_seeds=selection_seeds,
        test_seeds=test_seeds, mean_diff=twin_test.mean_diff, ci_low=twin_test.ci_low,
        ci_high=twin_test.ci_high, p_value=float(holm[chosen]), metric=metric,
        confidence=confidence,
        comparisons=tuple({"reference": ref, "role": role, **t.to_dict()} for role, t, ref in
                          zip(tests, tests.values(), (row["twin"], static), strict=True)),
        candidates=tuple({"policy": r["policy"], "selection_score": r["score"], "p_value": p,
                          "p_holm": float(h), "failed_checks": list(failed_checks[r["policy"]])}
                         for (r, _, p), h in zip(tested, holm, strict=True)),
    )  # fmt: skip
