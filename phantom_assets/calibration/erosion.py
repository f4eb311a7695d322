"""Coverage of the COI erosion intervals (docs/statistics.md#coi-erosion-intervals): the Student-t
interval over episode seeds that `market.erosion.coi_erosion` reports, on the demo market at the
configured n = 8 seeds.

Every replication calls the real `coi_erosion` on its own n seeds (all seed sets disjoint). The
target, the expected per-seed metric, is estimated for each replication by the mean over the
seeds of all *other* replications: independent of the interval it judges, and precise (its Monte
Carlo SE is sd/√((reps − 1)·n), a few percent of the half-width t·sd/√n at 300 replications).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.market import coi_erosion, demo_spec

__all__ = ["LAYOUTS", "N_SEEDS", "studies"]

LAYOUTS: tuple[tuple[str, float, int], ...] = (
    ("coi_a", 1.0, 8),  # the headline cell: agents only, the nominal K
    ("coi_a", 0.5, 2),  # half the shoppers send agents: a random class split per seed
    ("coi", 0.5, 8),  # both classes' premiums over all purchases
)
"""(metric, α, K) cells whose interval is studied (δ = 0, the undefended engine)."""
N_SEEDS = 8
"""Episode seeds per interval: the demo profile's `evaluation.episodes`."""
LEVEL = 0.95


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Coverage of the erosion t interval for every `LAYOUTS` cell at n = `N_SEEDS` seeds,
    `n_reps` (>= 2) replications on `demo_spec()` at its episode length."""
    if n_reps < 2:
        raise ValueError(f"n_reps must be >= 2 (the target leaves one replication out): {n_reps}")
    spec = demo_spec()
    alphas = sorted({alpha for _, alpha, _ in LAYOUTS})
    ks = sorted({k for _, _, k in LAYOUTS})
    first = int(rng.integers(2**31))
    starts = range(first, first + n_reps * N_SEEDS, N_SEEDS)  # one real call per replication
    rows = pl.concat(
        [
            coi_erosion(spec, alphas, ks, range(start, start + N_SEEDS), detectors=(0.0,))
            for start in starts
        ]
    )
    results = []
    for metric, alpha, k in LAYOUTS:
        cell = rows.filter(
            (pl.col("metric") == metric) & (pl.col("alpha") == alpha) & (pl.col("k") == k)
        )
        total, seeds = (cell["mean"] * cell["n"]).sum(), cell["n"].sum()
        cell = cell.with_columns(
            target=(total - pl.col("mean") * pl.col("n")) / (seeds - pl.col("n"))
        )
        covered = (pl.col("ci_low") <= pl.col("target")) & (pl.col("target") <= pl.col("ci_high"))
        results.append(
            CalibrationResult(
                "coi_erosion_t_ci",
                f"demo_{metric}_alpha{alpha:g}_k{k}_seeds{N_SEEDS}",
                LEVEL,
                n_reps,
                coverage=float(cell.select(covered.fill_null(False).sum()).item()) / n_reps,
            )
        )
    return results
