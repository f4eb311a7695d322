"""The promotion gate (docs/method.md#promotion-gate): what is certified is the agent-aware defence
-- detection, not a price increase.

1. *Selection* on the selection episode seeds only (`selection.rank_candidates`); the best
   `n_candidates` go forward.
2. *Test* (held-out seeds, never used to select or to choose a band cell): per candidate one
   value per seed, both arms at the band cell -- band α × evasion share θ of the declared band
   (agents that adapt to the detector) -- chosen on the selection seeds, of (1) the profit
   advantage over the baseline and (2) the detector value, each a one-sided test of H0:
   mean <= 0, and (3) the total human harm against the best undefended response, H0: mean >=
   `max_human_harm` -- each the larger p of `studentized.mean_test`, which holds its level under
   skew and zero inflation from 24 seeds, and the store-sample t test (`store_sample`: every
   seed is a replicate of the store's sample, so its interval covers the store's population
   value).
   The candidate's p is the largest of the three (intersection-union); candidates' p's are
   Holm-adjusted.
3. *Decision*: certified iff every blocking check passed, at least `MIN_TEST_SEEDS` held-out
   seeds were used, and the Holm-adjusted p <= (1 − confidence)/2. Reported, not decided on:
   the advantage over the static engine (the store's own pricing), the detector's human
   false-positive rate at α = 0, the humans' surplus change and the share of them quoted up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.audit import selection
from phantom_assets.audit.pairs import FITTED, StressCube, paired_stress, stress_cubes
from phantom_assets.audit.reasons import decision_reasons
from phantom_assets.audit.selection import HARM_METRIC, Comparisons, comparisons, finite
from phantom_assets.audit.store_sample import store_sample_test
from phantom_assets.audit.studentized import MIN_CALIBRATED_N, MeanTestResult

DEFAULT_CONFIDENCE = 0.95
MIN_TEST_SEEDS = MIN_CALIBRATED_N
"""The gate certifies only from as many held-out seeds as the mean test is calibrated for."""
REPORTED = ("false_positive_rate", "human_surplus_change", "human_quoted_up")
"""The candidate's held-out means reported beside the decision (fitted detector, harm's cells)."""
GATE_METHOD = (
    "one-sided tests (the larger p of a studentized bootstrap mean test with a skewness allowance "
    "and a store-sample t test, each seed a replicate of the store's sample) on held-out episode "
    "seeds of the profit advantage over the best undefended response and of the detector value "
    "(fitted f - f permuted within engagement strata), each the worst case over the stress band "
    "(alpha0 +- r x the declared evasion band of agents that adapt to the detector, theta in "
    "[0, band]) of the paired difference (the cell chosen on the selection seeds), and of the "
    "total human harm vs that response (H0: mean >= max_human_harm); candidate p = max of the "
    "three (intersection-union); Holm across candidates; certified iff Holm p <= "
    f"(1 - confidence)/2, >= {MIN_TEST_SEEDS} held-out seeds and every blocking check passed; "
    "candidates selected on disjoint selection seeds by min(profit advantage, detector value)"
)
UNIT = "episode seed (alpha0 cells and training seeds averaged: they share its random numbers)"
COMPARISON_ROLES = (
    "profit vs the best undefended response",
    "detector value beyond engagement",
    "total human harm",
)

__all__ = [
    "DEFAULT_CONFIDENCE",
    "GATE_METHOD",
    "MIN_TEST_SEEDS",
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
    policy: str
    comparisons: Comparisons
    profit: MeanTestResult
    detector: MeanTestResult
    harm: MeanTestResult | None

    @property
    def tests(self) -> tuple[MeanTestResult | None, ...]:
        return self.profit, self.detector, self.harm

    @property
    def p_value(self) -> float:
        return max(1.0 if t is None else t.p_value for t in self.tests)


def _test_candidate(
    profit: StressCube,
    harm: StressCube,
    policy: str,
    baseline: str,
    bound: float,
    confidence: float,
    rng: np.random.Generator,
) -> _CandidateTest:
    pairs = comparisons(profit, harm, policy, baseline)
    harms = finite(pairs.harm.test)
    test = {"rng": rng, "confidence": confidence}
    return _CandidateTest(
        policy,
        pairs,
        store_sample_test(pairs.profit.test, **test),
        store_sample_test(pairs.detector.test, **test),
        store_sample_test(harms, threshold=bound, alternative="less", **test)
        if harms.size >= 2
        else None,
    )


@dataclass(frozen=True)
class GateDecision:
    """Verdict of `promotion_gate` with the numbers behind it (the report's `gate`).

    Attributes:
        candidate: The certified candidate, else the top-ranked one.
        baseline: The best undefended response it is compared with (`baseline` in
            docs/architecture.md#column-contracts).
        static: The static engine (the store's own pricing), a reported reference.
        certified: True iff its checks passed and its Holm-adjusted p <= (1 − confidence)/2.
        reasons: Sentences that say exactly why, with the numbers.
        selection_seeds / test_seeds: The disjoint episode-seed sets.
        tests: The candidate's three held-out tests (profit, detector value, harm; harm None
            when no seed had human spend).
        compared_at: Per comparison, the (α, θ) of each α0 cell both arms were compared at.
        evasion_thetas: The evasion shares θ of the stress band (agents adapting to the
            detector; 0: as logged): every comparison is the worst case over them.
        p_value: The candidate's Holm-adjusted intersection-union p.
        candidates: The Holm table: every tested candidate with its selection scores and p's.
        reported: Held-out numbers reported, not decided on (vs the static engine, FPR, ...).
    """

    candidate: str
    baseline: str
    static: str
    certified: bool
    reasons: tuple[str, ...]
    selection_seeds: tuple[int, ...]
    test_seeds: tuple[int, ...]
    tests: tuple[MeanTestResult | None, ...]
    compared_at: tuple[dict[str, object], ...]
    evasion_thetas: tuple[float, ...]
    p_value: float
    candidates: tuple[dict[str, Any], ...]
    reported: dict[str, Any]
    metric: str
    confidence: float
    method: str = GATE_METHOD
    unit: str = UNIT

    @property
    def n_pairs(self) -> int:
        """Independent held-out units (episode seeds) per comparison."""
        return self.tests[0].n if self.tests[0] is not None else 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (for `CertificationReport.gate`; non-finite numbers become None).
        `baseline`, `mean_diff`, `ci_low`, `ci_high` are the contract names
        (docs/architecture.md#column-contracts) of the best undefended response and of the profit
        advantage over it."""
        profit = self.tests[0].to_dict() if self.tests[0] else {}
        comparisons = [
            {"role": role, **(test.to_dict() if test else {"n": 0}), **where}
            for role, test, where in zip(
                COMPARISON_ROLES, self.tests, self.compared_at, strict=True
            )
        ]
        return {
            "candidate": self.candidate,
            "baseline": self.baseline,
            "static": self.static,
            "certified": self.certified,
            "reasons": list(self.reasons),
            "n_pairs": self.n_pairs,
            "selection_seeds": list(self.selection_seeds),
            "test_seeds": list(self.test_seeds),
            "mean_diff": profit.get("mean"),
            "ci_low": profit.get("ci_low"),
            "ci_high": profit.get("ci_high"),
            "p_value": self.p_value,
            "metric": self.metric,
            "confidence": self.confidence,
            "level": _level(self.confidence),
            "method": self.method,
            "unit": self.unit,
            "comparisons": comparisons,
            "evasion_thetas": list(self.evasion_thetas),
            "candidates": list(self.candidates),
            "reported": self.reported,
        }


def _level(confidence: float) -> float:
    """One-sided level of the decision (each CI bound is a one-sided test at this level)."""
    return round((1.0 - confidence) / 2.0, 12)


def _reported(
    stress: pl.DataFrame,
    profit: StressCube,
    test: _CandidateTest,
    static: str,
    confidence: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Held-out numbers of the candidate reported beside the decision: its profit advantage over
    the static engine (the worst case over the band, like the decided ones) and, at the α of the
    harm comparison's cells, the `REPORTED` metrics of its fitted-detector arm."""
    out: dict[str, Any] = {}
    if static in profit.policies and static != test.policy:
        versus = paired_stress(profit, (test.policy, FITTED), (static, FITTED))
        tested = store_sample_test(versus.test, rng=rng, confidence=confidence)
        out["profit_vs_static"] = {"reference": static, **versus.to_dict(), **tested.to_dict()}
    names = [n for n in REPORTED if n in stress.columns]
    for name, cube in zip(names, stress_cubes(stress, *names) if names else (), strict=True):
        values = cube.arm((test.policy, FITTED))[:, ~cube.is_selection]
        out[name] = _mean_or_none(values[cube.at(test.comparisons.harm.cells)])
        if name == "false_positive_rate":  # humans only: the detector's false-positive rate
            out["false_positive_rate_at_alpha_0"] = _mean_or_none(values[cube.alpha == 0.0])
    return out


def _mean_or_none(values: np.ndarray) -> float | None:
    kept = finite(values.ravel())
    return float(kept.mean()) if kept.size else None


def promotion_gate(
    stress: pl.DataFrame,
    *,
    baseline: str,
    static: str,
    failed_checks: Mapping[str, Sequence[str]],
    rng: np.random.Generator,
    max_human_harm: float,
    metric: str = "profit",
    n_candidates: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
) -> GateDecision:
    """Select on the selection seeds, test on the held-out seeds, decide (module docstring).

    Call `select_candidates` first to learn which candidates' lineages must be checked.

    Args:
        stress: Stress rows of every policy: `policy, split (selection|test), detector
            (fitted|permuted), alpha0, alpha (band), seed, <metric>, human_harm`, optionally
            `train_seed` and the reported metrics.
        baseline: Policy key of the best undefended response (the tuned-static tier).
        static: Policy key of the static engine (reported reference).
        failed_checks: Per tested candidate, the failed blocking checks in the lineage of the
            candidate and the baseline (empty = all passed).
        rng: Draws the mean tests' resamples.
        max_human_harm: Bound on the held-out mean total human harm.
        metric: The pre-registered stress metric (higher is better).
        n_candidates: How many top-ranked candidates are tested (Holm-corrected).
        confidence: Two-sided confidence of each interval; the one-sided level of the decision is
            (1 − confidence)/2.

    Raises:
        ValueError: if a split is missing, the seed sets overlap, there is no candidate, a
            tested candidate has no entry in `failed_checks`, or the pairs do not line up.
    """
    if n_candidates < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    profit, harm = stress_cubes(stress, metric, HARM_METRIC)
    if profit.is_selection.all() or not profit.is_selection.any():
        raise ValueError("stress rows need both a 'selection' and a 'test' split of seeds")
    ranked = selection.rank_candidates(
        profit, harm, baseline, [static], max_human_harm, n_candidates
    )
    unknown = [k for k in ranked["policy"].to_list() if k not in failed_checks]
    if unknown:
        raise ValueError(f"no check results given for tested candidates {unknown}")
    tested = [
        _test_candidate(profit, harm, policy, baseline, max_human_harm, confidence, rng)
        for policy in ranked["policy"]
    ]
    first = tested[0].comparisons.profit
    holm = holm_adjust([t.p_value for t in tested])
    level, n_test = _level(confidence), len(first.test_seeds)
    passing = [
        i
        for i, t in enumerate(tested)
        if holm[i] <= level and not failed_checks[t.policy] and n_test >= MIN_TEST_SEEDS
    ]
    index = passing[0] if passing else 0
    chosen, chosen_holm = tested[index], float(holm[index])
    table = tuple(
        {
            **row,
            "p_profit": t.profit.p_value,
            "p_detector": t.detector.p_value,
            "p_harm": None if t.harm is None else t.harm.p_value,
            "p_value": t.p_value,
            "p_holm": float(h),
            "failed_checks": list(failed_checks[t.policy]),
        }
        for row, t, h in zip(ranked.iter_rows(named=True), tested, holm, strict=True)
    )
    pairs = chosen.comparisons
    return GateDecision(
        candidate=chosen.policy,
        baseline=baseline,
        static=static,
        certified=bool(passing),
        reasons=tuple(
            decision_reasons(
                chosen.policy,
                chosen.tests,
                baseline,
                chosen_holm,
                level,
                list(failed_checks[chosen.policy]),
                n_test,
            )
        ),
        selection_seeds=first.selection_seeds,
        test_seeds=first.test_seeds,
        tests=chosen.tests,
        compared_at=tuple(p.to_dict() for p in (pairs.profit, pairs.detector, pairs.harm)),
        evasion_thetas=tuple(np.unique(profit.theta).tolist()),
        p_value=chosen_holm,
        candidates=table,
        metric=metric,
        confidence=confidence,
        reported=_reported(stress, profit, chosen, static, confidence, rng),
    )
