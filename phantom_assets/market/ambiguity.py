"""The robust mode's ambiguity set of (α, K) (docs/method.md#robust-mode).

α is ambiguous because the shop never sees classes, only behaviour; for the mixture family
P_α = (1 − α)·P_H + α·P_A of any 1-D session feature, W1(P_α, P_α′) = |α − α′|·W1(P_H, P_A). With
the quote-time engagement law of the two classes' banks as the feature, a Wasserstein-1 ball of
radius ε is the α interval of half-width ε / W1(s_H, s_A), clipped to [0, 1]: the more alike the
classes engage, the wider it is.
"""

from __future__ import annotations

import numpy as np

from phantom_assets.market.bank import ChainBank
from phantom_assets.market.spec import MarketSpec

__all__ = ["alpha_half_width", "alpha_interval", "engagement_w1", "robust_candidates"]


def engagement_w1(human: ChainBank, agent: ChainBank, grid: int = 4096) -> float:
    """W1 between the two banks' quote-time engagement laws: ∫₀¹ |F_H⁻¹(u) − F_A⁻¹(u)| du on a
    midpoint grid of `grid` quantiles."""
    u = (np.arange(grid) + 0.5) / grid
    return float(
        np.mean(np.abs(np.quantile(human.engagement, u) - np.quantile(agent.engagement, u)))
    )


def alpha_half_width(spec: MarketSpec) -> float:
    """Half-width ε / W1(s_H, s_A) of the α ambiguity interval, at most 1.

    When both classes engage alike (W1 = 0) α is not identifiable and the whole [0, 1] interval
    is ambiguous (half-width 1); with ε = 0 the half-width is 0.
    """
    if spec.agents.ambiguity_radius_w1 == 0:
        return 0.0
    w1 = engagement_w1(*spec.banks)
    return 1.0 if w1 <= 0 else float(min(spec.agents.ambiguity_radius_w1 / w1, 1.0))


def alpha_interval(
    spec: MarketSpec, alpha: float, half_width: float | None = None
) -> tuple[float, float]:
    """The ambiguity interval [α − h, α + h] ∩ [0, 1] around nominal `alpha`."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    half = alpha_half_width(spec) if half_width is None else half_width
    return max(0.0, alpha - half), min(1.0, alpha + half)


def robust_candidates(
    spec: MarketSpec, alpha: float, half_width: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(α, K) candidates of the robust mode: every pair of `robust_alpha_candidates` evenly spaced
    α over the ambiguity interval and the spec's K candidates, as two aligned arrays."""
    low, high = alpha_interval(spec, alpha, half_width)
    alphas = np.unique(np.linspace(low, high, spec.agents.robust_alpha_candidates))
    ks = np.asarray(sorted(set(spec.agents.robust_k_set)), dtype=np.int64)
    grid_alpha, grid_k = np.meshgrid(alphas, ks, indexing="ij")
    return grid_alpha.ravel(), grid_k.ravel()
