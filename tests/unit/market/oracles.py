"""Plain-Python oracles of the market engine, straight from the definitions of
docs/method.md#the-market (tests only:
the production code has one implementation, the compiled step)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from phantom_assets.contamination.chains import PAD
from phantom_assets.market import STEP_COLUMNS
from phantom_assets.market.bank import PROB_FLOOR


def valuations(spec, draws, n):
    """(human valuation, agent principal's valuation, in the market) of shopper n."""
    human, agent = spec.banks

    def g_value(s):
        return 1 - math.exp(-s / spec.valuation_scale)

    anchor, z = spec.anchor[draws.product[n]], draws.z[n]
    s_human = human.engagement[draws.human_chain[n]]
    v_human = anchor * (spec.mu_human + spec.beta_human * g_value(s_human) + spec.sigma_human * z)
    v_agent = {
        "human_marginal": v_human,
        "human_unengaged": anchor * (spec.mu_human + spec.sigma_human * z),
        "agent_fit": anchor
        * (
            spec.mu_agent
            + spec.sigma_agent * z
            + spec.beta_agent * g_value(agent.engagement[draws.agent_chain[n, 0]])
        ),
    }[spec.agent_valuation]
    return v_human, v_agent, draws.u_market[n] < spec.in_market


def brute_force_totals(spec, action, draws, alpha, k, decoys=None, reference=None):
    """Every `STEP_COLUMNS` total and the demand per product, shopper by shopper in plain
    Python, straight from the definitions of docs/method.md#the-market (the quote-time threshold
    rule; human harm against `reference` = (level, markup), default the action's own at δ = 0;
    a shopper in the market values its product at anchor·(μ + β·g_v(s) + σ·z), s the engagement
    of its session as a human, and its agent at what `spec.agent_valuation` says)."""
    level, m, delta = spec.action_values(action)
    ref_level, ref_m = (level, m) if reference is None else reference
    human, agent = spec.banks
    s0, w = spec.engagement_scale, spec.quote_noise
    tau, lift = spec.detector_threshold, delta * spec.reference_engagement

    def g(s):
        return 1 - math.exp(-s / s0)

    def s_eff(s, f):
        return max(s, lift) if f > tau else s

    def quoted_up(s, f):
        return f > tau and lift > s and m > 0

    def quote(base, markup, g_eff, u, product):
        low, high = spec.p_low[product], spec.p_high[product]
        return min(max(base * (1 + markup * g_eff) * (1 + w * u), low), high)

    pairs = zip(human.engagement, human.score, strict=True)
    reference_g = np.mean([g(s_eff(s, f)) for s, f in pairs])
    totals = dict.fromkeys(STEP_COLUMNS, 0.0)
    demand = np.zeros(spec.n_products)
    for n in range(draws.z.size):
        product = draws.product[n]
        anchor, low = spec.anchor[product], spec.p_low[product]
        base = anchor * level
        floor = max(low, base * (1 - w))
        v_human, v_agent, shopping = valuations(spec, draws, n)
        if draws.u_agent[n] < alpha:
            v = v_agent
            sessions = []
            for j in range(k):
                c = draws.agent_chain[n, j]
                s = agent.engagement[c]
                f = agent.score[c] if decoys is None else decoys[1][n, j]
                quoted = quote(base, m, g(s_eff(s, f)), draws.agent_noise[n, j], product)
                sessions.append((quoted, s, f, quoted_up(s, f), agent.weight[c]))
            price, s_best = min(sessions)[:2]  # the first lowest quote
            bought = shopping and v >= price
            totals["agents"] += 1
            totals["sessions"] += k
            totals["score_sum"] += sum(x[2] for x in sessions)
            totals["agent_flagged"] += sum(x[3] for x in sessions)
            demand[product] += sum(x[4] for x in sessions)
            if bought:
                totals["revenue"] += price
                totals["profit"] += price - low
                totals["agent_purchases"] += 1
                totals["agent_premium"] += price - floor
                totals["leak"] += base * (1 + m * reference_g) - price
                totals["low_engagement_purchases"] += s_best < s0
        else:
            v = v_human
            c = draws.human_chain[n]
            s = human.engagement[c]
            f = human.score[c] if decoys is None else decoys[0][n]
            u = draws.human_noise[n]
            price = quote(base, m, g(s_eff(s, f)), u, product)
            ref_price = quote(anchor * ref_level, ref_m, g(s), u, product)
            totals["sessions"] += 1
            totals["score_sum"] += f
            totals["human_flagged"] += quoted_up(s, f)
            totals["human_quoted_up"] += price > ref_price
            demand[product] += human.weight[c]
            if shopping and v >= ref_price:
                totals["human_spend_reference"] += ref_price
                totals["human_surplus_reference"] += v - ref_price
                if v < price:  # in the market (above): a purchase the reference makes
                    totals["human_lost"] += 1
                    totals["human_lost_spend"] += ref_price
            if shopping and v >= price:
                totals["revenue"] += price
                totals["profit"] += price - low
                totals["human_purchases"] += 1
                totals["human_premium"] += price - floor
                totals["human_overpay"] += price - ref_price
                totals["human_surplus"] += v - price
                totals["low_engagement_purchases"] += s < s0
    return np.concatenate([[totals[name] for name in STEP_COLUMNS], demand])


def detector_gaps(
    codes: np.ndarray,
    lengths: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    start: int = 0,
    end: int | None = None,
) -> np.ndarray:
    """Δ_H − Δ_A of each whole chain from its own empirical transitions, vectorized.

    With the session's empirical kernel T̂_τ and visit weights w_a,
    Δ_Y = Σ_a w_a/Σw · KL(T̂_τ[a] ‖ K_Y[a]); the entropy term cancels in the difference, leaving the
    mean over the chain's transitions (including `<start>`→first and last→`<end>`) of
    log K_A[a, b] − log K_H[a, b]: the reference the bank's prefix scores are tested against.

    Args:
        codes: (n, L) int state indices padded with `PAD` (as from `sample_chains`).
        lengths: (n,) events per chain.
        kernel_human: (S, S) fitted human kernel.
        kernel_agent: (S, S) fitted agent kernel.
        start: index of `<start>`.
        end: index of `<end>` (default S - 1).

    Returns:
        float64 (n,) gaps.
    """
    size = kernel_human.shape[0]
    stop = size - 1 if end is None else end
    n, width = codes.shape
    seq = np.full((n, width + 2), PAD, dtype=np.int64)
    seq[:, 0] = start
    seq[:, 1 : width + 1] = codes
    seq[np.arange(n), np.asarray(lengths, dtype=np.int64) + 1] = stop
    src, dst = seq[:, :-1], seq[:, 1:]
    valid = dst != PAD
    llr = np.log(np.maximum(kernel_agent, PROB_FLOOR)) - np.log(
        np.maximum(kernel_human, PROB_FLOOR)
    )
    terms = np.where(valid, llr[np.where(valid, src, 0), np.where(valid, dst, 0)], 0.0)
    return terms.sum(axis=1) / valid.sum(axis=1)


def detector_scores(
    codes: np.ndarray,
    lengths: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    f_coef: tuple[float, float] = (0.0, 1.0),
) -> np.ndarray:
    """Agent probability f = σ(a + b·(Δ_H − Δ_A)) of each whole chain (see `detector_gaps`);
    `f_coef` = (a, b), (0, 1/T) for the temperature score."""
    return expit(f_coef[0] + f_coef[1] * detector_gaps(codes, lengths, kernel_human, kernel_agent))
