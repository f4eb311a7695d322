"""Heuristic tiers on the (level, m, δ) grid: static = the undefended engine, surge moves levels,
linear plays the profit-optimal level of its fit; save/load."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.market import make_env
from phantom_assets.policies import (
    LinearPolicy,
    StaticPolicy,
    SurgePolicy,
    TunedDefendedPolicy,
    TunedStaticPolicy,
    demand_breadth,
    fit_line,
    load_policy,
    profit_optimal_level,
    train_policy,
)
from phantom_assets.policies.heuristics import warmup_data
from tests.unit.policies.conftest import market_obs

GRID = (5, 3, 3)


def test_static_policy_plays_the_undefended_action_on_every_observation(spec):
    policy = StaticPolicy.undefended(spec)
    env = make_env(spec, 0.5)
    obs, _ = env.reset(seed=0)
    actions = set()
    for action in (0, 44, 17):
        actions.add(policy.act(obs))
        obs, *_ = env.step(action)
    assert actions == {spec.undefended_action}
    assert spec.action_parts(spec.undefended_action) == (2, 1, 0)


def test_demand_breadth_is_effective_products_over_n_and_zero_without_demand():
    assert demand_breadth(np.array([0.25, 0.25, 0.25, 0.25])) == pytest.approx(1.0)
    assert demand_breadth(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)
    assert demand_breadth(np.zeros(4)) == 0.0


def test_surge_moves_the_base_level_with_demand_at_the_middle_markup_and_no_detector(spec):
    policy = SurgePolicy(spec.action_shape, threshold=0.05, memory=0.8)
    narrow, broad = market_obs([0.7, 0.1, 0.1, 0.1]), market_obs([0.25] * 4)
    levels = [spec.action_parts(policy.act(o))[0] for o in (narrow, broad, broad, broad)]
    assert levels == [2, 3, 4, 4]  # the first observation defines the mean; capped at the top
    assert spec.action_parts(policy.act(market_obs([0.0] * 4))) == (3, 1, 0)  # no demand: lower
    policy.reset()
    assert policy.act(broad) == spec.undefended_action


def test_fit_line_matches_numpy_polyfit():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.8, 1.2, 50)
    y = 90 - 40 * x + rng.normal(0, 1, 50)
    slope, intercept = np.polyfit(x, y, 1)
    assert fit_line(x, y) == pytest.approx((intercept, slope))


def test_fit_line_rejects_a_constant_regressor():
    with pytest.raises(ValueError, match="does not vary"):
        fit_line(np.full(5, 1.0), np.arange(5.0))


@pytest.mark.parametrize(
    ("demand", "price", "level"),
    [
        ((100.0, -60.0), (0.0, 100.0), 3),  # (100ℓ − 50)(100 − 60ℓ) peaks at ℓ = 1.083 -> 1.1
        ((100.0, -80.0), (0.0, 100.0), 1),  # (100ℓ − 50)(100 − 80ℓ) peaks at ℓ = 0.94 -> 0.9
        ((50.0, 0.0), (0.0, 100.0), 4),
    ],  # demand does not fall: the highest level
)
def test_profit_optimal_level_maximises_margin_times_fitted_demand(demand, price, level):
    levels = (0.8, 0.9, 1.0, 1.1, 1.2)
    x = np.asarray(levels)
    brute = np.argmax((price[0] + price[1] * x - 50.0) * np.maximum(demand[0] + demand[1] * x, 0))
    assert profit_optimal_level(levels, 50.0, demand, price) == brute == level


def test_linear_warms_up_on_random_levels_at_the_middle_markup_without_detector(spec):
    env = make_env(spec, 0.5)
    level, purchases, revenue = warmup_data(env, spec, episodes=2, seed=1)
    assert level.size == 2 * spec.episode_steps
    assert set(np.round(level, 6)) <= set(spec.base_levels) and np.unique(level).size > 2
    assert (purchases > 0).all() and (revenue > purchases * spec.p_low.min()).all()


def test_linear_plays_the_profit_optimal_level_of_its_own_fit(spec, tiny):
    trained = train_policy("linear", None, spec, 0.5, tiny, seed=0)
    hyper = trained.hyperparameters
    best = profit_optimal_level(spec.base_levels, spec.mean_cost, hyper["demand"], hyper["price"])
    assert hyper["demand"][1] < 0 < hyper["price"][1]  # dearer levels sell less at higher prices
    assert trained.policy.act(market_obs([0.5, 0.5])) == spec.action_index(best, 1, 0)


@pytest.mark.parametrize(
    ("tier", "policy"),
    [
        ("static", StaticPolicy(21)),
        ("tuned", TunedStaticPolicy(4)),
        ("defended", TunedDefendedPolicy(25)),
        ("surge", SurgePolicy(GRID, 0.1, 0.5)),
        ("linear", LinearPolicy(GRID, 2, (12.5, -3.0), (10.0, 90.0))),
    ],
)
def test_heuristic_policies_round_trip_through_save_and_load(tmp_path, tier, policy):
    path = policy.save(tmp_path / "nested" / "policy.json")
    loaded = load_policy(tier, path)
    assert loaded == policy
    assert [p.name for p in path.parent.iterdir()] == ["policy.json"]  # no temp file left


def test_loading_a_file_of_another_tier_fails(tmp_path):
    path = StaticPolicy(3).save(tmp_path / "policy.json")
    with pytest.raises(ValueError, match="static"):
        LinearPolicy.load(path)
    with pytest.raises(ValueError, match="holds a 'static' policy, not 'defended'"):
        TunedDefendedPolicy.load(path)


def test_linear_policy_rejects_a_level_off_the_grid():
    with pytest.raises(ValueError, match="level 5"):
        LinearPolicy(GRID, 5, (1.0, 0.0), (1.0, 0.0))
