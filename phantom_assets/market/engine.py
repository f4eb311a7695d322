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
from typing import NamedTuple

import numpy as np

from phantom_assets.market.bank import ChainBank
from phantom_assets.market.quoting import quotes_from_factor, quotes_unchecked

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


@dataclass(frozen=True)
class StepDraws:
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
    return StepDraws(
        u_agent=u[0],
        product=(u[1] * n_products).astype(np.int64),
        z=rng.standard_normal(n),
        human_chain=(u[2] * bank_sizes[0]).astype(np.int64),
        human_noise=2.0 * u[3] - 1.0,
        agent_chain=(u[4 : 4 + k_max].T * bank_sizes[1]).astype(np.int64),
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
    _agent_factors: dict[tuple[float, float], np.ndarray] = field(default_factory=dict, repr=False)

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

    def agent_quote_factors(self, m: float, delta: float) -> np.ndarray:
        """Per agent-bank chain (cached): its quote factor 1 + m·g(s_eff) at (m, δ), so a step
        gathers an agent's K factors instead of computing them."""
        key = (m, delta)
        if key not in self._agent_factors:
            self._agent_factors[key] = 1.0 + m * self.bank_markups(delta).agent_g
        return self._agent_factors[key]

    def quote(self, base: np.ndarray, m: float, g: np.ndarray, u: np.ndarray) -> np.ndarray:
        """`clip(base·(1 + m·g)·(1 + w·u), p_low, p_high)` for markup factors g = g(s_eff)."""
        return quotes_unchecked(base, m, g, self.noise, u, self.p_low, self.p_high)

    def session_markups(
        self, delta: float, engagement: np.ndarray, score: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(g(s_eff), flagged) of sessions with engagement s and (decoy) score f:
        `s_eff = max(s, δ·f·s_ref)`, flagged = δ·f·s_ref > s."""
        lifted = delta * self.s_ref * score
        return self.markup_factor(np.maximum(engagement, lifted)), lifted > engagement


@dataclass(frozen=True)
class AgentQuotes:
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
        lowest = np.minimum.accumulate(agent.quotes, axis=1)  # best of the first k, every k
        self._best = lowest[:, self._ks - 1]  # (N, C)
        self._buy = agent.valuation[:, None] >= self._best
        human_profit = human[COLUMN["profit"]]
        gain = (self._best - engine.p_low) * self._buy - human_profit[:, None]
        self.profit = human_profit.sum() + (self._is_agent * gain.T).sum(axis=1)
        leak = (agent.reference[:, None] - self._best) * self._buy
        self.leak = (self._is_agent * leak.T).sum(axis=1)

    def _agent_block(self, candidate: int) -> np.ndarray:
        agent, col, bank = self._agent, COLUMN, self._engine.banks[1]
        k = int(self._ks[candidate])
        best, buy = self._best[:, candidate], self._buy[:, candidate]
        rows = np.arange(best.size)
        session = np.argmin(agent.quotes[:, :k], axis=1)
        chains = agent.chain[:, :k]
        score = bank.score[chains] if agent.decoy_score is None else agent.decoy_score[:, :k]
        block = np.zeros_like(self._human)
        block[col["revenue"]] = best * buy
        block[col["profit"]] = (best - self._engine.p_low) * buy
        block[col["agent_purchases"]] = buy
        block[col["agent_premium"]] = (best - agent.floor) * buy
        block[col["leak"]] = (agent.reference - best) * buy
        block[col["score_sum"]] = score.sum(axis=1)
        block[col["sessions"]] = k
        low = bank.engagement[agent.chain[rows, session]] < self._engine.s0
        block[col["low_engagement_purchases"]] = buy & low
        flagged = (self._engine.bank_markups(agent.delta).agent_flagged[chains]
                   if agent.flagged is None else agent.flagged[:, :k])  # fmt: skip
        block[col["agent_flagged"]] = flagged.sum(axis=1)
        block[col["agents"]] = 1.0
        block[len(STEP_COLUMNS)] = bank.weight[chains].sum(axis=1)
        return block

    def totals(self, candidate: int) -> np.ndarray:
        """(len(STEP_COLUMNS) + P,) totals of one candidate: the columns, then the demand proxy
        (Σ chain demand weights of the sessions) per product."""
        mask = self._is_agent[candidate]
        mixed = np.where(mask, self._agent_block(candidate), self._human)
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
    s_h = human.engagement[draws.human_chain]
    if decoy_scores is None:
        f_h, g_h = human.score[draws.human_chain], tables.human_g[draws.human_chain]
        flagged_h = tables.human_flagged[draws.human_chain]
    else:
        f_h = decoy_scores[0]
        g_h, flagged_h = engine.session_markups(delta, s_h, f_h)
    q_h = engine.quote(base, m, g_h, draws.human_noise)
    q_0 = q_h  # the same session's quote at δ = 0 (human harm is measured against it)
    if delta > 0:
        q_0 = engine.quote(base, m, engine.bank_markups(0.0).human_g[draws.human_chain],
                           draws.human_noise)  # fmt: skip
    v_h = engine.mu[0] + engine.sigma[0] * draws.z
    buy_h, buy_0 = v_h >= q_h, v_h >= q_0
    as_human = np.zeros((len(STEP_COLUMNS) + 1, n))  # + the session's demand weight
    as_human[col["revenue"]] = q_h * buy_h
    as_human[col["profit"]] = (q_h - engine.p_low) * buy_h
    as_human[col["human_purchases"]] = buy_h
    as_human[col["human_premium"]] = (q_h - floor) * buy_h
    as_human[col["score_sum"]] = f_h
    as_human[col["sessions"]] = 1.0
    as_human[col["low_engagement_purchases"]] = buy_h & (s_h < engine.s0)
    as_human[col["human_overpay"]] = (q_h - q_0) * buy_h
    lost = buy_0 & ~buy_h
    as_human[col["human_lost"]] = lost
    as_human[col["human_lost_spend"]] = q_0 * lost
    as_human[col["human_spend_undefended"]] = q_0 * buy_0
    as_human[col["human_flagged"]] = flagged_h
    as_human[len(STEP_COLUMNS)] = human.weight[draws.human_chain]
    # The shopper as an agent: K clean sessions, buys at the lowest quote.
    chain = draws.agent_chain
    decoy_a = None if decoy_scores is None else decoy_scores[1]
    if decoy_a is None:  # 1 + m·g gathered from the engine's cache
        factor, flagged_a = engine.agent_quote_factors(m, delta)[chain], None
        quotes = quotes_from_factor(base[:, None], factor, engine.noise, draws.agent_noise,
                                    engine.p_low, engine.p_high)  # fmt: skip
    else:
        g_a, flagged_a = engine.session_markups(delta, agent.engagement[chain], decoy_a)
        quotes = engine.quote(base[:, None], m, g_a, draws.agent_noise)
    as_agent = AgentQuotes(
        quotes=quotes, chain=chain,
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
