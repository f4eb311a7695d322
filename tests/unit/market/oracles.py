"""Plain-Python oracles of the market engine, straight from the DESIGN §5 definitions (tests only:
the production code has one implementation, the compiled step)."""

from __future__ import annotations

import math

import numpy as np

from phantom_assets.market import STEP_COLUMNS


def brute_force_totals(spec, action, draws, alpha, k, decoys=None):
    """Every `STEP_COLUMNS` total and the demand per product, shopper by shopper in plain
    Python, straight from the DESIGN §5 definitions."""
    level, m, delta = spec.action_values(action)
    human, agent = spec.banks
    s0, s_ref, w = spec.engagement_scale, spec.reference_engagement, spec.quote_noise

    def g(s):
        return 1 - math.exp(-s / s0)

    def quote(base, g_eff, u):
        return min(max(base * (1 + m * g_eff) * (1 + w * u), spec.p_low), spec.p_high)

    lifted = delta * s_ref * human.score
    reference_g = np.mean([g(max(s, x)) for s, x in zip(human.engagement, lifted, strict=True)])
    totals = dict.fromkeys(STEP_COLUMNS, 0.0)
    demand = np.zeros(spec.n_products)
    for n in range(draws.z.size):
        product = draws.product[n]
        base = spec.anchor[product] * level
        floor = max(spec.p_low, base * (1 - w))
        if draws.u_agent[n] < alpha:
            v = spec.mu_agent + spec.sigma_agent * draws.z[n]
            sessions = []
            for j in range(k):
                c = draws.agent_chain[n, j]
                s = agent.engagement[c]
                f = agent.score[c] if decoys is None else decoys[1][n, j]
                quoted = quote(base, g(max(s, delta * f * s_ref)), draws.agent_noise[n, j])
                sessions.append((quoted, s, f, delta * f * s_ref > s, agent.weight[c]))
            price, s_best = min(sessions)[:2]  # the first lowest quote
            bought = v >= price
            totals["agents"] += 1
            totals["sessions"] += k
            totals["score_sum"] += sum(x[2] for x in sessions)
            totals["agent_flagged"] += sum(x[3] for x in sessions)
            demand[product] += sum(x[4] for x in sessions)
            if bought:
                totals["revenue"] += price
                totals["profit"] += price - spec.p_low
                totals["agent_purchases"] += 1
                totals["agent_premium"] += price - floor
                totals["leak"] += base * (1 + m * reference_g) - price
                totals["low_engagement_purchases"] += s_best < s0
        else:
            v = spec.mu_human + spec.sigma_human * draws.z[n]
            c = draws.human_chain[n]
            s = human.engagement[c]
            f = human.score[c] if decoys is None else decoys[0][n]
            price = quote(base, g(max(s, delta * f * s_ref)), draws.human_noise[n])
            undefended = quote(base, g(s), draws.human_noise[n])
            totals["sessions"] += 1
            totals["score_sum"] += f
            totals["human_flagged"] += delta * f * s_ref > s
            demand[product] += human.weight[c]
            if v >= undefended:
                totals["human_spend_undefended"] += undefended
                if v < price:
                    totals["human_lost"] += 1
                    totals["human_lost_spend"] += undefended
            if v >= price:
                totals["revenue"] += price
                totals["profit"] += price - spec.p_low
                totals["human_purchases"] += 1
                totals["human_premium"] += price - floor
                totals["human_overpay"] += price - undefended
                totals["low_engagement_purchases"] += s < s0
    return np.concatenate([[totals[name] for name in STEP_COLUMNS], demand])
