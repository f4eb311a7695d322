"""Session quoting of market v2: formulas, floor, detector, best of K, the COI erosion theorem."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.market.quoting import (
    agent_purchases,
    best_of_k,
    coi,
    detector_engagement,
    engagement_markup,
    expected_min_of_iid,
    expected_min_quote,
    expected_min_quote_numeric,
    price_floor,
    quote_cdf,
    session_quotes,
)

BASE, W, P_LOW, P_HIGH = 100.0, 0.2, 50.0, 150.0
K_RANGE = np.arange(1, 17)


def test_engagement_markup_matches_its_definition_elementwise():
    s = np.array([[0.0, 5.0], [10.0, 1e6]])
    g = engagement_markup(s, s0=10.0)
    np.testing.assert_allclose(g, [[0.0, 1 - np.exp(-0.5)], [1 - np.exp(-1.0), 1.0]])
    assert g.shape == s.shape


def test_session_quotes_match_a_hand_computed_quote_and_clip_at_the_bounds():
    # 100·(1 + 0.5·0.5)·(1 + 0.2·0.5) = 137.5; the same quote with u = 1 is 150 -> p_high 140.
    quotes = session_quotes(BASE, 0.5, 0.5, W, np.array([0.5, 1.0, -1.0]), P_LOW, 140.0)
    np.testing.assert_allclose(quotes, [137.5, 140.0, 100.0])
    low = session_quotes(60.0, 0.0, 0.0, W, -1.0, P_LOW, P_HIGH)  # 48 -> p_low
    assert low == P_LOW


@pytest.mark.parametrize(("base", "floor"), [(100.0, 80.0), (60.0, P_LOW)])
def test_quotes_stay_in_bounds_and_the_floor_is_the_smallest_quote_ever_given(base, floor):
    rng = np.random.default_rng(3)
    u = rng.uniform(-1, 1, size=200_000)
    s = rng.exponential(5.0, size=u.size) * (rng.uniform(size=u.size) > 0.1)  # 10 % at s = 0
    g = engagement_markup(s, s0=10.0)
    quotes = session_quotes(base, 0.5, g, W, u, P_LOW, P_HIGH)
    assert price_floor(base, W, P_LOW) == floor
    assert quotes.min() >= floor and quotes.max() <= P_HIGH
    assert quotes.min() - floor < 0.05  # reached, not just bounded


def test_detector_with_zero_strength_leaves_quotes_undefended():
    rng = np.random.default_rng(4)
    s, f, u = rng.exponential(5.0, 1_000), rng.uniform(0, 1, 1_000), rng.uniform(-1, 1, 1_000)
    undefended = session_quotes(BASE, 0.5, engagement_markup(s, 10.0), W, u, P_LOW, P_HIGH)
    s_eff = detector_engagement(s, f, delta=0.0, s_ref=20.0)
    np.testing.assert_array_equal(s_eff, s)
    defended = session_quotes(BASE, 0.5, engagement_markup(s_eff, 10.0), W, u, P_LOW, P_HIGH)
    np.testing.assert_array_equal(defended, undefended)


def test_detector_quotes_agent_looking_sessions_up_and_leaves_engaged_ones_alone():
    s = np.array([1.0, 30.0])  # a clean, low-engagement session and an engaged one
    f = np.array([0.9, 0.9])
    s_eff = detector_engagement(s, f, delta=1.0, s_ref=20.0)
    np.testing.assert_allclose(s_eff, [18.0, 30.0])

    def quote(s_):  # no noise, no clipping
        return session_quotes(BASE, 0.5, engagement_markup(s_, 10.0), W, 0.0, 0.0, 1e9)

    defended, undefended = quote(s_eff), quote(s)
    assert defended[0] > undefended[0] + 10  # 100·(1 + 0.5·0.835) vs 100·(1 + 0.5·0.095)
    assert defended[1] == undefended[1]


def test_best_of_k_ignores_quotes_beyond_each_agents_k():
    quotes = np.array([[90.0, 85.0, 95.0, 60.0, 55.0], [90.0, 85.0, 95.0, 60.0, 55.0]])
    np.testing.assert_array_equal(best_of_k(quotes, np.array([3, 5])), [85.0, 55.0])
    np.testing.assert_array_equal(best_of_k(quotes, np.array([1, 4])), [90.0, 60.0])


def test_agents_buy_at_their_best_quote_only_when_it_is_within_their_valuation():
    quotes = np.array([[90.0, 85.0, 60.0], [90.0, 85.0, 60.0], [120.0, 110.0, 60.0]])
    result = agent_purchases(quotes, np.array([2, 3, 2]), valuation=np.array([85.0, 70.0, 100.0]))
    np.testing.assert_array_equal(result.best_quote, [85.0, 60.0, 110.0])
    np.testing.assert_array_equal(result.buys, [True, True, False])  # a tie buys
    np.testing.assert_array_equal(result.price_paid, [85.0, 60.0, np.nan])


@pytest.mark.parametrize("k", [np.array([0, 2]), np.array([2, 4]), np.array([1.0, 2.0])])
def test_best_of_k_rejects_k_outside_one_to_k_max_or_non_integer(k):
    with pytest.raises(ValueError, match="k must"):
        best_of_k(np.ones((2, 3)), k)


def test_session_quotes_reject_noise_draws_outside_minus_one_to_one():
    with pytest.raises(ValueError, match="u must lie"):
        session_quotes(BASE, 0.0, 0.0, W, np.array([0.0, 1.5]), P_LOW, P_HIGH)


def test_quotes_broadcast_over_candidates_sessions_and_the_k_axis():
    rng = np.random.default_rng(5)
    n_cand, n_agents, k_max = 4, 50, 6
    base = np.linspace(80, 120, n_cand)[:, None, None]  # candidates differ in base level only
    markup = np.array([0.0, 0.25, 0.5, 0.5])[:, None, None]
    g = engagement_markup(rng.exponential(1.5, (n_agents, k_max)), 10.0)
    u = rng.uniform(-1, 1, (n_agents, k_max))  # common random numbers across candidates
    quotes = session_quotes(base, markup, g, W, u, P_LOW, P_HIGH)
    assert quotes.shape == (n_cand, n_agents, k_max)
    k = rng.integers(1, k_max + 1, n_agents)
    result = agent_purchases(quotes, k, valuation=rng.normal(120, 25, n_agents))
    assert result.price_paid.shape == (n_cand, n_agents)
    one = session_quotes(base[2, 0, 0], 0.5, g, W, u, P_LOW, P_HIGH)
    np.testing.assert_array_equal(quotes[2], one)
    np.testing.assert_array_equal(result.best_quote[2], best_of_k(one, k))


def test_simulated_min_of_k_quotes_matches_the_erosion_theorem_and_coi_vanishes():
    # Issue 12 item 2: m = δ = 0, no clipping -> E[min of K] = p_min + 2w·base/(K + 1).
    rng = np.random.default_rng(12)
    per_k = 20_000
    k = np.repeat(K_RANGE, per_k)  # every agent its own K, one vectorized call
    u = rng.uniform(-1, 1, (k.size, K_RANGE.max()))
    s_eff = detector_engagement(
        rng.exponential(1.5, u.shape), rng.uniform(0, 1, u.shape), 0.0, 20.0
    )
    quotes = session_quotes(BASE, 0.0, engagement_markup(s_eff, 10.0), W, u, P_LOW, P_HIGH)
    paid = agent_purchases(quotes, k, valuation=np.inf).price_paid.reshape(K_RANGE.size, per_k)
    floor = price_floor(BASE, W, P_LOW)
    mean, se = paid.mean(axis=1), paid.std(axis=1, ddof=1) / np.sqrt(per_k)
    expected = expected_min_quote(BASE, W, K_RANGE)
    assert np.all(np.abs(mean - expected) < 4 * se), np.abs(mean - expected) / se
    coi_a = np.array([coi(row, floor) for row in paid])
    np.testing.assert_allclose(coi_a, mean - floor)
    assert np.all(np.diff(coi_a) < 0)
    assert coi_a[-1] < 0.15 * coi_a[0]


def test_quote_cdf_matches_the_empirical_cdf_including_the_clipping_atoms():
    # centre 100·(1 + 0.5·0.8) = 140, quotes uniform on [112, 168] before clipping at 150.
    rng = np.random.default_rng(9)
    quotes = session_quotes(BASE, 0.5, 0.8, W, rng.uniform(-1, 1, 200_000), P_LOW, P_HIGH)
    x = np.array([P_LOW - 1, 112.0, 120.0, 140.0, 149.9, P_HIGH, 160.0])
    empirical = (quotes[:, None] <= x).mean(axis=0)
    exact = quote_cdf(x, BASE, 0.5, 0.8, W, P_LOW, P_HIGH)
    np.testing.assert_allclose(exact, [0.0, 0.0, 8 / 56, 28 / 56, 37.9 / 56, 1.0, 1.0])
    np.testing.assert_allclose(empirical, exact, atol=0.005)


def test_numeric_order_statistic_integral_equals_the_closed_form_without_markup():
    numeric = expected_min_quote_numeric(BASE, 0.0, 0.0, W, K_RANGE, P_LOW, P_HIGH)
    np.testing.assert_allclose(numeric, expected_min_quote(BASE, W, K_RANGE), atol=1e-3)


@pytest.mark.parametrize(
    ("base", "g"),
    [(100.0, 0.3), (100.0, 0.9), (58.0, 0.0)],  # no clipping, an atom at p_high, one at p_low
)
@pytest.mark.parametrize("k", [1, 3, 8])
def test_numeric_integral_agrees_with_monte_carlo_at_a_fixed_engagement(base, g, k):
    rng = np.random.default_rng(100 + k)
    u = rng.uniform(-1, 1, (100_000, k))
    sample = session_quotes(base, 0.8, g, 0.25, u, P_LOW, P_HIGH).min(axis=1)
    numeric = expected_min_quote_numeric(base, 0.8, g, 0.25, k, P_LOW, P_HIGH)
    se = sample.std(ddof=1) / np.sqrt(sample.size)
    assert abs(sample.mean() - numeric) < 4 * se + 1e-9


def test_numeric_integral_is_vectorized_over_candidates_and_k():
    bases = np.array([[80.0], [100.0], [120.0]])
    numeric = expected_min_quote_numeric(bases, 0.5, 0.4, W, K_RANGE[None, :], P_LOW, P_HIGH)
    assert numeric.shape == (3, K_RANGE.size)
    np.testing.assert_allclose(
        numeric[1], expected_min_quote_numeric(100.0, 0.5, 0.4, W, K_RANGE, P_LOW, P_HIGH)
    )


def test_expected_min_of_iid_handles_an_engagement_mixture_like_a_bank():
    # Quotes of sessions with random engagement are iid from the mixture CDF (mean of CDFs).
    rng = np.random.default_rng(7)
    g_bank = engagement_markup(rng.exponential(3.0, 64), 10.0)

    def cdf(x):
        return quote_cdf(x[..., None], BASE, 0.5, g_bank, W, P_LOW, P_HIGH).mean(axis=-1)

    k = 4
    numeric = expected_min_of_iid(cdf, P_LOW, P_HIGH, k)
    g = rng.choice(g_bank, (100_000, k))
    sample = session_quotes(BASE, 0.5, g, W, rng.uniform(-1, 1, g.shape), P_LOW, P_HIGH).min(1)
    assert abs(sample.mean() - numeric) < 4 * sample.std(ddof=1) / np.sqrt(sample.size)


def test_coi_ignores_non_purchases_and_is_nan_without_any():
    paid = np.array([90.0, np.nan, 100.0, np.nan])
    assert coi(paid, 80.0) == pytest.approx(15.0)
    assert coi(paid, np.array([80.0, 80.0, 70.0, 70.0])) == pytest.approx(20.0)
    assert np.isnan(coi(np.full(3, np.nan), 80.0))
