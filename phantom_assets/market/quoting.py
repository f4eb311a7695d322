"""Session-based quoting of market v2: engagement markup, noisy quotes, best of K (DESIGN §5).

A session that views a product is quoted `p = clip(base·(1 + m·g(s))·(1 + w·u), p_low, p_high)`
with `g(s) = 1 − exp(−s/s0)` and `u ~ U(−1, 1)` drawn by the caller (common random numbers).
Detector-aware quoting replaces s by `max(s, δ·f·s_ref)`. An agent runs K clean sessions and buys at
the lowest of its K quotes, so for m = 0 its expected price is `p_min + 2w·base/(K + 1)` and its
COI tends to 0 as K grows (the erosion theorem). Everything is pure numpy and broadcasts over
leading (candidate, session, ...) axes; the two formulas (`markup_factor`, `quote`) are compiled
ufuncs, so the market engine's compiled step calls exactly these on scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import vectorize
from numpy.typing import ArrayLike

DEFAULT_GRID_POINTS: int = 4096
"""Midpoint-rule cells of the order-statistic integral (error ≪ 1e-3 price units at base 100)."""


class AgentPurchase(NamedTuple):
    """What agents with K clean sessions pay (all arrays have the agent shape, quotes minus K_max).

    Attributes:
        best_quote: the minimum over each agent's first K quotes.
        buys: True where `best_quote <= valuation`.
        price_paid: `best_quote` where the agent buys, nan otherwise.
    """

    best_quote: np.ndarray
    buys: np.ndarray
    price_paid: np.ndarray


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@vectorize(["float64(float64, float64)"], cache=True)
def markup_factor(s: float, s0: float) -> float:
    """`g(s) = 1 − exp(−s/s0)` without argument checks (`engagement_markup` checks them)."""
    return -np.expm1(-s / s0)


@vectorize(["float64(float64, float64, float64, float64, float64, float64, float64)"], cache=True)
def quote(
    base: float, markup: float, g: float, noise_halfwidth: float, u: float, p_low: float,
    p_high: float,
) -> float:  # fmt: skip
    """`clip(base·(1 + m·g)·(1 + w·u), p_low, p_high)` without argument checks (`session_quotes`
    checks them; the engine's inputs come from a validated `MarketSpec`)."""
    return min(max(base * (1.0 + markup * g) * (1.0 + noise_halfwidth * u), p_low), p_high)


def engagement_markup(s: ArrayLike, s0: float) -> np.ndarray:
    """The engagement markup factor `g(s) = 1 − exp(−s/s0)` ∈ [0, 1), elementwise.

    Args:
        s: engagement signal(s) accumulated before the quoted view (≥ 0).
        s0: engagement scale (> 0).
    """
    s = np.asarray(s, dtype=float)
    _check(s0 > 0, f"s0 must be > 0, got {s0}")
    _check(not np.any(s < 0), f"engagement s must be >= 0, got min {np.min(s)}")
    return markup_factor(s, s0)


def detector_engagement(s: ArrayLike, f: ArrayLike, delta: ArrayLike, s_ref: float) -> np.ndarray:
    """Detector-aware engagement `s_eff = max(s, δ·f·s_ref)`: agent-looking sessions look engaged.

    Args:
        s: engagement before the quoted view (≥ 0).
        f: the session's running agent score on that prefix, in [0, 1].
        delta: detector strength δ ≥ 0 (0 = undefended: s_eff = s).
        s_ref: engagement a fully flagged session is quoted as (> 0).
    """
    f = np.asarray(f, dtype=float)
    delta = np.asarray(delta, dtype=float)
    _check(s_ref > 0, f"s_ref must be > 0, got {s_ref}")
    _check(not np.any((f < 0) | (f > 1)), "agent score f must lie in [0, 1]")
    _check(not np.any(delta < 0), f"detector strength delta must be >= 0, got {delta}")
    return np.maximum(np.asarray(s, dtype=float), delta * f * s_ref)


def session_quotes(
    base: ArrayLike,
    markup: ArrayLike,
    engagement: ArrayLike,
    noise_halfwidth: float,
    u: ArrayLike,
    p_low: float,
    p_high: float,
) -> np.ndarray:
    """Quotes `clip(base·(1 + m·g)·(1 + w·u), p_low, p_high)`, broadcasting all array arguments.

    Args:
        base: base price(s) (> 0), e.g. shape (candidates, 1, 1) or per product.
        markup: engagement markup m ≥ 0 (scalar or per candidate).
        engagement: the markup factor g(s) ∈ [0, 1] (`engagement_markup` of s or of s_eff).
        noise_halfwidth: w ∈ [0, 1), half-width of the relative quote noise.
        u: the caller's uniforms in [−1, 1] (one per quote; shared across candidates for CRN).
        p_low: lower price bound (marginal cost).
        p_high: upper price bound (≥ p_low).
    """
    base, markup, g, u = (np.asarray(a, dtype=float) for a in (base, markup, engagement, u))
    _check(0 <= noise_halfwidth < 1, f"noise_halfwidth must be in [0, 1), got {noise_halfwidth}")
    _check(p_low <= p_high, f"need p_low <= p_high, got {p_low} > {p_high}")
    _check(not np.any(base <= 0), "base prices must be > 0")
    _check(not np.any(markup < 0), "markup m must be >= 0")
    _check(not np.any((g < 0) | (g > 1)), "engagement factor g must lie in [0, 1]")
    _check(not np.any(np.abs(u) > 1), "noise draws u must lie in [-1, 1]")
    return quote(base, markup, g, noise_halfwidth, u, p_low, p_high)


def price_floor(base: ArrayLike, noise_halfwidth: float, p_low: float) -> np.ndarray:
    """The engine's floor `p_min = max(p_low, base·(1 − w))`, the lowest quote it ever gives."""
    _check(0 <= noise_halfwidth < 1, f"noise_halfwidth must be in [0, 1), got {noise_halfwidth}")
    return np.maximum(p_low, np.asarray(base, dtype=float) * (1 - noise_halfwidth))


def best_of_k(quotes: ArrayLike, k: ArrayLike) -> np.ndarray:
    """Minimum over each agent's first `k` quotes; quotes k+1 … K_max are ignored.

    Args:
        quotes: (..., K_max) quotes of each agent's candidate sessions.
        k: ints in [1, K_max], broadcastable to `quotes.shape[:-1]`.
    """
    quotes = np.asarray(quotes, dtype=float)
    k = np.asarray(k)
    _check(quotes.ndim >= 1 and quotes.shape[-1] >= 1, f"quotes need a K axis, got {quotes.shape}")
    k_max = quotes.shape[-1]
    _check(np.issubdtype(k.dtype, np.integer), f"k must be integers, got dtype {k.dtype}")
    _check(not np.any((k < 1) | (k > k_max)), f"k must lie in [1, {k_max}] (the K_max axis)")
    used = np.arange(k_max) < k[..., None]
    return np.where(used, quotes, np.inf).min(axis=-1)


def agent_purchases(quotes: ArrayLike, k: ArrayLike, valuation: ArrayLike) -> AgentPurchase:
    """Agents buy at their best of K quotes when it is ≤ their valuation (K = 1: a human session).

    Args:
        quotes: (..., K_max) quotes of each agent's candidate sessions.
        k: per-agent session counts in [1, K_max] (see `best_of_k`).
        valuation: per-agent valuations, broadcastable to `quotes.shape[:-1]`.
    """
    best = best_of_k(quotes, k)
    buys = best <= np.asarray(valuation, dtype=float)
    return AgentPurchase(best, buys, np.where(buys, best, np.nan))


def expected_min_quote(base: ArrayLike, noise_halfwidth: float, k: ArrayLike) -> np.ndarray:
    """Closed-form E[min of K quotes] for m = 0 and no clipping: `base(1 − w) + 2w·base/(K + 1)`."""
    base, k = np.asarray(base, dtype=float), np.asarray(k, dtype=float)
    _check(not np.any(k < 1), "k must be >= 1")
    return base * (1 - noise_halfwidth) + 2 * noise_halfwidth * base / (k + 1)


def expected_min_of_iid(
    cdf: Callable[[np.ndarray], np.ndarray],
    lower: ArrayLike,
    upper: ArrayLike,
    k: ArrayLike,
    n_grid: int = DEFAULT_GRID_POINTS,
) -> np.ndarray:
    """E[min of k iid draws] = lower + ∫_lower^upper (1 − F(x))^k dx, sample-free (midpoint rule).

    The midpoint rule never evaluates F at the bounds, so atoms there (clipped quotes) are exact.

    Args:
        cdf: F, the CDF of one draw; called with x of shape (*batch, n_grid), returns that shape.
        lower: lower support bound of one draw (broadcast to the batch shape).
        upper: upper support bound of one draw (broadcast to the batch shape).
        k: number of draws (≥ 1), broadcast to the batch shape.
        n_grid: midpoint-rule cells.
    """
    lower, upper, k = (np.asarray(a, dtype=float) for a in (lower, upper, k))
    _check(n_grid >= 2, f"n_grid must be >= 2, got {n_grid}")
    _check(not np.any(upper < lower), "need lower <= upper")
    _check(not np.any(k < 1), "k must be >= 1")
    width = (upper - lower)[..., None]
    x = lower[..., None] + width * (np.arange(n_grid) + 0.5) / n_grid
    survival = np.clip(1 - cdf(x), 0, 1)
    return lower + (survival ** k[..., None]).sum(axis=-1) * width[..., 0] / n_grid


def quote_cdf(
    x: ArrayLike,
    base: ArrayLike,
    markup: ArrayLike,
    engagement: ArrayLike,
    noise_halfwidth: float,
    p_low: float,
    p_high: float,
) -> np.ndarray:
    """CDF of one quote given its engagement factor g: piecewise linear, atoms at p_low / p_high."""
    x = np.asarray(x, dtype=float)
    centre = np.asarray(base, dtype=float) * (1 + np.asarray(markup) * np.asarray(engagement))
    lo, hi = centre * (1 - noise_halfwidth), centre * (1 + noise_halfwidth)
    span = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        ramp = np.clip((x - lo) / span, 0, 1)
    unclipped = np.where(span > 0, ramp, x >= lo)  # w = 0: a point mass at the centre
    return np.where(x < p_low, 0.0, np.where(x >= p_high, 1.0, unclipped))


def expected_min_quote_numeric(
    base: ArrayLike,
    markup: ArrayLike,
    engagement: ArrayLike,
    noise_halfwidth: float,
    k: ArrayLike,
    p_low: float,
    p_high: float,
    n_grid: int = DEFAULT_GRID_POINTS,
) -> np.ndarray:
    """E[min of K iid quotes] at a fixed engagement factor g, clipping included (any m ≥ 0)."""
    params = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (base, markup, engagement)))
    shape = np.broadcast_shapes(params[0].shape, np.shape(k))
    b, m, g = (np.broadcast_to(a, shape)[..., None] for a in params)

    def cdf(x: np.ndarray) -> np.ndarray:
        return quote_cdf(x, b, m, g, noise_halfwidth, p_low, p_high)

    lower, upper = np.full(shape, float(p_low)), np.full(shape, float(p_high))
    return expected_min_of_iid(cdf, lower, upper, np.broadcast_to(k, shape), n_grid)


def coi(prices_paid: ArrayLike, floor: ArrayLike) -> float:
    """Cost of information (COI) `mean(p_paid − p_min)` over purchases (nan entries = no purchase).

    Args:
        prices_paid: prices paid, nan where nobody bought.
        floor: p_min, scalar or broadcastable to `prices_paid` (e.g. per product).

    Returns:
        The mean premium over the floor, nan when there is no purchase.
    """
    premium = np.asarray(prices_paid, dtype=float) - np.asarray(floor, dtype=float)
    bought = ~np.isnan(premium)
    return float(premium[bought].mean()) if bought.any() else float("nan")
