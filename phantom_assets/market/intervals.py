"""Intervals for what a store's market would do -- its population, not the replicates' average
(docs/statistics.md#the-stores-sample).

Each episode seed plays one replicate of the store's sample (`world.draw_world`): its value D_j is
the quantity in a bootstrap world θ*_j plus shopper noise. The estimate is the mean D̄, and its
error has two parts: the store's sample (θ̂ − θ, which the replicates' spread measures -- the
bootstrap principle) and the seeds' Monte Carlo error. So

    D̄ ± t(n − 1) · s_D · √(1 + 1/n)

-- a prediction interval for one more replicate -- is the interval for θ: exact when D is normal
and the shopper noise is nil, conservative when it is not (s_D then also counts shopper noise,
which the mean averages away). A t interval of the mean, D̄ ± t·s_D/√n, covers only the
replicates' average (√n times too narrow for θ at n seeds); `calibration.store_sample` measures
both on replicated known stores.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

__all__ = ["STORE_INTERVAL_METHOD", "StoreInterval", "store_interval"]

STORE_INTERVAL_METHOD = (
    "store-sample interval over held-out episode seeds (each a replicate of the store's sample): "
    "mean ± t(n−1)·sd·√(1 + 1/n)"
)


class StoreInterval(NamedTuple):
    """A store-sample interval: mean, bounds, n (finite values) and the one-sided p of
    H0: value <= 0 (for "greater"; NaN with fewer than 2 values or no spread)."""

    mean: float
    ci_low: float
    ci_high: float
    n: int
    p_positive: float


def store_interval(values: np.ndarray, level: float = 0.95) -> StoreInterval:
    """The store-sample interval of the finite `values` (one per replicate/episode seed)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n < 2:
        mean = float(x.mean()) if n else math.nan
        return StoreInterval(mean, math.nan, math.nan, n, math.nan)
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    scale = sd * math.sqrt(1.0 + 1.0 / n)
    if scale == 0.0:
        return StoreInterval(mean, mean, mean, n, math.nan)
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * scale
    p = float(stats.t.sf(mean / scale, n - 1))
    return StoreInterval(mean, mean - half, mean + half, n, p)
