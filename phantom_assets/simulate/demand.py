"""The demo world's demand: what shoppers pay, how the storefront prices, and its price test.

The law (docs/method.md#the-demo-world). A latent *need* η ~ N(0, 1) per subject widens how many
items a human compares (`need_loading`), so a needier human views more products before deciding.
Every human session ends in one purchase decision at its *decision view* (the view of the item it
settled on: the quoted view of the market's banks). There, with s the product views before that
view and g(s) = 1 − exp(−s/s0),

    relative valuation  V = μ + β·g(s) + σ·ε,   ε ~ N(0, 1)   (× the product's base price)
    relative quote      r = arm · (1 + m·g(s)) · exp(noise·z)
    purchase            in the market (probability π) and V ≥ r.

So engagement reveals willingness to pay (β > 0: the premise of session-based pricing) and
purchases respond to the quote. The conditional law of V given s is stated directly, which makes
the world's parameters the ones `store_demand` estimates (its model is exactly this one). An
agent's *principal* values like the human population: V = μ + β·g(S) + σ·ε with S the decision
engagement of a random human session of the store (the principal would have browsed like one),
while the agent browses like an agent and buys in its fresh session at its (low-engagement)
quote. Not being in the market covers every non-purchase that is not about the price (wrong
dates, just looking); a session that decides to buy still removes the item or abandons checkout
with its profile's probabilities, so the share of decision quotes that end in a purchase when
V ≥ r is π·(1 − p_remove)·(1 − p_abandon) (`logged_in_market`).

The storefront runs a randomized price test: every experiment (subject) is quoted at one arm of
`arms` (× its base prices, logged as the quotes themselves); `arms = (1.0,)` is a store without
one (only the per-session quote noise moves prices at equal engagement).

The values are chosen so that, by this world's own truth, engagement pricing is worth 5-20% more
profit than the best uniform price in a human-only market (`world_value`: 11% on 5,000 simulated
humans of the demo's hotel, best uniform level 1.19 vs level 1.00 with m = 0.44) and so that the
storefront's own pricing (level 1, m = 0.45) is about the best engagement pricing for humans --
a store that tunes its prices, as the revealed-preference default assumes. Field studies of
browsing-based pricing report +12-15% profit over the best uniform price from browsing data
(Shiller 2014, "First-degree price discrimination using big data") and +19% from a randomized
price experiment (Dubé & Misra 2017, "Scalable price targeting"). The world's marginal cost is
the market's declared cost share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

__all__ = ["DEMO_DEMAND", "DemandWorld", "WorldValue", "world_value"]


@dataclass(frozen=True)
class DemandWorld:
    """The demand side of a simulated store (module docstring).

    Attributes:
        mu: μ, relative valuation at zero engagement.
        beta: β, how much the valuation rises with g(s) (0: engagement says nothing about it).
        sigma: σ, spread of the valuation at equal engagement.
        in_market: π, share of decisions in the market for the product (before cart removals
            and checkout abandonment).
        need_loading: λ, a subject's comparison breadth × exp(λ·η − λ²/2) (mean kept).
        markup: m of the storefront's engagement markup 1 + m·g(s).
        scale: s0 of g(s) = 1 − exp(−s/s0), in product views.
        arms: price-test levels, one drawn per experiment ((1.0,): no price test).
        quote_noise: σ of the per-session lognormal quote noise.
    """

    mu: float = 1.15
    beta: float = 0.55
    sigma: float = 0.2
    in_market: float = 0.7
    need_loading: float = 0.6
    markup: float = 0.45
    scale: float = 3.0
    arms: tuple[float, ...] = (0.8, 0.9, 1.0, 1.1, 1.2)
    quote_noise: float = 0.01

    def __post_init__(self) -> None:
        """Raises ValueError naming the bad value."""
        checks = {
            "sigma": self.sigma > 0,
            "in_market": 0 < self.in_market <= 1,
            "need_loading": self.need_loading >= 0,
            "markup": self.markup >= 0,
            "scale": self.scale > 0,
            "arms": bool(self.arms) and min(self.arms) > 0,
            "quote_noise": self.quote_noise >= 0,
            "beta": np.isfinite(self.beta),
            "mu": np.isfinite(self.mu),
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"DemandWorld.{name} is invalid: {getattr(self, name)!r}")

    def g(self, s: np.ndarray) -> np.ndarray:
        """g(s) = 1 − exp(−s/s0)."""
        return -np.expm1(-np.asarray(s, dtype=np.float64) / self.scale)

    def logged_in_market(self, p_remove: float, p_abandon: float) -> float:
        """The in-market share the logs show: π·(1 − p_remove)·(1 − p_abandon)."""
        return self.in_market * (1.0 - p_remove) * (1.0 - p_abandon)


DEMO_DEMAND = DemandWorld()
"""The demo store's world (both stores: valuations are relative to each product's base price)."""


@dataclass(frozen=True)
class WorldValue:
    """What engagement pricing is worth in a world, by its own truth (human-only market).

    Attributes:
        uniform_level: the best uniform price (× base price).
        uniform_profit: its expected profit per decision (× base price).
        level, markup: the best quote L·(1 + m·g(s)) of the engine's family.
        profit: its expected profit per decision.
        value: profit / uniform_profit − 1.
        store_profit: the storefront's own pricing (level 1, its markup) per decision.
    """

    uniform_level: float
    uniform_profit: float
    level: float
    markup: float
    profit: float
    value: float
    store_profit: float


def _profit(world: DemandWorld, g: np.ndarray, level: float, markup: float, cost: float) -> float:
    r = level * (1.0 + markup * g)
    buy = stats.norm.cdf((world.mu + world.beta * g - r) / world.sigma)
    return float(np.mean((r - cost) * world.in_market * buy))


def world_value(world: DemandWorld, engagement: np.ndarray, cost_share: float) -> WorldValue:
    """The best uniform price and the best engagement pricing L·(1 + m·g(s)) of a human-only
    market with these decision engagements (product views), by the world's law; quote noise
    and the price test are left out (a store's pricing, not its experiment).

    Args:
        world: the demand law.
        engagement: (n,) human decision engagements s (e.g. from a large simulated corpus).
        cost_share: marginal cost × base price (the market's declared cost share).
    """
    g = world.g(engagement)

    def uniform(x: np.ndarray) -> float:
        return -_profit(world, g, float(x[0]), 0.0, cost_share)

    def engaged(x: np.ndarray) -> float:
        return -_profit(world, g, float(x[0]), float(x[1]), cost_share)

    best_uniform = optimize.minimize(
        uniform, [1.0], method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-10}
    )
    starts = ([best_uniform.x[0], 0.0], [1.0, world.markup], [1.0, 1.0])
    best = min(
        (
            optimize.minimize(
                engaged, start, method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-10}
            )
            for start in starts
        ),
        key=lambda result: result.fun,
    )
    uniform_profit, profit = -float(best_uniform.fun), -float(best.fun)
    return WorldValue(
        float(best_uniform.x[0]),
        uniform_profit,
        float(best.x[0]),
        float(best.x[1]),
        profit,
        profit / uniform_profit - 1.0,
        _profit(world, g, 1.0, world.markup, cost_share),
    )
