"""Heuristic tiers: static mid level, surge rule, linear demand fit, save/load."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.policies import (
    LinearPolicy,
    StaticPolicy,
    SurgePolicy,
    demand_breadth,
    fit_linear_demand,
    load_policy,
    revenue_optimal_level,
)


def obs_with_shares(shares) -> np.ndarray:
    shares = np.asarray(shares, dtype=np.float32)
    return np.concatenate([shares, np.full(shares.size, 0.5, np.float32), [0.3]])


def test_static_policy_plays_the_middle_level():
    policy = StaticPolicy.mid(9)
    assert policy.act(obs_with_shares([0.5, 0.5])) == 4


def test_demand_breadth_is_effective_products_over_n_and_zero_without_demand():
    assert demand_breadth(np.array([0.25, 0.25, 0.25, 0.25])) == pytest.approx(1.0)
    assert demand_breadth(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)
    assert demand_breadth(np.zeros(4)) == 0.0


def test_surge_raises_on_demand_above_its_running_mean_and_lowers_below():
    policy = SurgePolicy(9, threshold=0.05, memory=0.8)
    narrow, broad = obs_with_shares([0.7, 0.1, 0.1, 0.1]), obs_with_shares([0.25] * 4)
    assert policy.act(narrow) == 4  # first observation defines the mean
    assert policy.act(broad) == 5
    assert policy.act(obs_with_shares([0.0] * 4)) == 4  # no demand at all: lower
    policy.reset()
    assert policy.act(broad) == 4


def test_fit_linear_demand_matches_numpy_polyfit():
    rng = np.random.default_rng(0)
    prices = rng.uniform(80, 120, 50)
    purchases = 40 - 0.2 * prices + rng.normal(0, 1, 50)
    slope, intercept = np.polyfit(prices, purchases, 1)
    assert fit_linear_demand(prices, purchases) == pytest.approx((intercept, slope))


def test_fit_linear_demand_rejects_constant_prices():
    with pytest.raises(ValueError, match="do not vary"):
        fit_linear_demand(np.full(5, 100.0), np.arange(5.0))


def test_revenue_optimal_level_maximises_price_times_linear_demand(spec):
    levels = np.asarray(spec.price_levels)
    prices = np.clip(spec.anchor[None, :] * levels[:, None], spec.p_low, spec.p_high).mean(axis=1)
    intercept, slope = 30.0, -0.2  # revenue p·(30 − 0.2p) peaks at p = 75, the lowest level here
    expected = int(np.argmax(prices * np.maximum(intercept + slope * prices, 0)))
    assert revenue_optimal_level(spec, intercept, slope) == expected == 0
    assert revenue_optimal_level(spec, 10.0, 0.0) == spec.n_actions - 1


@pytest.mark.parametrize(
    ("tier", "policy"),
    [("static", StaticPolicy(3)), ("surge", SurgePolicy(9, 0.1, 0.5)),
     ("linear", LinearPolicy(2, 12.5, -0.03))],
)  # fmt: skip
def test_heuristic_policies_round_trip_through_save_and_load(tmp_path, tier, policy):
    path = policy.save(tmp_path / "nested" / "policy.json")
    loaded = load_policy(tier, path)
    assert loaded == policy
    assert [p.name for p in path.parent.iterdir()] == ["policy.json"]  # no temp file left


def test_loading_a_file_of_another_tier_fails(tmp_path):
    path = StaticPolicy(3).save(tmp_path / "policy.json")
    with pytest.raises(ValueError, match="static"):
        LinearPolicy.load(path)
