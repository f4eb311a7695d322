"""Coverage of the store-sample intervals (docs/statistics.md#the-stores-sample): do held-out
intervals of a profit difference cover what the store's *population* would show, once every
episode seed plays a replicate of the store's finite sample?

Each replication is one store drawn from a known world (`DemandLayout`): human experiments of 1-2
sessions and agent experiments of 3-6, each session's engagement s at its quote a Poisson count
driven by its experiment's need, one decision per session at a randomized price test's quote
r = arm·(1 + m·g(s))·e^{0.01z} -- bought iff in the market (π) and μ + β·g(s) + σ·ε ≥ r. The real
`fit_class` estimates the humans' demand with its replicates; the store's market is the real
`MarketSpec` with the store's sessions as its banks and the replicates (`market.replicates`:
sessions and demand resampled together, by experiment). The quantity is the profit difference of
two fixed actions -- the store's engagement pricing (level 1, m) against a flat price (level
1.1) at α = 0.5, K = 4 -- on `HELD_OUT` seeds (`oracle.action_totals`). Its truth is the same
difference in the world itself: the true demand and a bank of `TRUTH_SESSIONS` sessions of the
world's law, averaged over `TRUTH_SEEDS` episode seeds.

Two intervals are scored: the store-sample interval (`market.intervals.store_interval`: mean ±
t·sd·√(1 + 1/n)) the ledger and the gate use, and the t interval of the seeds' mean, which covers
the replicates' average and not the store's population -- reported to show why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.market.bank import ChainBank
from phantom_assets.market.columns import Column
from phantom_assets.market.demand import DemandFitParams, fit_class
from phantom_assets.market.demo import demo_kernels
from phantom_assets.market.intervals import store_interval
from phantom_assets.market.oracle import action_totals, seed_t_interval
from phantom_assets.market.replicates import session_multiplicities
from phantom_assets.market.spec import MarketSpec

__all__ = ["LAYOUTS", "DemandLayout", "replicate_hits", "studies", "truth"]

LEVEL = 0.95
ARMS = (0.8, 0.9, 1.0, 1.1, 1.2)
HELD_OUT = tuple(range(100_017, 100_041))  # 24 held-out seeds, as the gate's
TRUTH_SEEDS = tuple(range(200))
TRUTH_SESSIONS = 20_000
ACTIONS = ((1.0, 0.45, 0.0), (1.1, 0.0, 0.0))
"""The store's engagement pricing and a flat price: the difference of their profits is scored."""
ALPHA, K = 0.5, 4


@dataclass(frozen=True)
class DemandLayout:
    """A known world of stores.

    Attributes:
        name: its name in the results.
        humans, agents: experiments per store.
        mu, beta, sigma, in_market: the demand law (× the anchor).
        markup, scale: the store's markup m and s0 of g(s).
        replicates: replicates of each store's sample.
        episode_steps, shoppers: the market's episodes.
    """

    name: str
    humans: int = 300
    agents: int = 40
    mu: float = 1.15
    beta: float = 0.55
    sigma: float = 0.2
    in_market: float = 0.55
    markup: float = 0.45
    scale: float = 3.0
    replicates: int = 100
    episode_steps: int = 10
    shoppers: int = 100


LAYOUTS = (DemandLayout("demo_like_300h_40a"),)


def _sessions(layout: DemandLayout, rng: np.random.Generator, humans: int, agents: int) -> dict:
    """Per session: experiment id, agent flag, engagement s at the quote."""
    agent = np.arange(humans + agents) >= humans
    count = np.where(agent, rng.integers(3, 7, agent.size), 1 + (rng.random(agent.size) < 0.3))
    xp = np.repeat(np.arange(agent.size), count)
    need = np.exp(0.6 * rng.standard_normal(agent.size) - 0.18)
    rate = np.where(agent, 1.0, 2.3) * need
    s = rng.poisson(rate[xp]).astype(np.float64)
    return {"experiment": xp.astype(str), "agent": agent[xp], "s": s, "arm_of": xp}


def _spec(layout: DemandLayout, sessions: dict, **fields) -> MarketSpec:
    """The market of a bank of sessions (one product, anchor 100), the store's pricing scale."""
    kernel_human, kernel_agent = demo_kernels(0)
    banks = {}
    for name, rows in (("human", ~sessions["agent"]), ("agent", sessions["agent"])):
        bank = ChainBank(sessions["s"][rows], np.zeros(rows.sum()), np.ones(rows.sum()))
        banks |= {
            f"{name}_engagement": bank.engagement,
            f"{name}_score": bank.score,
            f"{name}_weight": bank.weight,
        }
    return MarketSpec(
        kernel_human=kernel_human,
        kernel_agent=kernel_agent,
        anchor=np.array([100.0]),
        **banks,
        engagement_scale=layout.scale,
        valuation_scale=layout.scale,
        markups=(0.0, layout.markup),
        base_levels=(1.0, 1.1),
        detector_strengths=(0.0,),
        shoppers_per_step=layout.shoppers,
        episode_steps=layout.episode_steps,
        quote_noise=0.0,
        detector_threshold=1.0,
        **fields,
    )


def _difference(spec: MarketSpec, seeds: tuple[int, ...]) -> np.ndarray:
    """Per seed, profit(ACTIONS[0]) − profit(ACTIONS[1]) at (ALPHA, K)."""
    profit = action_totals(spec, ACTIONS, [ALPHA], K, seeds)[:, :, 0, Column.PROFIT]
    return profit[0] - profit[1]


def truth(layout: DemandLayout, rng: np.random.Generator) -> float:
    """The difference in the world itself: its demand and a large bank of its sessions."""
    world = _sessions(layout, rng, TRUTH_SESSIONS, TRUTH_SESSIONS // 8)
    spec = _spec(
        layout,
        world,
        mu_human=layout.mu,
        beta_human=layout.beta,
        sigma_human=layout.sigma,
        in_market=layout.in_market,
    )
    return float(_difference(spec, TRUTH_SEEDS).mean())


def replicate_hits(
    layout: DemandLayout, target: float, rng: np.random.Generator
) -> tuple[bool, bool]:
    """One store: (its store-sample interval covers `target`, its mean's t interval does)."""
    sessions = _sessions(layout, rng, layout.humans, layout.agents)
    human = ~sessions["agent"]
    arm = np.asarray(ARMS)[rng.integers(len(ARMS), size=sessions["arm_of"].max() + 1)]
    g = -np.expm1(-sessions["s"] / layout.scale)
    r = (
        arm[sessions["arm_of"]]
        * (1 + layout.markup * g)
        * np.exp(0.01 * rng.standard_normal(g.size))
    )
    value = layout.mu + layout.beta * g + layout.sigma * rng.standard_normal(g.size)
    bought = (rng.random(g.size) < layout.in_market) & (value >= r)
    fit = fit_class(
        "human",
        g[human],
        sessions["s"][human],
        r[human],
        bought[human],
        sessions["experiment"][human],
        DemandFitParams(replicates=layout.replicates),
    )
    rows = np.full((layout.replicates, 7), np.nan)
    rows[:, :4] = fit.replicates
    experiments = sessions["experiment"]
    spec = _spec(
        layout,
        sessions,
        mu_human=fit.estimate[0],
        beta_human=fit.estimate[1],
        sigma_human=fit.estimate[2],
        in_market=fit.estimate[3],
        demand_replicates=rows,
        human_multiplicity=session_multiplicities(experiments[human].tolist(), layout.replicates),
        agent_multiplicity=session_multiplicities(experiments[~human].tolist(), layout.replicates),
    )
    values = _difference(spec, HELD_OUT)
    interval = store_interval(values, LEVEL)
    _, _, low, high, _ = seed_t_interval(values[:, None], LEVEL)
    return (bool(interval.ci_low <= target <= interval.ci_high), bool(low[0] <= target <= high[0]))


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Coverage of the store-sample interval and of the mean's t interval, per layout."""
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    out = []
    for layout in LAYOUTS:  # one known world
        target = truth(layout, rng)
        hits = np.array([replicate_hits(layout, target, rng) for _ in range(n_reps)])
        out += [
            CalibrationResult(
                "store_sample_interval",
                layout.name,
                LEVEL,
                n_reps,
                coverage=float(hits[:, 0].mean()),
            ),
            CalibrationResult(
                "mean_t_interval_over_replicates",
                layout.name,
                LEVEL,
                n_reps,
                coverage=float(hits[:, 1].mean()),
            ),
        ]
    return out
