"""The market's random numbers: a step's common random numbers and the detector-value ablation's
decoy scores (docs/method.md#detector-value).

A step's randomness is drawn once (`draw_step`), independently of α, K and the action, so every
candidate and every action sees the same shoppers (pitfall 4, docs/method.md). The ablation gives
each session the agent score f of a random session of the step's class mix *within the same
engagement stratum* (`EngagementStrata`): f keeps its law and its relation to engagement and loses
only what it says beyond engagement -- so a class-blind rule ("flag every low-engagement session")
has detector value 0 by construction, and only detection counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from phantom_assets.market.bank import ChainBank
from phantom_assets.market.world import EpisodeWorld

MAX_EXACT_STRATA = 20
"""Up to this many distinct engagement values each value is a stratum (exact: a rule of s alone
is then permutation invariant); more values are cut at their deciles."""
DECILES = 10

__all__ = [
    "EngagementStrata",
    "StepDraws",
    "agent_session_share",
    "decoy_scores",
    "draw_step",
    "engagement_strata",
]


class StepDraws(NamedTuple):
    """The common random numbers of one step (N shoppers, agents with up to K_max sessions).

    Attributes:
        u_agent: (N,) a shopper is an agent under candidate α iff u_agent < α.
        product: (N,) the product each shopper wants.
        z: (N,) standard normals of the valuations (`engine`: v = anchor·(μ + β·g + σ·z)).
        human_chain: (N,) row of the human bank of the shopper's session as a human.
        human_noise: (N,) quote noise u ∈ [−1, 1) of that session.
        agent_chain: (N, K_max) rows of the agent bank of its clean sessions as an agent.
        agent_noise: (N, K_max) their quote noise.
        u_market: (N,) the shopper is in the market iff u_market < π.
    """

    u_agent: np.ndarray
    product: np.ndarray
    z: np.ndarray
    human_chain: np.ndarray
    human_noise: np.ndarray
    agent_chain: np.ndarray
    agent_noise: np.ndarray
    u_market: np.ndarray


def draw_step(
    rng: np.random.Generator,
    n: int,
    product_cdf: np.ndarray,
    k_max: int,
    world: EpisodeWorld,
) -> StepDraws:
    """Draw a step's common random numbers: one block of uniforms and one of normals, in a fixed
    layout (for reproducibility and speed). A shopper wants the first product whose cumulative
    weight (`MarketSpec.product_cdf`) exceeds its uniform draw; its sessions are drawn uniformly
    from the episode's banks (`world.EpisodeWorld`: the replicate's sessions, as bank rows)."""
    u = rng.random((5 + 2 * k_max, n))
    # Row blocks of u: agent share, product, human chain, human noise, k_max agent chains, k_max
    # agent noises, in-market; positions are scaled in place (u is this step's own array).
    human, agent = world.human_index, world.agent_index
    u[2] *= human.size
    u[4 : 4 + k_max] *= agent.size
    return StepDraws(
        u_agent=u[0],
        product=np.searchsorted(product_cdf, u[1], side="right"),
        z=rng.standard_normal(n),
        human_chain=human[u[2].astype(np.int64)],
        human_noise=2.0 * u[3] - 1.0,
        agent_chain=agent[u[4 : 4 + k_max].T.astype(np.int64)],
        agent_noise=2.0 * u[4 + k_max : 4 + 2 * k_max].T - 1.0,
        u_market=u[4 + 2 * k_max],
    )


@dataclass(frozen=True)
class EngagementStrata:
    """Both banks' scores grouped by engagement stratum (what the ablation draws from).

    Attributes:
        edges: (B − 1,) inner stratum edges: a session with engagement s is in stratum
            `searchsorted(edges, s, side="right")`.
        offsets: (2, B) start of each stratum's scores in `scores[c]` (c = 0 human, 1 agent).
        counts: (2, B) sessions of each class in each stratum.
        scores: (human scores, agent scores), each sorted by stratum.
    """

    edges: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray
    scores: tuple[np.ndarray, np.ndarray]

    def stratum(self, engagement: np.ndarray) -> np.ndarray:
        """Stratum index of each engagement value."""
        return np.searchsorted(self.edges, engagement, side="right")


def engagement_strata(banks: tuple[ChainBank, ChainBank]) -> EngagementStrata:
    """Strata of both banks' pooled engagement: its distinct values when there are at most
    `MAX_EXACT_STRATA`, else its deciles."""
    pooled = np.concatenate([bank.engagement for bank in banks])
    values = np.unique(pooled)
    if values.size <= MAX_EXACT_STRATA:
        edges = values[1:]
    else:
        edges = np.unique(np.quantile(pooled, np.arange(1, DECILES) / DECILES))
    n_strata = edges.size + 1
    offsets, counts = np.zeros((2, n_strata), np.int64), np.zeros((2, n_strata), np.int64)
    scores = []
    for c, bank in enumerate(banks):
        strata = np.searchsorted(edges, bank.engagement, side="right")
        order = np.argsort(strata, kind="stable")
        counts[c] = np.bincount(strata, minlength=n_strata)
        offsets[c] = np.concatenate([[0], np.cumsum(counts[c])[:-1]])
        scores.append(bank.score[order])
    return EngagementStrata(edges, offsets, counts, (scores[0], scores[1]))


def decoy_scores(
    rng: np.random.Generator,
    strata: EngagementStrata,
    agent_share: float,
    engagement: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Scores for the detector-value ablation: each session gets the f of a random session of
    its own engagement stratum, an agent's with probability `agent_share` (the step's share of
    agent *sessions*), else a human's (the other class where the stratum has none of one).

    Args:
        rng: the ablation's own stream (every other draw stays common).
        strata: `engagement_strata` of the market's banks.
        agent_share: share of agent sessions in the step's class mix.
        engagement: ((N,) human-session engagement, (N, K_max) agent-session engagement).

    Returns:
        (human-session f (N,), agent-session f (N, K_max)).
    """
    human, agent = engagement
    s = np.concatenate([human[:, None], agent], axis=1)
    stratum = strata.stratum(s)
    from_agent = (rng.random(s.shape) < agent_share).astype(np.int64)
    picks = rng.random(s.shape)
    available = strata.counts[from_agent, stratum] > 0
    cls = np.where(available, from_agent, 1 - from_agent)  # a session's own class is there
    index = strata.offsets[cls, stratum] + (picks * strata.counts[cls, stratum]).astype(np.int64)
    scores = np.where(
        cls == 1,
        strata.scores[1][np.minimum(index, strata.scores[1].size - 1)],
        strata.scores[0][np.minimum(index, strata.scores[0].size - 1)],
    )
    return scores[:, 0], scores[:, 1:]


def agent_session_share(alpha: float, k: int) -> float:
    """Share of sessions that are an agent's when a share α of shoppers send agents with K
    sessions each: αK / (αK + 1 − α)."""
    sessions = alpha * k + (1.0 - alpha)
    return 0.0 if sessions <= 0 else alpha * k / sessions
