"""An episode's world: which replicate of the store's own sample it plays
(docs/statistics.md#the-stores-sample).

A market compiled from a store's logs carries B replicates of its sample (`market.replicates`):
per replicate, each bank session's multiplicity (its experiment's Poisson weight) and the demand
refitted on the same resample. Every episode draws one replicate from its own stream and plays
it: its shoppers replay the resampled sessions, and they value and buy by that replicate's
demand. So the spread of any result over episode seeds carries the uncertainty of the store's
finite data -- its sessions and its demand estimate -- on top of shopper noise. A spec without
replicates plays its point estimate and its banks as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from phantom_assets.config import AGENT_VALUATIONS

if TYPE_CHECKING:
    from phantom_assets.market.spec import MarketSpec

__all__ = ["DemandLaw", "EpisodeWorld", "draw_world", "point_world"]


class DemandLaw(NamedTuple):
    """What shoppers will pay (× the anchor of the product they want) and whether they buy.

    Attributes:
        mu_human, beta_human, sigma_human: a human's valuation μ + β·g(s) + σ·z at its quote's
            engagement s (g with the spec's `valuation_scale`).
        in_market: π, the share of shoppers in the market for their product.
        mu_agent, beta_agent, sigma_agent: the agents' own law (`agent_fit`).
        agent_law: index into `config.AGENT_VALUATIONS` of what an agent's principal pays.
    """

    mu_human: float
    beta_human: float
    sigma_human: float
    in_market: float
    mu_agent: float
    beta_agent: float
    sigma_agent: float
    agent_law: float


class EpisodeWorld(NamedTuple):
    """The replicate an episode plays.

    Attributes:
        demand: its demand law.
        human_index, agent_index: its session banks, as rows of the spec's banks (a session
            repeated by its multiplicity).
        replicate: the replicate's index (-1: the point estimate and the banks as they are).
    """

    demand: DemandLaw
    human_index: np.ndarray
    agent_index: np.ndarray
    replicate: int


def _law(spec: MarketSpec, values: np.ndarray | None = None) -> DemandLaw:
    """The spec's demand law, with the human (and agent) parameters of a replicate row."""
    point = np.array(
        [
            spec.mu_human,
            spec.beta_human,
            spec.sigma_human,
            spec.in_market,
            spec.mu_agent,
            spec.beta_agent,
            spec.sigma_agent,
            0.0,
        ]
    )
    if values is not None:
        point[:7] = np.where(np.isfinite(values[:7]), values[:7], point[:7])
    point[7] = float(AGENT_VALUATIONS.index(spec.agent_valuation))
    return DemandLaw(*(float(x) for x in point))


def point_world(spec: MarketSpec) -> EpisodeWorld:
    """The point estimate and the banks as they are."""
    human, agent = spec.banks
    return EpisodeWorld(_law(spec), np.arange(human.size), np.arange(agent.size), -1)


def draw_world(spec: MarketSpec, rng: np.random.Generator) -> EpisodeWorld:
    """One replicate drawn uniformly from `rng` (one integer; none without replicates)."""
    replicates = spec.demand_replicates.shape[0]
    if replicates == 0:
        return point_world(spec)
    b = int(rng.integers(replicates))
    banks = []
    for multiplicity, bank in zip(
        (spec.human_multiplicity, spec.agent_multiplicity), spec.banks, strict=True
    ):
        if multiplicity.shape[0] == 0:
            banks.append(np.arange(bank.size))
            continue
        index = np.repeat(np.arange(bank.size), multiplicity[b].astype(np.int64))
        banks.append(index if index.size else np.arange(bank.size))
    return EpisodeWorld(_law(spec, spec.demand_replicates[b]), banks[0], banks[1], b)
