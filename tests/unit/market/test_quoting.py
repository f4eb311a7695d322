"""The quoting formulas the compiled engine calls (`quote`, `markup_factor`), the engine's floor
and the closed-form order statistic of the best of K quotes (the erosion theorem; the engine's
own agent prices are checked against it in `test_engine.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.market.quoting import expected_min_quote, markup_factor, price_floor, quote

BASE, W, P_LOW, P_HIGH = 100.0, 0.2, 50.0, 150.0
K_RANGE = np.arange(1, 17)


def test_markup_factor_matches_its_definition_elementwise():
    s = np.array([[0.0, 5.0], [10.0, 1e6]])
    g = markup_factor(s, 10.0)
    np.testing.assert_allclose(g, [[0.0, 1 - np.exp(-0.5)], [1 - np.exp(-1.0), 1.0]])
    assert g.shape == s.shape


def test_quote_matches_a_hand_computed_quote_and_clips_at_the_bounds():
    # 100·(1 + 0.5·0.5)·(1 + 0.2·0.5) = 137.5; the same quote with u = 1 is 150 -> p_high 140.
    quotes = quote(BASE, 0.5, 0.5, W, np.array([0.5, 1.0, -1.0]), P_LOW, 140.0)
    np.testing.assert_allclose(quotes, [137.5, 140.0, 100.0])
    assert quote(60.0, 0.0, 0.0, W, -1.0, P_LOW, P_HIGH) == P_LOW  # 48 -> p_low


@pytest.mark.parametrize(("base", "floor"), [(100.0, 80.0), (60.0, P_LOW)])
def test_the_floor_is_the_smallest_quote_ever_given(base, floor):
    rng = np.random.default_rng(3)
    u = rng.uniform(-1, 1, size=200_000)
    s = rng.exponential(5.0, size=u.size) * (rng.uniform(size=u.size) > 0.1)  # 10 % at s = 0
    quotes = quote(base, 0.5, markup_factor(s, 10.0), W, u, P_LOW, P_HIGH)
    assert price_floor(base, W, P_LOW) == floor
    assert quotes.min() >= floor and quotes.max() <= P_HIGH
    assert quotes.min() - floor < 0.05  # reached, not just bounded


def test_the_closed_form_minimum_of_k_quotes_matches_monte_carlo():
    rng = np.random.default_rng(12)
    per_k = 20_000
    means, ses = [], []
    for k in K_RANGE:
        best = quote(BASE, 0.0, 0.0, W, rng.uniform(-1, 1, (per_k, k)), P_LOW, P_HIGH).min(1)
        means.append(best.mean())
        ses.append(best.std(ddof=1) / np.sqrt(per_k))
    expected = expected_min_quote(BASE, W, K_RANGE)
    assert np.all(np.abs(np.asarray(means) - expected) < 4 * np.asarray(ses))
    premium = expected - price_floor(BASE, W, P_LOW)
    assert np.all(np.diff(premium) < 0) and premium[-1] < 0.15 * premium[0]


@pytest.mark.parametrize("noise", [-0.1, 1.0])
def test_price_floor_rejects_noise_outside_zero_to_one(noise):
    with pytest.raises(ValueError, match="noise_halfwidth"):
        price_floor(BASE, noise, P_LOW)


def test_expected_min_quote_rejects_k_below_one():
    with pytest.raises(ValueError, match="k must"):
        expected_min_quote(BASE, W, np.array([0, 2]))
