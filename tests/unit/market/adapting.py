"""A market whose agents adapt to the detector, built by hand (the tests' `evasion_thetas`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from phantom_assets.detector.evasion import evaded_scores
from phantom_assets.detector.features import QUOTE_FEATURES
from phantom_assets.market import MarketSpec
from phantom_assets.market.draws import engagement_strata


def adapting(world: MarketSpec, thetas: tuple[float, ...], band: float | None = None) -> MarketSpec:
    """`world` with its agents' scores under each evasion share θ: features whose kernel
    statistic is the logit of the session's score (f = σ(gap)), the rest 0, mixed with a human
    session of the agent's engagement stratum (`detector.evasion`); `band`: the declared
    evasion band (None: the world's)."""
    x = {
        name: np.zeros((score.size, len(QUOTE_FEATURES)))
        for name, score in (("human", world.human_score), ("agent", world.agent_score))
    }
    x["human"][:, 0] = np.log(world.human_score / (1 - world.human_score))
    x["agent"][:, 0] = np.log(world.agent_score / (1 - world.agent_score))
    strata = engagement_strata(world.banks)
    evasion = evaded_scores(
        x["agent"],
        x["human"],
        (strata.stratum(world.agent_engagement), strata.stratum(world.human_engagement)),
        np.zeros(world.agent_score.size, dtype=int),
        None,
        (0.0, 1.0),
        thetas,
        np.random.default_rng(3),
    )
    declared = world.agents.evasion_band if band is None else band
    return dataclasses.replace(
        world,
        agents=dataclasses.replace(world.agents, evasion_thetas=thetas, evasion_band=declared),
        agent_evasion_score=evasion.score,
        agent_evasion_kernel_score=evasion.kernel_score,
        evasion_time_cost_s=tuple(evasion.time_cost_s),
    )
