"""The declared demand of a store whose logs cannot identify it: revealed preference
(docs/method.md#the-stores-demand).

Where purchases at quoted prices say nothing about the price response (no price test), the market
assumes the store prices well: its own pricing -- level 1 × the anchors with its fitted markup m
-- maximizes its profit from humans at α = 0. With the spread σ declared, the two first-order
conditions of profit E[(r − c)·Φ((μ + β·g − r)/σ)] in the level and the markup at (1, m) fix μ
and β (β = 0 when the store does not price on engagement); π then matches the humans' observed
conversion at those prices (declared when there is none). It is an assumption, stated as such
(`source = declared`), and `market_sensitivity` sweeps what it leaves open.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

__all__ = ["revealed_preference"]


def _gradient(
    mu_beta: np.ndarray, g: np.ndarray, markup: float, sigma: float, cost: float
) -> np.ndarray:
    """∂/∂(level, m) of the expected profit per human at level 1 and markup `markup`."""
    mu, beta = mu_beta
    lift = 1.0 + markup * g
    z = (mu + beta * g - lift) / sigma
    margin = special.ndtr(z) - (lift - cost) * np.exp(-0.5 * z * z) / (
        math.sqrt(2 * math.pi) * sigma
    )
    return np.array([np.mean(lift * margin), np.mean(g * margin)])


def revealed_preference(
    g: np.ndarray,
    markup: float,
    sigma: float,
    cost_share: float,
    conversion: float | None,
    declared_in_market: float,
) -> tuple[float, float, float, float]:
    """(μ, β, σ, π) under which the store's own pricing is optimal for its humans.

    Args:
        g: (n,) g(s) of the store's humans at their quote (the market's human bank).
        markup: the store's engagement markup m (its quotes are anchor·(1 + m·g)).
        sigma: the declared valuation spread σ (× anchor).
        cost_share: marginal cost × anchor.
        conversion: share of human decisions that bought (None: `declared_in_market` is π).
        declared_in_market: π where no conversion is known.

    Raises:
        ValueError: for sigma <= 0 or an empty g.
    """
    g = np.asarray(g, dtype=np.float64)
    if not sigma > 0 or g.size == 0:
        raise ValueError(f"need sigma > 0 and at least one human, got {sigma!r}, {g.size}")
    start = np.array([1.0 + sigma, markup])
    mu, beta = start
    if markup > 0 and np.ptp(g) > 0:
        solution = optimize.root(_gradient, start, args=(g, markup, sigma, cost_share))
        if solution.success:
            mu, beta = (float(v) for v in solution.x)
    if not (markup > 0 and np.ptp(g) > 0) or not math.isfinite(mu):
        beta = 0.0
        level = optimize.brentq(
            lambda mean: _gradient(np.array([mean, 0.0]), g, 0.0, sigma, cost_share)[0],
            cost_share,
            cost_share + 20.0 * sigma + 2.0,
        )
        mu = float(level)
    buys = float(np.mean(special.ndtr((mu + beta * g - (1.0 + markup * g)) / sigma)))
    share = declared_in_market if conversion is None or buys <= 0 else conversion / buys
    return float(mu), float(beta), float(sigma), float(min(max(share, 1e-3), 1.0))
