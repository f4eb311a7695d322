"""Stress rows → one value per (policy, detector, episode seed): the gate's unit (DESIGN §8).

Stress rows exist per (policy, split, detector, α0, episode seed, training seed). Training seeds
are replicates of one policy and α0 cells reuse the episode seed's common random numbers, so
neither is an independent unit: both are averaged within the seed before anything is paired.
Pairing is then one-to-one on the seed (a many-to-many join on seed alone turned 8 seeds into
200 "pairs"). The detector dimension gives each policy two arms, `fitted` and `permuted` (the
ablation with uninformative f on the same random numbers), so the detector value is a paired
difference too: fitted − permuted of one policy on the same seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.constants import STRESS_SPLITS
from phantom_assets.market.engine import DETECTOR_MODES

FITTED, PERMUTED = DETECTOR_MODES
Arm = tuple[str, str]
"""(policy key, detector mode): one evaluated arm of the stress table."""
ARM_COLUMNS = ("split", "policy", "detector")

__all__ = [
    "FITTED",
    "PERMUTED",
    "Arm",
    "SeedValues",
    "detector_values",
    "paired_differences",
    "per_seed",
    "profit_advantages",
    "rank_candidates",
]


@dataclass(frozen=True)
class SeedValues:
    """One split's per-seed values of one metric: `by_arm[(policy, detector)] = (seeds, values)`,
    seeds sorted; NaN where no cell of the seed defines the metric."""

    split: str
    metric: str
    by_arm: dict[Arm, tuple[np.ndarray, np.ndarray]]

    def policies(self) -> list[str]:
        """Every policy key with at least one arm, sorted."""
        return sorted({policy for policy, _ in self.by_arm})


def per_seed(stress: pl.DataFrame, metric: str) -> dict[str, SeedValues]:
    """Per split, `metric` averaged over training seeds, then over α0 cells, per arm and seed.

    Undefined values (NaN: a ratio without denominator, e.g. the human-harm share of a cell
    without human spend) are left out of both means.

    Raises:
        ValueError: for missing columns, no rows, a split outside `STRESS_SPLITS`, a detector
            outside `DETECTOR_MODES`, or rows off their worst α (stress rows are worst-α rows).
    """
    missing = {*ARM_COLUMNS, "seed", "alpha0", metric} - set(stress.columns)
    if missing:
        raise ValueError(f"stress rows lack columns {sorted(missing)}")
    if stress.is_empty():
        raise ValueError("no stress rows: materialize policy_evaluations first")
    if {"alpha", "worst_alpha"} <= set(stress.columns):
        off = stress.filter(pl.col("alpha") != pl.col("worst_alpha")).height
        if off:
            raise ValueError(f"{off} stress rows are not at their worst alpha; the gate tests "
                             "the worst case only (evaluation/protocol.py)")  # fmt: skip
    out = {split: SeedValues(split, metric, {}) for split in STRESS_SPLITS}
    for (split, policy, detector), seeds, values in _arm_seed_means(stress, metric):
        if split not in STRESS_SPLITS or detector not in DETECTOR_MODES:
            raise ValueError(f"unknown stress split or detector ({split!r}, {detector!r}); "
                             f"expected {STRESS_SPLITS} and {DETECTOR_MODES}")  # fmt: skip
        out[split].by_arm[(policy, detector)] = (seeds, values)
    return out


def _arm_seed_means(
    stress: pl.DataFrame, metric: str
) -> list[tuple[tuple[str, str, str], np.ndarray, np.ndarray]]:
    """(split, policy, detector), its sorted seeds and their two-stage means, per arm."""
    codes = {name: f"_{name}" for name in ARM_COLUMNS}  # dense ranks: integer keys to sort on
    ranks = [pl.col(name).rank("dense").alias(code) for name, code in codes.items()]
    frame = stress.select(*ARM_COLUMNS, "seed", "alpha0", pl.col(metric).cast(pl.Float64), *ranks)
    keys = np.column_stack([frame[name].to_numpy() for name in (*codes.values(), "seed")])
    alpha0 = frame["alpha0"].to_numpy()
    # numpy reductions over a stable sort (tied rows, the training seeds, keep their order):
    # polars' parallel group_by may sum in a varying order, and the gate must give
    # bit-identical numbers for the same table.
    order = np.lexsort((alpha0, *keys.T[::-1]))
    keys, alpha0 = keys[order], alpha0[order]
    new_arm = _changes(keys[:, :3])
    new_unit = new_arm | _changes(keys[:, 3:])
    cell_start = np.flatnonzero(new_unit | _changes(alpha0[:, None]))
    unit_start = np.flatnonzero(new_unit[cell_start])
    values = _run_means(_run_means(frame[metric].to_numpy()[order], cell_start), unit_start)
    unit_rows = cell_start[unit_start]
    arm_start = np.flatnonzero(new_arm[unit_rows])
    labels = frame.select(ARM_COLUMNS)[order[unit_rows[arm_start]]].rows()
    bounds = zip(arm_start, np.r_[arm_start[1:], unit_rows.size], strict=True)
    seeds = keys[unit_rows, 3]
    return [(label, seeds[a:b], values[a:b]) for label, (a, b) in zip(labels, bounds, strict=True)]


def _changes(keys: np.ndarray) -> np.ndarray:
    """True where a sorted (n, k) key row differs from the one before (and at row 0)."""
    return np.r_[True, np.any(keys[1:] != keys[:-1], axis=1)]


def _run_means(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Mean of the finite values of each run (runs begin at `starts`); NaN for a run without."""
    finite = np.isfinite(values)
    sums = np.add.reduceat(np.where(finite, values, 0.0), starts)
    counts = np.add.reduceat(finite.astype(np.int64), starts)
    return np.divide(sums, counts, out=np.full(sums.shape, np.nan), where=counts > 0)


def paired_differences(values: SeedValues, first: Arm, second: Arm) -> np.ndarray:
    """first − second per episode seed of the split (one value per seed, by seed).

    Raises:
        ValueError: if either arm has no rows, or their seed sets differ (the protocol gives
            every policy and detector the same seeds; a mismatch means broken evaluations).
    """
    absent = [arm for arm in (first, second) if arm not in values.by_arm]
    if absent:
        raise ValueError(f"no {values.split} stress rows for (policy, detector) {absent}")
    (seeds_1, value_1), (seeds_2, value_2) = values.by_arm[first], values.by_arm[second]
    if not np.array_equal(seeds_1, seeds_2):
        raise ValueError(
            f"{first} and {second} were stress-tested on different {values.split} seeds: "
            f"{seeds_1.tolist()} vs {seeds_2.tolist()}"
        )
    return value_1 - value_2


def profit_advantages(values: SeedValues, candidate: str, static: str) -> np.ndarray:
    """Candidate − static engine per seed, both with the fitted detector."""
    return paired_differences(values, (candidate, FITTED), (static, FITTED))


def detector_values(values: SeedValues, candidate: str) -> np.ndarray:
    """Detector value per seed: the candidate with fitted f − with permuted f (same draws)."""
    return paired_differences(values, (candidate, FITTED), (candidate, PERMUTED))


def rank_candidates(
    selection: SeedValues,
    static: str,
    harm: SeedValues | None = None,
    max_human_harm: float = np.inf,
) -> pl.DataFrame:
    """Every policy but `static`, ranked on the selection seeds by the quantity the gate tests:
    `score` = min(mean profit advantage over `static`, mean detector value) -- among the policies
    whose mean human-harm share on the selection seeds (`harm`, fitted arm) is within
    `max_human_harm` first, since the gate also requires that; the others after them.

    Returns:
        `policy, profit_advantage, detector_value, score, human_harm, harm_within`, best first
        (ties by policy key, so the order is deterministic).

    Raises:
        ValueError: if `static` has no fitted rows, no other policy is present, or a policy
            lacks an arm or a seed.
    """
    if (static, FITTED) not in selection.by_arm:
        raise ValueError(f"the static engine {static!r} has no {selection.split} stress rows")
    candidates = [key for key in selection.policies() if key != static]
    if not candidates:
        raise ValueError(f"no candidate policy besides the static engine {static!r}")
    advantage = np.array([profit_advantages(selection, key, static).mean() for key in candidates])
    detector = np.array([detector_values(selection, key).mean() for key in candidates])
    harms = np.array([
        np.mean(harm.by_arm[(key, FITTED)][1]) if harm and (key, FITTED) in harm.by_arm
        else np.nan for key in candidates
    ])  # fmt: skip
    within = ~(harms > max_human_harm)  # undefined harm (no humans) does not disqualify
    ranked = pl.DataFrame(
        {"policy": candidates, "profit_advantage": advantage, "detector_value": detector,
         "score": np.minimum(advantage, detector), "human_harm": harms, "harm_within": within},
        nan_to_null=True,  # an undefined score ranks last, never first
    )  # fmt: skip
    return ranked.sort(["harm_within", "score", "policy"], descending=[True, True, False],
                       nulls_last=True)  # fmt: skip
