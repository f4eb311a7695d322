"""Coverage of the store's demand intervals (docs/statistics.md#the-stores-demand): replicated
stores of the demo world, simulated, fitted and scored by the real code.

Each replication simulates one store of the demo world (`simulate.demand`: the demo's demand,
price test and storefront markup) with `HUMANS` human and `AGENTS` agent subjects, turns its
records into quote features, fits its price model and its demand (`fit_store_demand`, with its
replicates) and scores whether each of the humans' intervals (μ, β, σ, π) holds the world's value
and whether the joint 95% region does. The true in-market share is the one the logs show:
π·(1 − p_remove)·(1 − p_abandon) of the human profile (a decision to buy still removes the item
or abandons checkout that often). Scored only where the demand is identified.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.market.demand import PARAMETERS, DemandFitParams, fit_store_demand
from phantom_assets.market.prices import fit_price_model, quote_features
from phantom_assets.simulate import HUMAN, SimulationParams, simulate_events
from phantom_assets.simulate.demand import DEMO_DEMAND

__all__ = ["AGENTS", "HUMANS", "LAYOUT", "replicate_hits", "studies", "true_parameters"]

LEVEL = 0.95
HUMANS, AGENTS = 400, 20
LAYOUT = "demo_world_400h_20a"
REPLICATES = 100


def true_parameters() -> np.ndarray:
    """(μ, β, σ, π) of the demo world's humans as the logs can show them."""
    world = DEMO_DEMAND
    share = world.logged_in_market(HUMAN.p_remove, HUMAN.p_abandon)
    return np.array([world.mu, world.beta, world.sigma, share])


def replicate_hits(seed: int) -> np.ndarray | None:
    """One simulated store: per parameter whether its interval holds the truth, then whether the
    joint region does (None: the demand was not identified)."""
    params = SimulationParams(
        seed=seed, humans_per_store=HUMANS, agents_per_store=AGENTS, stores=("hotel",)
    )
    events = simulate_events(params).events.with_columns(
        source_row=pl.col("seq"), batch_id=pl.lit("calibration")
    )
    quotes = quote_features(events)
    prices = fit_price_model(quotes)
    scale = prices.s0 if prices.s0 is not None else DEMO_DEMAND.scale
    demand = fit_store_demand(
        "hotel",
        quotes,
        prices.anchors,
        prices.signal,
        scale,
        DemandFitParams(replicates=REPLICATES),
    )
    human = demand.human
    if demand.source != "logs" or human is None:
        return None
    truth = true_parameters()
    inside = (human.ci[0] <= truth) & (truth <= human.ci[1])
    return np.append(inside, human.region_p(truth) > 1.0 - LEVEL)


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Coverage of each human demand interval and of the joint region over `n_reps` stores."""
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    seeds = rng.integers(2**31, size=n_reps)
    hits = [h for h in (replicate_hits(int(s)) for s in seeds) if h is not None]
    scored = np.array(hits) if hits else np.zeros((0, len(PARAMETERS) + 1))
    names = [f"demand_{name}_ci" for name in PARAMETERS] + ["demand_joint_region"]
    return [
        CalibrationResult(
            name,
            LAYOUT,
            LEVEL,
            max(len(hits), 1),
            coverage=float(scored[:, j].mean()) if len(hits) else 0.0,
        )
        for j, name in enumerate(names)
    ]
