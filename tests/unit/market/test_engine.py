"""The v2 step engine: common random numbers across candidates and actions, the quantities it
measures, against brute-force per-shopper oracles."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.market import COLUMN, STEP_COLUMNS, draw_step, engine_of, simulate_step
from phantom_assets.market.engine import agent_session_share, decoy_scores
from phantom_assets.market.quoting import expected_min_quote

N = 200


@pytest.fixture
def engine(spec):
    return engine_of(spec)


def draws_for(spec, seed: int, k_max: int = 16):
    human, agent = spec.banks
    rng = np.random.default_rng(seed)
    return draw_step(rng, N, spec.n_products, k_max, (human.size, agent.size))


def step(engine, spec, action, draws, alphas, ks, decoys=None):
    values = spec.action_values(action)
    return simulate_step(engine, values, draws, np.asarray(alphas, dtype=float),
                         np.asarray(ks), decoys)  # fmt: skip


def test_a_candidate_among_many_equals_the_same_candidate_alone(engine, spec):
    """The robust step's candidates are evaluated on one set of draws (pitfall §10.4)."""
    draws = draws_for(spec, 0)
    alphas, ks = [0.2, 0.5, 0.5, 0.9], [2, 8, 16, 8]
    many = step(engine, spec, 31, draws, alphas, ks)
    for c, (alpha, k) in enumerate(zip(alphas, ks, strict=True)):
        alone = step(engine, spec, 31, draws, [alpha], [k])
        np.testing.assert_allclose(many.totals(c), alone.totals(0), rtol=1e-12)
        assert many.profit[c] == pytest.approx(alone.profit[0], rel=1e-12)
        assert many.leak[c] == pytest.approx(many.totals(c)[COLUMN["leak"]], rel=1e-9, abs=1e-9)
        assert many.profit[c] == pytest.approx(many.totals(c)[COLUMN["profit"]], rel=1e-12)


def test_totals_match_a_per_shopper_oracle(engine, spec):
    """Brute force: quote each session, pick each agent's best of K, buy iff v ≥ price."""
    draws = draws_for(spec, 1)
    action, alpha, k = spec.action_index(3, 2, 1), 0.4, 5
    level, m, delta = spec.action_values(action)
    result = step(engine, spec, action, draws, [alpha], [k]).totals(0)
    human, agent = spec.banks

    def quote(base, s, f, u):
        s_eff = max(s, delta * f * spec.reference_engagement)
        g = 1 - np.exp(-s_eff / spec.engagement_scale)
        return float(np.clip(base * (1 + m * g) * (1 + spec.quote_noise * u), spec.p_low,
                             spec.p_high))  # fmt: skip

    revenue = agent_buys = human_buys = 0.0
    for n in range(N):
        base = spec.anchor[draws.product[n]] * level
        v = spec.mu_human + spec.sigma_human * draws.z[n]
        if draws.u_agent[n] < alpha:
            quotes = [quote(base, agent.engagement[c], agent.score[c], u)
                      for c, u in zip(draws.agent_chain[n, :k], draws.agent_noise[n, :k],
                                      strict=True)]  # fmt: skip
            price = min(quotes)
            if v >= price:
                revenue, agent_buys = revenue + price, agent_buys + 1
        else:
            c = draws.human_chain[n]
            price = quote(base, human.engagement[c], human.score[c], draws.human_noise[n])
            if v >= price:
                revenue, human_buys = revenue + price, human_buys + 1
    assert result[COLUMN["revenue"]] == pytest.approx(revenue, rel=1e-12)
    assert result[COLUMN["agent_purchases"]] == agent_buys
    assert result[COLUMN["human_purchases"]] == human_buys
    assert result[len(STEP_COLUMNS) :].sum() > 0  # the demand proxy per product


def test_more_agents_and_larger_k_only_move_shoppers_one_way(engine, spec):
    """Monotone under CRN: a higher α only turns humans into agents; a larger K only lowers an
    agent's best quote."""
    draws = draws_for(spec, 2)
    result = step(engine, spec, spec.undefended_action, draws, [0.2, 0.6, 0.6, 0.6],
                  [4, 4, 8, 16])  # fmt: skip
    agents = [result.totals(c)[COLUMN["agents"]] for c in range(4)]
    assert agents[0] < agents[1] == agents[2] == agents[3]
    sums = [result.totals(c) for c in (1, 2, 3)]
    premium = [t[COLUMN["agent_premium"]] / t[COLUMN["agent_purchases"]] for t in sums]
    assert premium[0] > premium[1] > premium[2]


def test_actions_on_the_same_draws_differ_only_through_quotes(engine, spec):
    draws = draws_for(spec, 3)
    low = step(engine, spec, spec.action_index(0, 1, 0), draws, [0.5], [8]).totals(0)
    high = step(engine, spec, spec.action_index(4, 1, 0), draws, [0.5], [8]).totals(0)
    assert low[COLUMN["agents"]] == high[COLUMN["agents"]]
    assert low[COLUMN["sessions"]] == high[COLUMN["sessions"]]
    assert low[COLUMN["human_purchases"]] >= high[COLUMN["human_purchases"]]


def test_decoy_scores_have_the_mix_law_and_no_session_information(spec):
    human, agent = spec.banks
    share = agent_session_share(0.5, 8)
    rng = np.random.default_rng(0)
    human_f, agent_f = decoy_scores(rng, spec.banks, share, (20_000, 9))
    expected = share * agent.score.mean() + (1 - share) * human.score.mean()
    assert human_f.mean() == pytest.approx(expected, abs=0.01)
    assert agent_f.mean() == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(("alpha", "k", "share"), [(0.0, 8, 0.0), (1.0, 3, 1.0), (0.5, 1, 0.5),
                                                   (0.5, 8, 8 / 9)])  # fmt: skip
def test_agent_session_share(alpha, k, share):
    assert agent_session_share(alpha, k) == pytest.approx(share)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6, 8, 12, 16])
def test_the_engine_reproduces_the_order_statistic_law_of_the_agent_price(make_spec, k):
    """The erosion theorem through the engine: with m = δ = 0 and agents who always buy, the
    price paid is the minimum of K quotes, E = p_min + 2w·base/(K + 1) (DESIGN §5)."""
    spec = make_spec(markups=(0.0,), mu_agent=1e6)
    engine = engine_of(spec)
    paid, floor = [], []
    for seed in range(40):
        draws = draws_for(spec, seed, k)
        result = step(engine, spec, spec.undefended_action, draws, [1.0], [k]).totals(0)
        assert result[COLUMN["agent_purchases"]] == N
        paid.append(result[COLUMN["revenue"]])
        floor.append(spec.anchor[draws.product].sum() * (1 - spec.quote_noise))
    base = np.mean(floor) / (1 - spec.quote_noise) / N
    premium = (np.asarray(paid) - np.asarray(floor)) / N
    expected = expected_min_quote(base, spec.quote_noise, k) - base * (1 - spec.quote_noise)
    se = premium.std(ddof=1) / np.sqrt(premium.size)
    assert abs(premium.mean() - expected) < 4 * se
