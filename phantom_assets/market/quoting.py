"""Session-based quoting of the market (docs/method.md#quotes): engagement markup, noisy quotes, the
floor and the order-statistic law of the best of K quotes.

A session that views a product is quoted `p = clip(base·(1 + m·g(s))·(1 + w·u), p_low, p_high)`
with `g(s) = 1 − exp(−s/s0)` and `u ~ U(−1, 1)` drawn by the caller (common random numbers).
Detector-aware quoting replaces s by a flagged session's effective engagement. An agent runs K
clean sessions and buys at the lowest of its K quotes, so for m = 0 its expected price is
`p_min + 2w·base/(K + 1)` and its COI tends to 0 as K grows (the erosion theorem). The two
formulas (`markup_factor`, `quote`) are compiled ufuncs: the engine's compiled step calls exactly
these on scalars, and numpy callers broadcast them.
"""

from __future__ import annotations

import numpy as np
from numba import vectorize
from numpy.typing import ArrayLike


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@vectorize(["float64(float64, float64)"], cache=True)
def markup_factor(s: float, s0: float) -> float:
    """`g(s) = 1 − exp(−s/s0)`, unchecked: its inputs come from a validated `MarketSpec`."""
    return -np.expm1(-s / s0)


@vectorize(["float64(float64, float64, float64, float64, float64, float64, float64)"], cache=True)
def quote(
    base: float,
    markup: float,
    g: float,
    noise_halfwidth: float,
    u: float,
    p_low: float,
    p_high: float,
) -> float:
    """`clip(base·(1 + m·g)·(1 + w·u), p_low, p_high)`, unchecked: the engine's inputs come from
    a validated `MarketSpec`."""
    return min(max(base * (1.0 + markup * g) * (1.0 + noise_halfwidth * u), p_low), p_high)


def price_floor(base: ArrayLike, noise_halfwidth: float, p_low: float) -> np.ndarray:
    """The engine's floor `p_min = max(p_low, base·(1 − w))`, the lowest quote it ever gives."""
    _check(0 <= noise_halfwidth < 1, f"noise_halfwidth must be in [0, 1), got {noise_halfwidth}")
    return np.maximum(p_low, np.asarray(base, dtype=float) * (1 - noise_halfwidth))


def expected_min_quote(base: ArrayLike, noise_halfwidth: float, k: ArrayLike) -> np.ndarray:
    """Closed-form E[min of K quotes] for m = 0 and no clipping: `base(1 − w) + 2w·base/(K + 1)`."""
    base, k = np.asarray(base, dtype=float), np.asarray(k, dtype=float)
    _check(not np.any(k < 1), "k must be >= 1")
    return base * (1 - noise_halfwidth) + 2 * noise_halfwidth * base / (k + 1)
