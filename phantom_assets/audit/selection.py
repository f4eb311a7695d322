"""The gate's selection (docs/method.md#promotion-gate): candidates ranked on the selection seeds
only.

Every policy but the references (the tuned-static baseline and the static engine) is scored by
the smaller of its profit advantage over the baseline and its detector value beyond engagement,
each the worst case over the stress band (band α × evasion share θ) of the paired difference
(`pairs.paired_stress`); those whose stress human harm is within the bound rank first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.audit.pairs import (
    FITTED,
    PERMUTED,
    PairedStress,
    StressCube,
    paired_stress,
    stress_cubes,
)

HARM_METRIC = "human_harm"

__all__ = [
    "HARM_METRIC",
    "Comparisons",
    "comparisons",
    "finite",
    "rank_candidates",
    "select_candidates",
]


@dataclass(frozen=True)
class Comparisons:
    """One candidate's three paired stress comparisons (selection and held-out values)."""

    profit: PairedStress
    detector: PairedStress
    harm: PairedStress


def comparisons(profit: StressCube, harm: StressCube, policy: str, baseline: str) -> Comparisons:
    return Comparisons(
        paired_stress(profit, (policy, FITTED), (baseline, FITTED)),
        paired_stress(profit, (policy, FITTED), (policy, PERMUTED)),
        paired_stress(harm, (policy, FITTED), worst="max"),
    )


def finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


def select_candidates(
    stress: pl.DataFrame,
    baseline: str,
    references: Sequence[str],
    max_human_harm: float,
    n_candidates: int,
    metric: str = "profit",
) -> pl.DataFrame:
    """Every policy but the `references` (the baseline and the static engine), ranked on the
    selection seeds by `score` = min(profit advantage over `baseline`, detector value), those
    whose stress harm is within the bound first; the top `n_candidates`.

    Returns:
        `policy, profit_advantage, detector_value, score, human_harm, harm_within`, best first.

    Raises:
        ValueError: without a baseline or a candidate.
    """
    cubes = stress_cubes(stress, metric, HARM_METRIC)
    return rank_candidates(*cubes, baseline, references, max_human_harm, n_candidates)


def rank_candidates(
    profit: StressCube,
    harm: StressCube,
    baseline: str,
    references: Sequence[str],
    max_human_harm: float,
    n_candidates: int,
) -> pl.DataFrame:
    policies = profit.policies
    if baseline not in policies:
        raise ValueError(f"the baseline {baseline!r} has no stress rows")
    candidates = [p for p in policies if p not in {baseline, *references}]
    if not candidates:
        raise ValueError(f"no candidate policy besides {[baseline, *references]}")
    rows = []
    for policy in candidates:  # the handful of policies of a store
        pairs = comparisons(profit, harm, policy, baseline)
        advantage, value = pairs.profit.selection.mean(), pairs.detector.selection.mean()
        harms = finite(pairs.harm.selection)
        mean_harm = float(harms.mean()) if harms.size else math.nan
        rows.append(
            (
                policy,
                float(advantage),
                float(value),
                float(min(advantage, value)),
                mean_harm,
                not mean_harm > max_human_harm,
            )
        )
    ranked = pl.DataFrame(
        rows,
        orient="row",
        schema=[
            "policy",
            "profit_advantage",
            "detector_value",
            "score",
            "human_harm",
            "harm_within",
        ],
    )
    return ranked.sort(
        ["harm_within", "score", "policy"], descending=[True, True, False], nulls_last=True
    ).head(n_candidates)
