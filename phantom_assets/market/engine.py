"""One market step: session quotes, agents' best of K, purchases and every measured quantity,
for C candidate (α, K) pairs under common random numbers (docs/method.md#the-market).

A shopper in the market (u_market < π) values its product at anchor·(μ + β·g_v(s) + σ·z), s the
engagement of its session as a human (g_v with the demand's scale): engagement reveals willingness
to pay. As an agent it carries its principal's valuation (`config.AGENT_VALUATIONS`).

Under common random numbers (`market.draws`) a shopper's outcome depends on the candidate only
through its class (u < α) and, for an agent, K, so the compiled step (`_step_totals`) quotes each
shopper once as a human and once as an agent with K_max sessions (keeping the running best of
the first k), then adds the version each candidate sees to that candidate's totals. The
detector's quote-time rule: a session whose prefix f exceeds the threshold τ (set for a human
false-positive rate) is flagged and quoted as if it had engaged s_eff = max(s, δ·s_ref). Human
harm is measured against a reference response (the best undefended action: level and markup,
δ = 0) on the same shoppers. Compiled because a step is ~100 shoppers × (1 + K_max) sessions: as
numpy it was ~80 small array calls whose dispatch cost more than their arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numba import njit

from phantom_assets.market.bank import ChainBank
from phantom_assets.market.columns import N_COLUMNS, Column
from phantom_assets.market.draws import EngagementStrata, StepDraws, engagement_strata
from phantom_assets.market.quoting import markup_factor, quote
from phantom_assets.market.world import DemandLaw


class StepTables(NamedTuple):
    """What a step at detector strength δ reads per chain: each class's (chains, 8) table of
    (engagement s, score f, demand weight, g(s_eff) at δ, g of the valuation at s, 3 × padding)
    -- one 64-byte row per chain, cache-line aligned, because a step reads ~1,700 chains at
    random and two banks' tables outgrow the core's cache -- the human chains' g at δ = 0 (the
    harm's reference quote) and the human mean of g (an equally engaged human's expected markup
    factor: the leak's reference quote is base·(1 + m·human_reference))."""

    human: np.ndarray
    agent: np.ndarray
    human_g_undefended: np.ndarray
    human_reference: float


TABLE_WIDTH = 8
"""Columns of a bank's step table: 8 float64 = one 64-byte cache line per chain."""


def _aligned_rows(columns: tuple[np.ndarray, ...]) -> np.ndarray:
    """The columns side by side, zero-padded to `TABLE_WIDTH`, as a C-contiguous float64 table
    whose first row starts on a 64-byte boundary (so a row never straddles cache lines)."""
    rows = np.zeros((columns[0].size, TABLE_WIDTH))
    rows[:, : len(columns)] = np.column_stack(columns)
    buffer = np.empty(rows.size + 8)
    start = (-buffer.ctypes.data % 64) // 8
    table = buffer[start : start + rows.size].reshape(rows.shape)
    table[...] = rows
    table.setflags(write=False)
    return table


class MarketConstants(NamedTuple):
    """The market's scalar constants a step needs (in the compiled step's order); the demand,
    which an episode draws with its replicate, is a `world.DemandLaw` beside them."""

    noise: float
    s0: float
    s_ref: float
    tau: float


@njit(cache=True)
def _quoted_up(s: float, f: float, lift: float, tau: float, markup: float) -> bool:
    """The quote-time rule moved the quote: flagged (f > τ), quoted above its own engagement
    (lift > s) and priced by engagement at all (m > 0)."""
    return f > tau and lift > s and markup > 0.0


@njit(cache=True)
def _session_markup(s: float, f: float, lift: float, tau: float, s0: float) -> float:
    """g(s_eff) of a session with engagement s and score f at lift = δ·s_ref: a session flagged
    by the threshold rule (f > τ) is quoted at s_eff = max(s, lift), any other at s."""
    return markup_factor(max(s, lift) if f > tau else s, s0)


@njit(cache=True)
def _markup_table(
    engagement: np.ndarray, score: np.ndarray, lift: float, tau: float, s0: float
) -> np.ndarray:
    g = np.empty(engagement.size)
    for i in range(engagement.size):
        g[i] = _session_markup(engagement[i], score[i], lift, tau, s0)
    return g


@dataclass(frozen=True)
class Engine:
    """The shop's quoting rule and the market's constants a step needs (from a `MarketSpec`).

    Attributes:
        anchor: (P,) anchor prices.
        p_low, p_high: (P,) quote bounds per product (p_low: the marginal cost).
        noise: w, quote-noise half-width.
        s0: engagement scale of g(s) = 1 − exp(−s/s0).
        s_ref: engagement a flagged session is quoted as (at δ = 1).
        tau: the detector's threshold on the prefix f.
        valuation_scale: s0 of the g(s) valuations rise with (the demand's).
        demand: the point estimate of the demand (an episode may draw a replicate's).
        banks: (human, agent) chain banks.
    """

    anchor: np.ndarray
    p_low: np.ndarray
    p_high: np.ndarray
    noise: float
    s0: float
    s_ref: float
    tau: float
    valuation_scale: float
    demand: DemandLaw
    banks: tuple[ChainBank, ChainBank]
    _tables: dict[float, StepTables] = field(default_factory=dict, repr=False)

    @cached_property
    def constants(self) -> MarketConstants:
        """The scalar constants, as the compiled step takes them."""
        return MarketConstants(
            float(self.noise), float(self.s0), float(self.s_ref), float(self.tau)
        )

    @cached_property
    def strata(self) -> EngagementStrata:
        """The banks' engagement strata the detector-value ablation draws decoy scores from."""
        return engagement_strata(self.banks)

    def step_tables(self, delta: float) -> StepTables:
        """Both banks' per-chain tables at detector strength δ (cached: steps only read them)."""
        if delta not in self._tables:
            lift = float(delta) * self.s_ref
            g = [
                _markup_table(bank.engagement, bank.score, lift, self.tau, self.s0)
                for bank in self.banks
            ]
            human, agent = (
                _aligned_rows(
                    (
                        bank.engagement,
                        bank.score,
                        bank.weight,
                        g_bank,
                        markup_factor(bank.engagement, self.valuation_scale),
                    )
                )
                for bank, g_bank in zip(self.banks, g, strict=True)
            )
            undefended = self.step_tables(0.0).human_g_undefended if delta else g[0]
            self._tables[delta] = StepTables(human, agent, undefended, float(g[0].mean()))
        return self._tables[delta]


@njit(cache=True, boundscheck=True)
def _step_totals(
    action: tuple,
    reference: tuple,
    constants: tuple,
    demand: tuple,
    prices: tuple,
    draws: tuple,
    alphas: np.ndarray,
    ks: np.ndarray,
    tables: tuple,
    decoys: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """(C, len(Column) + P) totals of one step for every candidate (α_c, K_c); see
    `simulate_step`. `action` is (level, markup, δ), `reference` the reference response's
    (level, markup); `constants`, `demand`, `draws` and `tables` are the fields of
    `MarketConstants`, `world.DemandLaw`, `StepDraws` and `StepTables` as plain tuples, `prices`
    the (P,) anchors, p_low and p_high: numba's on-disk cache pickles argument types, and a
    NamedTuple's type names its class, so renaming one would break loading a stale cache.
    Bounds-checked: a malformed draw raises IndexError instead of reading past an array."""
    level, markup, delta = action
    reference_level, reference_markup = reference
    w, s0, s_ref, tau = constants
    mu_human, beta_human, sigma_human, in_market, mu_agent, beta_agent, sigma_agent, law = demand
    anchor, lows, highs = prices
    u_agent, products, z, human_chains, human_noise, agent_chains, agent_noise, u_market = draws
    human, agent, human_g_undefended, human_reference = tables
    n, k_max = agent_chains.shape
    totals = np.zeros((alphas.size, N_COLUMNS + anchor.size))
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
        # The shopper as a human: one session, quoted under the action and (human harm) under
        # the reference response (its level and markup, δ = 0).
        human_chain = human_chains[i]
        s_human, f_human = human[human_chain, 0], human[human_chain, 1]
        weight_human, g_human = human[human_chain, 2], human[human_chain, 3]
        if decoys is not None:
            f_human = decoys[0][i]
            g_human = _session_markup(s_human, f_human, lift, tau, s0)
        flagged_human = _quoted_up(s_human, f_human, lift, tau, markup)
        u = human_noise[i]
        q_human = quote(base, markup, g_human, w, u, p_low, p_high)
        g_undefended = human_g_undefended[human_chain]
        reference_base = anchor[product] * reference_level
        q_reference = quote(reference_base, reference_markup, g_undefended, w, u, p_low, p_high)
        # Valuations rise with the engagement of the shopper's session as a human (its need).
        shopping = u_market[i] < in_market
        v_human = anchor[product] * (
            mu_human + beta_human * human[human_chain, 4] + sigma_human * z[i]
        )
        buys = 1.0 if shopping and v_human >= q_human else 0.0
        buys_reference = 1.0 if shopping and v_human >= q_reference else 0.0
        lost = max(buys_reference - buys, 0.0)
        # The shopper as an agent: K_max clean sessions.
        running, running_chain = np.inf, 0
        f_total = weight_total = flagged_total = 0.0
        for j in range(k_max):
            chain = agent_chains[i, j]
            s, f, weight, g = agent[chain, 0], agent[chain, 1], agent[chain, 2], agent[chain, 3]
            if decoys is not None:
                f = decoys[1][i, j]
                g = _session_markup(s, f, lift, tau, s0)
            q = quote(base, markup, g, w, agent_noise[i, j], p_low, p_high)
            if q < running:
                running, running_chain = q, chain
            f_total += f
            weight_total += weight
            flagged_total += _quoted_up(s, f, lift, tau, markup)
            best[j], best_chain[j] = running, running_chain
            score_sum[j], weight_sum[j], flagged_sum[j] = f_total, weight_total, flagged_total
        # The principal pays what she would have browsing herself, what an unengaged human
        # would, or the agents' own law (`config.AGENT_VALUATIONS`).
        if law == 0.0:
            v_agent = v_human
        elif law == 1.0:
            v_agent = anchor[product] * (mu_human + sigma_human * z[i])
        else:
            v_agent = anchor[product] * (
                mu_agent + beta_agent * agent[agent_chains[i, 0], 4] + sigma_agent * z[i]
            )
        reference = base * (1.0 + markup * human_reference)
        for c in range(alphas.size):
            row = totals[c]
            if u_agent[i] < alphas[c]:
                k = ks[c] - 1  # index of the K-th session
                price = best[k]
                bought = 1.0 if shopping and v_agent >= price else 0.0
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
                row[N_COLUMNS + product] += weight_sum[k]
            else:
                row[Column.REVENUE] += q_human * buys
                row[Column.PROFIT] += (q_human - p_low) * buys
                row[Column.HUMAN_PURCHASES] += buys
                row[Column.HUMAN_PREMIUM] += (q_human - floor) * buys
                row[Column.SCORE_SUM] += f_human
                row[Column.SESSIONS] += 1.0
                if s_human < s0:
                    row[Column.LOW_ENGAGEMENT_PURCHASES] += buys
                row[Column.HUMAN_OVERPAY] += (q_human - q_reference) * buys
                row[Column.HUMAN_LOST] += lost
                row[Column.HUMAN_LOST_SPEND] += q_reference * lost
                row[Column.HUMAN_SPEND_REFERENCE] += q_reference * buys_reference
                row[Column.HUMAN_SURPLUS] += (v_human - q_human) * buys
                row[Column.HUMAN_SURPLUS_REFERENCE] += (v_human - q_reference) * buys_reference
                row[Column.HUMAN_QUOTED_UP] += q_human > q_reference
                row[Column.HUMAN_FLAGGED] += flagged_human
                row[N_COLUMNS + product] += weight_human
    return totals


def simulate_step(
    engine: Engine,
    action: tuple[float, float, float],
    draws: StepDraws,
    alphas: np.ndarray,
    ks: np.ndarray,
    decoy_scores: tuple[np.ndarray, np.ndarray] | None = None,
    reference: tuple[float, float] | None = None,
    demand: DemandLaw | None = None,
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
        decoy_scores: the ablation: ((N,) human-session f, (N, K_max) agent-session f) used
            instead of the sessions' own f (`draws.decoy_scores`); None = the fitted detector.
        reference: (level, markup) of the response human harm is measured against (δ = 0);
            None: the action's own level and markup (the harm of the detector alone).
        demand: the episode's demand law (its replicate's); None: the engine's point estimate.
    """
    level, m, delta = action
    reference = (level, m) if reference is None else reference
    alphas = np.asarray(alphas, dtype=np.float64)
    ks = np.asarray(ks, dtype=np.int64)
    k_max = draws.agent_chain.shape[1]
    if alphas.shape != ks.shape or alphas.ndim != 1:
        raise ValueError(f"alphas and ks must be 1-D of one length, got {alphas.shape}, {ks.shape}")
    if ks.size and not 1 <= ks.min() <= ks.max() <= k_max:
        raise ValueError(f"ks must lie in [1, K_max = {k_max}] of the draws, got {ks.tolist()}")
    prices = (engine.anchor, engine.p_low, engine.p_high)
    law = engine.demand if demand is None else demand
    return _step_totals(
        (float(level), float(m), float(delta)),
        (float(reference[0]), float(reference[1])),
        tuple(engine.constants),
        tuple(float(x) for x in law),
        prices,
        tuple(draws),
        alphas,
        ks,
        tuple(engine.step_tables(delta)),
        decoy_scores,
    )
