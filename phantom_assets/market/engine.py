"""One market v2 step: session quotes, agents' best of K, purchases and every measured quantity,
for C candidate (α, K) pairs under common random numbers (DESIGN §5).

A step's randomness is drawn once (`draw_step`), independently of α, K and the action, so every
candidate and every action sees the same shoppers (pitfall §10.4). Under common random numbers a
shopper's outcome depends on the candidate only through its class (u < α) and, for an agent, K, so
the compiled step (`_step_totals`) quotes each shopper once as a human and once as an agent with
K_max sessions (keeping the running best of the first k), then adds the version each candidate
sees to that candidate's totals. Compiled because a step is ~100 shoppers × (1 + K_max) sessions:
as numpy it was ~80 small array calls whose dispatch cost more than their arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numba import njit

from phantom_assets.market.bank import ChainBank
from phantom_assets.market.quoting import markup_factor, quote


class Column(IntEnum):
    """Per-step totals, in this column order (a step's totals append the demand proxy per
    product)."""

    REVENUE = 0
    PROFIT = 1  # Σ (p − p_low) over purchases
    HUMAN_PURCHASES = 2
    AGENT_PURCHASES = 3
    HUMAN_PREMIUM = 4  # Σ (p − p_min) over human purchases: COI_H = this / human purchases
    AGENT_PREMIUM = 5
    LEAK = 6  # Σ over agent purchases of (an equally engaged human's expected quote − price paid)
    SCORE_SUM = 7  # Σ f over the step's sessions (what the shop observes)
    SESSIONS = 8
    LOW_ENGAGEMENT_PURCHASES = 9  # purchases in sessions with s < s0
    HUMAN_OVERPAY = 10  # extra paid by humans who still buy, vs δ = 0 (same draws)
    HUMAN_LOST = 11  # human purchases lost vs δ = 0
    HUMAN_LOST_SPEND = 12  # what those lost purchases would have paid at δ = 0
    HUMAN_SPEND_UNDEFENDED = 13  # what humans would have spent at δ = 0
    HUMAN_FLAGGED = 14  # human sessions the detector quoted up (δ·f·s_ref > s)
    AGENT_FLAGGED = 15  # agent sessions the detector quoted up
    AGENTS = 16


STEP_COLUMNS: tuple[str, ...] = tuple(column.name.lower() for column in Column)
_N_COLUMNS = len(STEP_COLUMNS)  # a global int: a compile-time constant of the compiled step
COLUMN = {name: i for i, name in enumerate(STEP_COLUMNS)}
DETECTOR_MODES: tuple[str, ...] = ("fitted", "permuted")
"""`fitted`: quotes use each session's own f; `permuted`: the detector-value ablation, every
session gets the f of a random session of the same step's class mix (same law, no information)."""


class StepDraws(NamedTuple):
    """The common random numbers of one step (N shoppers, agents with up to K_max sessions).

    Attributes:
        u_agent: (N,) a shopper is an agent under candidate α iff u_agent < α.
        product: (N,) the product each shopper wants.
        z: (N,) standard normals; valuation v = anchor of the product · (μ_Y + σ_Y·z).
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
    rng: np.random.Generator,
    n: int,
    product_cdf: np.ndarray,
    k_max: int,
    bank_sizes: tuple[int, int],
) -> StepDraws:
    """Draw a step's common random numbers: one block of uniforms and one of normals, in a fixed
    layout (for reproducibility and speed). A shopper wants the first product whose cumulative
    weight (`MarketSpec.product_cdf`) exceeds its uniform draw."""
    u = rng.random((4 + 2 * k_max, n))
    # Row blocks of u: agent share, product, human chain, human noise, k_max agent chains, k_max
    # agent noises; indices are scaled in place (u is this step's own array).
    u[2] *= bank_sizes[0]
    u[4 : 4 + k_max] *= bank_sizes[1]
    return StepDraws(
        u_agent=u[0],
        product=np.searchsorted(product_cdf, u[1], side="right"),
        z=rng.standard_normal(n),
        human_chain=u[2].astype(np.int64),
        human_noise=2.0 * u[3] - 1.0,
        agent_chain=u[4 : 4 + k_max].T.astype(np.int64),
        agent_noise=2.0 * u[4 + k_max :].T - 1.0,
    )


class StepTables(NamedTuple):
    """What a step at detector strength δ reads per chain: each class's (chains, 4) table of
    (engagement s, score f, demand weight, g(s_eff) at δ) -- one row per chain, cache-line
    aligned, because a step reads ~1,700 chains at random and two banks' tables outgrow the
    core's cache -- the human chains' g at δ = 0 (the harm's reference quote) and the human mean
    of g (an equally engaged human's expected markup factor: the leak's reference quote is
    base·(1 + m·human_reference))."""

    human: np.ndarray
    agent: np.ndarray
    human_g_undefended: np.ndarray
    human_reference: float


def _aligned_rows(columns: tuple[np.ndarray, ...]) -> np.ndarray:
    """The columns side by side as a C-contiguous (rows, len(columns)) float64 table whose
    first row starts on a 64-byte boundary (so a 4-column row never straddles cache lines)."""
    rows = np.column_stack(columns)
    buffer = np.empty(rows.size + 8)
    start = (-buffer.ctypes.data % 64) // 8
    table = buffer[start : start + rows.size].reshape(rows.shape)
    table[...] = rows
    table.setflags(write=False)
    return table


class MarketConstants(NamedTuple):
    """The market's scalar constants a step needs (in the compiled step's order); valuations are
    multiples of the wanted product's anchor."""

    noise: float
    s0: float
    s_ref: float
    mu_human: float
    sigma_human: float
    mu_agent: float
    sigma_agent: float


@njit(cache=True)
def _session_markup(s: float, f: float, lift: float, s0: float) -> float:
    """g(s_eff) of a session with engagement s and score f at lift = δ·s_ref:
    `s_eff = max(s, lift·f)` (the session is flagged, quoted up, iff lift·f > s)."""
    return markup_factor(max(s, lift * f), s0)


@njit(cache=True)
def _markup_table(engagement: np.ndarray, score: np.ndarray, lift: float, s0: float) -> np.ndarray:
    g = np.empty(engagement.size)
    for i in range(engagement.size):
        g[i] = _session_markup(engagement[i], score[i], lift, s0)
    return g


@dataclass(frozen=True)
class Engine:
    """The shop's quoting rule and the market's constants a step needs (from a `MarketSpec`).

    Attributes:
        anchor: (P,) anchor prices.
        p_low, p_high: (P,) quote bounds per product (p_low: the marginal cost).
        noise: w, quote-noise half-width.
        s0: engagement scale of g(s) = 1 − exp(−s/s0).
        s_ref: engagement a fully flagged session is quoted as.
        mu, sigma: (human, agent) valuation laws.
        banks: (human, agent) chain banks.
    """

    anchor: np.ndarray
    p_low: np.ndarray
    p_high: np.ndarray
    noise: float
    s0: float
    s_ref: float
    mu: tuple[float, float]
    sigma: tuple[float, float]
    banks: tuple[ChainBank, ChainBank]
    _tables: dict[float, StepTables] = field(default_factory=dict, repr=False)

    @cached_property
    def constants(self) -> MarketConstants:
        """The scalar constants, as the compiled step takes them."""
        return MarketConstants(float(self.noise), float(self.s0), float(self.s_ref),
                               float(self.mu[0]), float(self.sigma[0]), float(self.mu[1]),
                               float(self.sigma[1]))  # fmt: skip

    def step_tables(self, delta: float) -> StepTables:
        """Both banks' per-chain tables at detector strength δ (cached: steps only read them)."""
        if delta not in self._tables:
            lift = float(delta) * self.s_ref
            g = [_markup_table(bank.engagement, bank.score, lift, self.s0) for bank in self.banks]
            human, agent = (_aligned_rows((bank.engagement, bank.score, bank.weight, g_bank))
                            for bank, g_bank in zip(self.banks, g, strict=True))  # fmt: skip
            undefended = self.step_tables(0.0).human_g_undefended if delta else g[0]
            self._tables[delta] = StepTables(human, agent, undefended, float(g[0].mean()))
        return self._tables[delta]


@njit(cache=True, boundscheck=True)
def _step_totals(
    level: float, markup: float, delta: float, constants: tuple, prices: tuple,
    draws: tuple, alphas: np.ndarray, ks: np.ndarray, tables: tuple,
    decoys: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:  # fmt: skip
    """(C, len(Column) + P) totals of one step for every candidate (α_c, K_c); see
    `simulate_step`. `constants`, `draws` and `tables` are the fields of `MarketConstants`,
    `StepDraws` and `StepTables` as plain tuples, `prices` the (P,) anchors, p_low and p_high:
    numba's on-disk cache pickles argument types,
    and a NamedTuple's type names its class, so renaming one would break loading a stale cache.
    Bounds-checked: a malformed draw raises IndexError instead of reading past an array."""
    w, s0, s_ref, mu_human, sigma_human, mu_agent, sigma_agent = constants
    anchor, lows, highs = prices
    u_agent, products, z, human_chains, human_noise, agent_chains, agent_noise = draws
    human, agent, human_g_undefended, human_reference = tables
    n, k_max = agent_chains.shape
    totals = np.zeros((alphas.size, _N_COLUMNS + anchor.size))
    # The shopper as an agent, after its first k + 1 sessions: best quote, the chain quoted it
    # (the first lowest, as argmin), and the running sums of score, demand weight and flags.
    best, best_chain = np.empty(k_max), np.empty(k_max, np.int64)
    score_sum, weight_sum, flagged_sum = np.empty(k_max), np.empty(k_max), np.empty(k_max)
    lift = delta * s_ref
    for i in range(n):
        product = products[i]
        base = anchor[product] * level
        p_low, p_high = lows[product], highs[product]
        floor = max(p_low, base * (1.0 - w))
        # The shopper as a human: one session, quoted at δ and (human harm) at δ = 0.
        human_chain = human_chains[i]
        s_human, f_human = human[human_chain, 0], human[human_chain, 1]
        weight_human, g_human = human[human_chain, 2], human[human_chain, 3]
        if decoys is not None:
            f_human = decoys[0][i]
            g_human = _session_markup(s_human, f_human, lift, s0)
        flagged_human = lift * f_human > s_human
        u = human_noise[i]
        q_human = quote(base, markup, g_human, w, u, p_low, p_high)
        g_undefended = human_g_undefended[human_chain]
        q_undefended = quote(base, markup, g_undefended, w, u, p_low, p_high)
        v_human = anchor[product] * (mu_human + sigma_human * z[i])
        buys = 1.0 if v_human >= q_human else 0.0
        buys_undefended = 1.0 if v_human >= q_undefended else 0.0
        lost = max(buys_undefended - buys, 0.0)
        # The shopper as an agent: K_max clean sessions.
        running, running_chain = np.inf, 0
        f_total = weight_total = flagged_total = 0.0
        for j in range(k_max):
            chain = agent_chains[i, j]
            s, f, weight, g = agent[chain, 0], agent[chain, 1], agent[chain, 2], agent[chain, 3]
            if decoys is not None:
                f = decoys[1][i, j]
                g = _session_markup(s, f, lift, s0)
            q = quote(base, markup, g, w, agent_noise[i, j], p_low, p_high)
            if q < running:
                running, running_chain = q, chain
            f_total += f
            weight_total += weight
            flagged_total += lift * f > s
            best[j], best_chain[j] = running, running_chain
            score_sum[j], weight_sum[j], flagged_sum[j] = f_total, weight_total, flagged_total
        v_agent = anchor[product] * (mu_agent + sigma_agent * z[i])
        reference = base * (1.0 + markup * human_reference)
        for c in range(alphas.size):
            row = totals[c]
            if u_agent[i] < alphas[c]:
                k = ks[c] - 1  # index of the K-th session
                price = best[k]
                bought = 1.0 if v_agent >= price else 0.0
                row[Column.REVENUE] += price * bought
                row[Column.PROFIT] += (price - p_low) * bought
                row[Column.AGENT_PURCHASES] += bought
                row[Column.AGENT_PREMIUM] += (price - floor) * bought
                row[Column.LEAK] += (reference - price) * bought
                row[Column.SCORE_SUM] += score_sum[k]
                row[Column.SESSIONS] += ks[c]
                if agent[best_chain[k], 0] < s0:
                    row[Column.LOW_ENGAGEMENT_PURCHASES] += bought
                row[Column.AGENT_FLAGGED] += flagged_sum[k]
                row[Column.AGENTS] += 1.0
                row[_N_COLUMNS + product] += weight_sum[k]
            else:
                row[Column.REVENUE] += q_human * buys
                row[Column.PROFIT] += (q_human - p_low) * buys
                row[Column.HUMAN_PURCHASES] += buys
                row[Column.HUMAN_PREMIUM] += (q_human - floor) * buys
                row[Column.SCORE_SUM] += f_human
                row[Column.SESSIONS] += 1.0
                if s_human < s0:
                    row[Column.LOW_ENGAGEMENT_PURCHASES] += buys
                row[Column.HUMAN_OVERPAY] += (q_human - q_undefended) * buys
                row[Column.HUMAN_LOST] += lost
                row[Column.HUMAN_LOST_SPEND] += q_undefended * lost
                row[Column.HUMAN_SPEND_UNDEFENDED] += q_undefended * buys_undefended
                row[Column.HUMAN_FLAGGED] += flagged_human
                row[_N_COLUMNS + product] += weight_human
    return totals


def simulate_step(
    engine: Engine,
    action: tuple[float, float, float],
    draws: StepDraws,
    alphas: np.ndarray,
    ks: np.ndarray,
    decoy_scores: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """One step for every candidate (α_c, K_c): a (C, len(STEP_COLUMNS) + P) array, row c the
    candidate's `STEP_COLUMNS` totals, then its demand proxy (Σ chain demand weights of the
    sessions) per product.

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
    alphas = np.asarray(alphas, dtype=np.float64)
    ks = np.asarray(ks, dtype=np.int64)
    k_max = draws.agent_chain.shape[1]
    if alphas.shape != ks.shape or alphas.ndim != 1:
        raise ValueError(f"alphas and ks must be 1-D of one length, got {alphas.shape}, {ks.shape}")
    if ks.size and not 1 <= ks.min() <= ks.max() <= k_max:
        raise ValueError(f"ks must lie in [1, K_max = {k_max}] of the draws, got {ks.tolist()}")
    prices = (engine.anchor, engine.p_low, engine.p_high)
    return _step_totals(float(level), float(m), float(delta), tuple(engine.constants), prices,
                        tuple(draws), alphas, ks, tuple(engine.step_tables(delta)),
                        decoy_scores)  # fmt: skip


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
