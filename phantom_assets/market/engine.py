"""One market v2 step: session quotes, agents' best of K, purchases and every measured quantity,
for C candidate (α, K) pairs under common random numbers (DESIGN §5).

A step's randomness is drawn once (`draw_step`), independently of α, K and the action, so every
candidate and every action sees the same shoppers (pitfall §10.4). Under common random numbers a
shopper's outcome depends on the candidate only through its class (u < α) and, for an agent, K, so
both versions of every shopper are computed once and a candidate's totals are
`human totals + is_agent @ (agent_K − human)`: exact sums, vectorized over shoppers and candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from phantom_assets.market.bank import ChainBank
from phantom_assets.market.quoting import clip_quotes, noise_factor, quotes_unchecked

STEP_COLUMNS: tuple[str, ...] = (
    "revenue",
    "profit",
    "human_purchases",
    "agent_purchases",
    "human_premium",  # Σ (p − p_min) over human purchases: COI_H = this / human purchases
    "agent_premium",
    "leak",  # Σ over agent purchases of (an equally engaged human's expected quote − price paid)
    "score_sum",  # Σ f over the step's sessions (what the shop observes)
    "sessions",
    "low_engagement_purchases",  # purchases in sessions with s < s0
    "human_overpay",  # extra paid by humans who still buy, vs δ = 0 (same draws)
    "human_lost",  # human purchases lost vs δ = 0
    "human_lost_spend",  # what those lost purchases would have paid at δ = 0
    "human_spend_undefended",  # what humans would have spent at δ = 0
    "human_flagged",  # human sessions the detector quoted up (δ·f·s_ref > s)
    "agent_flagged",  # agent sessions the detector quoted up
    "agents",
)
"""Per-step totals, in this column order (`StepResult.totals` appends the demand proxy per
product)."""
COLUMN = {name: i for i, name in enumerate(STEP_COLUMNS)}
DETECTOR_MODES: tuple[str, ...] = ("fitted", "permuted")
"""`fitted`: quotes use each session's own f; `permuted`: the detector-value ablation, every
session gets the f of a random session of the same step's class mix (same law, no information)."""


class StepDraws(NamedTuple):
    """The common random numbers of one step (N shoppers, agents with up to K_max sessions).

    Attributes:
        u_agent: (N,) a shopper is an agent under candidate α iff u_agent < α.
        product: (N,) the product each shopper wants.
        z: (N,) standard normals; valuation v = μ_Y + σ_Y·z.
        human_chain: (N,) index into the human bank of the shopper's session as a human.
        human_noise: (N,) quote noise u ∈ [−1, 1) of that session.
        agent_chain: (N, K_max) indices into the agent bank of its clean sessions as an agent.
        agent_noise: (N, K_max) their quote noise.
    """

    u_agent: np.ndarray
    product: np.ndarray
    z: np.ndarray
    human_chain: np.ndarray
    human_noise: np.ndarray
    agent_chain: np.ndarray
    agent_noise: np.ndarray


def draw_step(
    rng: np.random.Generator, n: int, n_products: int, k_max: int, bank_sizes: tuple[int, int]
) -> StepDraws:
    """Draw a step's common random numbers: one block of uniforms and one of normals, in a fixed
    layout (for reproducibility and speed)."""
    u = rng.random((4 + 2 * k_max, n))
    # Row blocks of u: agent share, product, human chain, human noise, k_max agent chains, k_max
    # agent noises; indices are scaled in place (u is this step's own array).
    u[1] *= n_products
    u[2] *= bank_sizes[0]
    u[4 : 4 + k_max] *= bank_sizes[1]
    return StepDraws(
        u_agent=u[0],
        product=u[1].astype(np.int64),
        z=rng.standard_normal(n),
        human_chain=u[2].astype(np.int64),
        human_noise=2.0 * u[3] - 1.0,
        agent_chain=u[4 : 4 + k_max].T.astype(np.int64),
        agent_noise=2.0 * u[4 + k_max :].T - 1.0,
    )


class BankMarkups(NamedTuple):
    """Every bank chain's markup factor g(s_eff) and detector flag at one δ, per class, and the
    human mean of g: an equally engaged human's expected markup factor (the leak's reference quote
    is base·(1 + m·human_reference))."""

    human_g: np.ndarray
    human_flagged: np.ndarray
    agent_g: np.ndarray
    agent_flagged: np.ndarray
    human_reference: float


@dataclass(frozen=True)
class Engine:
    """The shop's quoting rule and the market's constants a step needs (from a `MarketSpec`).

    Attributes:
        anchor: (P,) anchor prices.
        p_low, p_high: quote bounds.
        noise: w, quote-noise half-width.
        s0: engagement scale of g(s) = 1 − exp(−s/s0).
        s_ref: engagement a fully flagged session is quoted as.
        mu, sigma: (human, agent) valuation laws.
        banks: (human, agent) chain banks.
    """

    anchor: np.ndarray
    p_low: float
    p_high: float
    noise: float
    s0: float
    s_ref: float
    mu: tuple[float, float]
    sigma: tuple[float, float]
    banks: tuple[ChainBank, ChainBank]
    _tables: dict[float, BankMarkups] = field(default_factory=dict, repr=False)

    @cached_property
    def agent_score_weight(self) -> np.ndarray:
        """Per agent-bank chain, score + 1j·weight: the two statistics every agent session adds
        to a step's totals, packed in one complex128 so a step fetches both with one gather
        (random gathers into the chain bank mostly miss the cache)."""
        bank = self.banks[1]
        return bank.score + 1j * bank.weight

    @cached_property
    def agent_low_engagement(self) -> np.ndarray:
        """Per agent-bank chain: engagement below s0 (a low-engagement purchase if bought in)."""
        return self.banks[1].engagement < self.s0

    def markup_factor(self, s: np.ndarray) -> np.ndarray:
        """g(s) = 1 − exp(−s/s0)."""
        return -np.expm1(-s / self.s0)

    def bank_markups(self, delta: float) -> BankMarkups:
        """Every bank chain's g(s_eff) and flag at detector strength δ (cached: steps only gather
        from these)."""
        if delta not in self._tables:
            (human_g, human_flagged), (agent_g, agent_flagged) = (
                self.session_markups(delta, bank.engagement, bank.score) for bank in self.banks
            )
            self._tables[delta] = BankMarkups(human_g, human_flagged, agent_g, agent_flagged,
                                              float(human_g.mean()))  # fmt: skip
        return self._tables[delta]

    def prices(
        self, base: np.ndarray, m: float, g: np.ndarray | None, noise: np.ndarray
    ) -> np.ndarray:
        """Quotes `clip(base·(1 + m·g)·noise, p_low, p_high)` for markup factors g = g(s_eff) and
        noise factors 1 + w·u; with m = 0 the factor is exactly 1 and g is not needed (None)."""
        if not m:
            return clip_quotes(base * noise, self.p_low, self.p_high)
        return quotes_unchecked(base, m, g, noise, self.p_low, self.p_high)

    def session_markups(
        self, delta: float, engagement: np.ndarray, score: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(g(s_eff), flagged) of sessions with engagement s and (decoy) score f:
        `s_eff = max(s, δ·f·s_ref)`, flagged = δ·f·s_ref > s."""
        lifted = delta * self.s_ref * score
        return self.markup_factor(np.maximum(engagement, lifted)), lifted > engagement


class AgentQuotes(NamedTuple):
    """The shopper-as-agent quantities shared by every K.

    Attributes:
        quotes: (N, K_max) each clean session's quote.
        chain: (N, K_max) each clean session's index in the agent bank.
        flagged: (N, K_max) the detector quoted the session up (δ·f·s_ref > s); None = read
            it from the engine's bank table at δ when a block needs it.
        decoy_score: (N, K_max) the sessions' decoy f in the ablation, None = their own f.
        valuation: (N,) the shopper's valuation as an agent.
        reference: (N,) an equally engaged human's expected quote, base·(1 + m·ḡ_H(δ)).
        floor: (N,) the engine's lowest quote p_min for the shopper's product.
    """

    quotes: np.ndarray
    chain: np.ndarray
    flagged: np.ndarray | None
    delta: float
    decoy_score: np.ndarray | None
    valuation: np.ndarray
    reference: np.ndarray
    floor: np.ndarray


class StepResult:
    """One step under every candidate (α_c, K_c): profit and leak (the reward's ingredients) for
    all candidates, full totals (`STEP_COLUMNS` + demand per product) of any one on demand.

    Per-shopper quantities are (columns, N) row blocks of the shopper as a human and as an agent
    with K sessions; a candidate's totals are `human.sum(1) + (agent_K − human) @ is_agent_c`. Only
    the executed candidate's agent block is ever built in full.
    """

    def __init__(
        self,
        engine: Engine,
        human: np.ndarray,
        agent: AgentQuotes,
        u_agent: np.ndarray,
        alphas: np.ndarray,
        ks: np.ndarray,
        product: np.ndarray,
    ) -> None:
        """Best-of-K purchases for each candidate K and every candidate's profit and leak."""
        self._engine, self._human, self._agent, self._product = engine, human, agent, product
        self._ks = np.asarray(ks)
        self._is_agent = u_agent[None, :] < alphas[:, None]
        is_agent = self._is_agent.astype(float)  # 0/1 weights (cast once, used twice)
        lowest = np.minimum.accumulate(agent.quotes, axis=1)  # best of the first k, every k
        self._best = lowest[:, self._ks - 1]  # (N, C)
        self._buy = (agent.valuation[:, None] >= self._best).astype(float)
        human_profit = human[COLUMN["profit"]]
        gain = (self._best - engine.p_low) * self._buy - human_profit[:, None]
        self.profit = human_profit.sum() + (is_agent * gain.T).sum(axis=1)
        leak = (agent.reference[:, None] - self._best) * self._buy
        self.leak = (is_agent * leak.T).sum(axis=1)

    def _agent_block(self, candidate: int) -> np.ndarray:
        """The (columns + 1, N) per-shopper block of every shopper as an agent with the
        candidate's K."""
        agent, col, engine = self._agent, COLUMN, self._engine
        k = int(self._ks[candidate])
        best, buy = self._best[:, candidate], self._buy[:, candidate]
        chains = agent.chain[:, :k]
        chosen = chains[np.arange(best.size), np.argmin(agent.quotes[:, :k], axis=1)]
        if agent.decoy_score is None:  # score and weight: one gather, one complex sum
            score_weight = engine.agent_score_weight[chains].sum(axis=1)
            score_sum, weight_sum = score_weight.real, score_weight.imag
        else:
            score_sum = agent.decoy_score[:, :k].sum(axis=1)
            weight_sum = engine.banks[1].weight[chains].sum(axis=1)
        block = np.zeros(self._human.shape)
        np.multiply(best, buy, out=block[col["revenue"]])
        np.multiply(best - engine.p_low, buy, out=block[col["profit"]])
        block[col["agent_purchases"]] = buy
        np.multiply(best - agent.floor, buy, out=block[col["agent_premium"]])
        np.multiply(agent.reference - best, buy, out=block[col["leak"]])
        block[col["score_sum"]] = score_sum
        block[col["sessions"]] = k
        np.multiply(buy, engine.agent_low_engagement[chosen],
                    out=block[col["low_engagement_purchases"]])  # fmt: skip
        if agent.delta > 0:  # at δ = 0 no session is flagged
            flagged = (engine.bank_markups(agent.delta).agent_flagged[chains]
                       if agent.flagged is None else agent.flagged[:, :k])  # fmt: skip
            block[col["agent_flagged"]] = flagged.sum(axis=1)
        block[col["agents"]] = 1.0
        block[len(STEP_COLUMNS)] = weight_sum
        return block

    def totals(self, candidate: int) -> np.ndarray:
        """(len(STEP_COLUMNS) + P,) totals of one candidate: the columns, then the demand proxy
        (Σ chain demand weights of the sessions) per product."""
        mixed = np.where(self._is_agent[candidate], self._agent_block(candidate), self._human)
        demand = np.bincount(self._product, weights=mixed[-1], minlength=self._engine.anchor.size)
        return np.concatenate([mixed[:-1].sum(axis=1), demand])


def simulate_step(
    engine: Engine,
    action: tuple[float, float, float],
    draws: StepDraws,
    alphas: np.ndarray,
    ks: np.ndarray,
    decoy_scores: tuple[np.ndarray, np.ndarray] | None = None,
) -> StepResult:
    """One step for every candidate (α_c, K_c).

    Args:
        engine: quoting rule and constants.
        action: (base level, markup m, detector strength δ).
        draws: the step's common random numbers (K_max ≥ max(ks)).
        alphas: (C,) candidate agent shares of shoppers.
        ks: (C,) candidate clean sessions per agent.
        decoy_scores: the permuted-f ablation: ((N,) human-session f, (N, K_max) agent-session f)
            used instead of the sessions' own f; None = the fitted detector.
    """
    level, m, delta = action
    human, agent = engine.banks
    n = draws.z.size
    col = COLUMN
    base = engine.anchor[draws.product] * level
    floor = np.maximum(engine.p_low, base * (1.0 - engine.noise))
    tables = engine.bank_markups(delta)
    # The shopper as a human: one session.
    chain_h = draws.human_chain
    s_h = human.engagement[chain_h]
    noise_h = noise_factor(engine.noise, draws.human_noise)
    if decoy_scores is None:
        f_h, flagged_h = human.score[chain_h], None  # flags: from the bank table if δ > 0
        g_h = tables.human_g[chain_h] if m else None  # gathered only when quotes use it
    else:
        f_h = decoy_scores[0]
        g_h, flagged_h = engine.session_markups(delta, s_h, f_h)
    q_h = engine.prices(base, m, g_h, noise_h)
    v_h = engine.mu[0] + engine.sigma[0] * draws.z
    buy_h = (v_h >= q_h).astype(float)  # 0/1: the rows below multiply by it
    as_human = np.zeros((len(STEP_COLUMNS) + 1, n))  # + the session's demand weight
    np.multiply(q_h, buy_h, out=as_human[col["revenue"]])
    np.multiply(q_h - engine.p_low, buy_h, out=as_human[col["profit"]])
    as_human[col["human_purchases"]] = buy_h
    np.multiply(q_h - floor, buy_h, out=as_human[col["human_premium"]])
    as_human[col["score_sum"]] = f_h
    as_human[col["sessions"]] = 1.0
    np.multiply(buy_h, s_h < engine.s0, out=as_human[col["low_engagement_purchases"]])
    if delta > 0:  # human harm: the same session quoted at δ = 0 (q_0), same draws
        g_0 = engine.bank_markups(0.0).human_g[chain_h] if m else None
        q_0 = engine.prices(base, m, g_0, noise_h)
        buy_0 = (v_h >= q_0).astype(float)
        lost = buy_0 - buy_h
        np.maximum(lost, 0.0, out=lost)  # bought at δ = 0, not at δ
        np.multiply(q_h - q_0, buy_h, out=as_human[col["human_overpay"]])
        as_human[col["human_lost"]] = lost
        np.multiply(q_0, lost, out=as_human[col["human_lost_spend"]])
        np.multiply(q_0, buy_0, out=as_human[col["human_spend_undefended"]])
        as_human[col["human_flagged"]] = (tables.human_flagged[chain_h] if flagged_h is None
                                          else flagged_h)  # fmt: skip
    else:  # δ = 0 is the undefended engine: no overpay, no lost purchase, no flag
        as_human[col["human_spend_undefended"]] = as_human[col["revenue"]]
    as_human[len(STEP_COLUMNS)] = human.weight[chain_h]
    # The shopper as an agent: K clean sessions, buys at the lowest quote.
    chain = draws.agent_chain
    noise_a = noise_factor(engine.noise, draws.agent_noise)
    decoy_a = None if decoy_scores is None else decoy_scores[1]
    if decoy_a is None:
        g_a, flagged_a = tables.agent_g[chain] if m else None, None
    else:
        g_a, flagged_a = engine.session_markups(delta, agent.engagement[chain], decoy_a)
    as_agent = AgentQuotes(
        quotes=engine.prices(base[:, None], m, g_a, noise_a), chain=chain,
        flagged=flagged_a, delta=delta, decoy_score=decoy_a,
        valuation=engine.mu[1] + engine.sigma[1] * draws.z,
        reference=base * (1.0 + m * tables.human_reference), floor=floor,
    )  # fmt: skip
    return StepResult(engine, as_human, as_agent, draws.u_agent, alphas, ks, draws.product)


def decoy_scores(
    rng: np.random.Generator, banks: tuple[ChainBank, ChainBank], agent_share: float,
    shape: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Scores for the permuted-f ablation: each of the (N, 1 + K_max) sessions gets the f of a
    random chain of the agent bank with probability `agent_share` (the step's share of agent
    *sessions*), else of the human bank: the same law as the step's own scores, independent of
    the session. Returns (human-session f (N,), agent-session f (N, K_max))."""
    human, agent = banks
    from_agent = rng.random(shape) < agent_share
    picks = rng.random(shape)
    scores = np.where(
        from_agent,
        agent.score[(picks * agent.size).astype(np.int64)],
        human.score[(picks * human.size).astype(np.int64)],
    )
    return scores[:, 0], scores[:, 1:]


def agent_session_share(alpha: float, k: int) -> float:
    """Share of sessions that are an agent's when a share α of shoppers send agents with K
    sessions each: αK / (αK + 1 − α)."""
    sessions = alpha * k + (1.0 - alpha)
    return 0.0 if sessions <= 0 else alpha * k / sessions
