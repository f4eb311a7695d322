"""Stress rows → the gate's paired values: one per episode seed, both arms at the same band cell
(docs/method.md#promotion-gate).

Stress rows exist per (policy, split, detector, α0, evasion share θ, band α, episode seed,
training seed): the band around α0 is every band α × every θ of the declared evasion band (agents
that adapt to the detector; docs/detector.md#agents-that-adapt). Training seeds are replicates of
one policy: they are averaged within the seed first (`seed_means`), and the result is laid out as
a cube (`StressCube`: arm × stress cell × seed) once, so the gate's many comparisons are array
arithmetic. A comparison of two arms -- (policy, detector) pairs -- is paired on (α0, θ, band α,
seed): its difference per band cell, the *worst case over the band of the paired difference* with
that cell chosen on the selection seeds alone (`worst="min"`; for a quantity that harms, the
largest: `worst="max"`), and the held-out seeds evaluated at exactly that cell. α0 cells reuse the
seed's common random numbers, so the values are averaged over α0 within a seed: one value per
seed, the gate's unit. No number here ever compares two policies at different α or θ:
`PairedStress.cells` records the one (α, θ) of each α0.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from phantom_assets.constants import SELECTION_SPLIT, STRESS_SPLITS
from phantom_assets.market.columns import DETECTOR_MODES

FITTED, PERMUTED = DETECTOR_MODES
Arm = tuple[str, str]
"""(policy key, detector mode): one evaluated arm of the stress table."""
CELL = ("alpha0", "theta", "alpha")
_REQUIRED = ("split", "policy", "detector", *CELL, "seed")

__all__ = [
    "FITTED",
    "PERMUTED",
    "Arm",
    "PairedStress",
    "StressCube",
    "paired_stress",
    "seed_means",
    "stress_cube",
    "stress_cubes",
]


@dataclass(frozen=True)
class PairedStress:
    """One comparison on the stress band, per episode seed.

    Attributes:
        selection: (selection seeds,) the worst-case paired values, averaged over α0 cells.
        test: (held-out seeds,) the same at the band cell chosen on the selection seeds.
        selection_seeds, test_seeds: the seeds, sorted.
        cells: α0 -> the (band α, evasion share θ) both arms were compared at (chosen on the
            selection seeds).
    """

    selection: np.ndarray
    test: np.ndarray
    selection_seeds: tuple[int, ...]
    test_seeds: tuple[int, ...]
    cells: dict[float, tuple[float, float]]

    def to_dict(self) -> dict[str, object]:
        """The (α, θ) of each α0 cell, for the report (both arms at that cell)."""
        return {
            "compared_at": [
                {"alpha0": a0, "alpha": a, "theta": t} for a0, (a, t) in self.cells.items()
            ]
        }


def seed_means(stress: pl.DataFrame, *metrics: str) -> pl.DataFrame:
    """Each metric per (split, policy, detector, α0, θ, band α, episode seed), training seeds
    averaged (undefined values, NaN, left out of the mean), in one column per metric; rows in no
    particular order (`stress_cubes` orders them).

    Raises:
        ValueError: for missing columns, no rows, or a split or detector outside the protocol's.
    """
    missing = {*_REQUIRED, *metrics} - set(stress.columns)
    if missing:
        raise ValueError(f"stress rows lack columns {sorted(missing)}")
    if stress.is_empty():
        raise ValueError("no stress rows: materialize policy_evaluations first")
    splits, detectors = set(stress["split"].unique()), set(stress["detector"].unique())
    if not splits <= set(STRESS_SPLITS) or not detectors <= set(DETECTOR_MODES):
        raise ValueError(
            f"unknown stress splits {sorted(splits)} or detectors {sorted(detectors)}; "
            f"expected {STRESS_SPLITS}, {DETECTOR_MODES}"
        )
    values = {m: pl.col(m).cast(pl.Float64) for m in metrics}
    return (
        stress.with_columns(
            pl.when(v.is_nan()).then(None).otherwise(v).alias(m) for m, v in values.items()
        )
        .group_by("split", "policy", "detector", *CELL, "seed")
        .agg(pl.col(*metrics).mean())
    )


@dataclass(frozen=True)
class StressCube:
    """A metric's seed means as an array: `values[arm, cell, seed]` (NaN: undefined).

    Attributes:
        arms: (policy, detector) of each first index.
        alpha0, theta, alpha: (cells,) the α0 cell, evasion share and band α of each second
            index (sorted by α0, θ, α).
        seeds: (seeds,) the episode seeds; `is_selection` marks the selection split's.
    """

    values: np.ndarray
    arms: tuple[Arm, ...]
    alpha0: np.ndarray
    theta: np.ndarray
    alpha: np.ndarray
    seeds: np.ndarray
    is_selection: np.ndarray

    def at(self, cells: dict[float, tuple[float, float]]) -> np.ndarray:
        """(cells,) whether each cell is the (α, θ) `cells` names for its α0."""
        rows = zip(self.alpha0.tolist(), self.alpha.tolist(), self.theta.tolist(), strict=True)
        return np.asarray([cells.get(a0) == (a, t) for a0, a, t in rows], dtype=bool)

    def arm(self, arm: Arm) -> np.ndarray:
        """(cells, seeds) values of one arm."""
        try:
            return self.values[self.arms.index(arm)]
        except ValueError:
            raise ValueError(f"no stress rows for (policy, detector) {arm}") from None

    @property
    def policies(self) -> tuple[str, ...]:
        return tuple(sorted({policy for policy, _ in self.arms}))


def stress_cubes(stress: pl.DataFrame, *metrics: str) -> tuple[StressCube, ...]:
    """`seed_means` of each metric laid out as arm × cell × seed (one layout for all).

    Raises:
        ValueError: as `seed_means`; and if the arms were not stress-tested on the same cells and
            seeds (the protocol gives every policy and detector the same ones) or a seed is in
            both splits.
    """
    means = seed_means(stress, *metrics)
    arms = means.select("policy", "detector").unique().sort("policy", "detector")
    cells = means.select(*CELL).unique().sort(*CELL)
    seeds = means.select("seed", "split").unique().sort("seed")
    if seeds["seed"].n_unique() != seeds.height:
        raise ValueError("a stress seed is in both the selection and the test split")
    if means.height != arms.height * cells.height * seeds.height:
        rows = sorted(set(means.group_by("policy", "detector").len()["len"]))
        raise ValueError(
            f"arms were stress-tested on different cells or seeds: each needs {cells.height} "
            f"cells x {seeds.height} seeds, got {rows} rows"
        )
    ordered = means.sort("policy", "detector", *CELL, "seed")
    layout = {
        "arms": tuple(arms.iter_rows()),
        **{name: cells[name].to_numpy() for name in CELL},
        "seeds": seeds["seed"].to_numpy(),
        "is_selection": (seeds["split"] == SELECTION_SPLIT).to_numpy(),
    }
    shape = (arms.height, cells.height, seeds.height)
    return tuple(
        StressCube(values=ordered[m].to_numpy().astype(np.float64).reshape(shape), **layout)
        for m in metrics
    )


def stress_cube(stress: pl.DataFrame, metric: str) -> StressCube:
    """`stress_cubes` of one metric."""
    return stress_cubes(stress, metric)[0]


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():  # an all-undefined slice is NaN, as intended
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def paired_stress(
    cube: StressCube,
    first: Arm,
    second: Arm | None = None,
    worst: Literal["min", "max"] = "min",
) -> PairedStress:
    """first − second (or `first` alone) per episode seed, at the worst band cell (α, θ) of each
    α0.

    Args:
        cube: `stress_cube` of the metric.
        first: the arm tested (e.g. (candidate, "fitted")).
        second: the arm it is compared with at the same (α0, θ, α, seed) (e.g. the tuned-static
            baseline, or the candidate with the ablation's f); None: `first`'s own values.
        worst: which end of the band is the worst case: "min" (a gain: profit advantage, detector
            value) or "max" (a cost: human harm). Ties go to the lower θ, then the lower α.

    Raises:
        ValueError: if an arm has no rows.
    """
    values = cube.arm(first) if second is None else cube.arm(first) - cube.arm(second)
    by_cell = _nanmean(values[:, cube.is_selection], axis=1)
    badness = np.where(np.isnan(by_cell), -np.inf, by_cell if worst == "max" else -by_cell)
    chosen: dict[float, tuple[float, float]] = {}
    for alpha0 in np.unique(cube.alpha0):  # a handful of α0 cells
        cells = np.flatnonzero(cube.alpha0 == alpha0)  # sorted by (θ, α): argmax takes the lowest
        pick = cells[np.argmax(badness[cells])]
        chosen[float(alpha0)] = (float(cube.alpha[pick]), float(cube.theta[pick]))
    per_seed = _nanmean(values[cube.at(chosen)], axis=0)
    test = ~cube.is_selection
    return PairedStress(
        per_seed[cube.is_selection],
        per_seed[test],
        tuple(cube.seeds[cube.is_selection].tolist()),
        tuple(cube.seeds[test].tolist()),
        chosen,
    )
