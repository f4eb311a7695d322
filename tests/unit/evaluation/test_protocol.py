"""The evaluation protocol: nominal env, common random numbers, metrics, stress view."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.evaluation import (
    EPISODE_METRICS,
    TRACE_COLUMNS,
    episode_metrics,
    evaluate_policy,
    price_traces,
    stress_alphas,
    stress_evaluate,
    worst_case,
)
from phantom_assets.market import make_env
from phantom_assets.policies import (
    QTablePolicy,
    StaticPolicy,
    SurgePolicy,
    TrainingParams,
    train_policy,
)

ALPHAS = [0.0, 0.5, 1.0]


def test_evaluation_rows_carry_every_metric_per_alpha_and_episode(spec):
    frame = evaluate_policy(StaticPolicy.mid(spec.n_actions), spec, ALPHAS, 3, seed=40)
    assert frame.height == 9
    assert set(EPISODE_METRICS + TRACE_COLUMNS) <= set(frame.columns)
    assert frame.filter(alpha=0.5)["seed"].to_list() == [40, 41, 42]
    assert (frame["steps"] == spec.episode_steps).all()


def test_episode_i_replays_env_reset_with_seed_plus_i_at_the_specs_lambda(spec):
    frame = evaluate_policy(StaticPolicy(6), spec, [0.5], 2, seed=10)
    env = make_env(spec, 0.5, lam=spec.lam)
    for episode in range(2):
        env.reset(seed=10 + episode)
        rewards = [env.step(6)[1] for _ in range(spec.episode_steps)]
        assert frame["reward"][episode] == pytest.approx(sum(rewards))


def test_baseline_and_robust_policies_get_identical_nominal_episodes(spec):
    """Regression for pitfall 5: defended and baseline policies were evaluated differently."""
    params = TrainingParams(timesteps=64, q_demand_bins=2, q_score_bins=2, q_price_bins=2)
    frames = [
        evaluate_policy(
            train_policy("qtable", mode, spec, 0.5, params, 1).policy, spec, ALPHAS, 2, 5
        )
        for mode in ("baseline", "robust")
    ]
    for frame in frames:  # no adversary: every step ran at the grid α
        assert frame["alpha_executed"].to_list() == frame["alpha"].to_list()
    keys = ["alpha", "episode", "seed"]
    assert frames[0].select(keys).equals(frames[1].select(keys))


def test_episode_metrics_aggregate_sums_purchase_weighted_and_step_means():
    trace = {"revenue": np.array([100.0, 300.0]), "profit": np.array([40.0, 60.0]),
             "purchases": np.array([1.0, 3.0]), "reward": np.array([30.0, 50.0]),
             "leakage": np.array([0.2, 0.4]), "volatility": np.array([0.0, 0.1]),
             "supra_share": np.array([0.0, 0.5]), "mean_price": np.array([90.0, 110.0]),
             "alpha": np.array([0.3, 0.3]), "terminated": np.array([False])}  # fmt: skip
    out = episode_metrics(trace)
    assert (out["revenue"], out["profit"], out["reward"]) == (400.0, 100.0, 80.0)
    assert out["coi_level"] == pytest.approx(25.0) and out["margin"] == pytest.approx(0.25)
    assert out["leakage"] == pytest.approx(0.3) and out["supra_share"] == pytest.approx(0.25)
    assert (out["price_first"], out["price_last"], out["price_std"]) == (90.0, 110.0, 10.0)


def test_evaluate_policy_rejects_alphas_outside_the_unit_interval(spec):
    with pytest.raises(ValueError, match="alphas"):
        evaluate_policy(StaticPolicy(4), spec, [0.5, 1.2], 1, seed=0)


def test_stress_alphas_clip_the_interval_to_the_unit_range():
    assert stress_alphas(0.1, 0.2, 5) == pytest.approx([0.0, 0.075, 0.15, 0.225, 0.3])
    assert stress_alphas(0.5, 0.0, 5) == pytest.approx([0.5])


def test_worst_case_keeps_the_rows_of_the_alpha_with_the_lowest_mean():
    frame = pl.DataFrame({"alpha": [0.2, 0.2, 0.4, 0.4, 0.6, 0.6],
                          "reward": [5.0, 1.0, 2.0, 2.0, 3.0, 1.0]})  # fmt: skip
    worst = worst_case(frame, "reward")  # means 3, 2, 2: tie -> the smaller α
    assert worst["alpha"].to_list() == [0.4, 0.4] and worst["worst_alpha"][0] == 0.4


def test_stress_evaluate_picks_the_worst_alpha_on_selection_seeds_and_tests_it_on_held_out_ones(
    spec,
):
    policy = SurgePolicy(spec.n_actions)
    stress = stress_evaluate(policy, spec, 0.5, 0.25, 2, seed=3, test_episodes=3, test_seed=50,
                             candidates=3)  # fmt: skip
    full = evaluate_policy(policy, spec, [0.25, 0.5, 0.75], 2, seed=3)
    means = full.group_by("alpha").agg(pl.col("reward").mean()).sort("reward", "alpha")
    selection = stress.filter(pl.col("split") == "selection")
    test = stress.filter(pl.col("split") == "test")
    assert selection["reward"].mean() == pytest.approx(means["reward"][0])
    assert selection["seed"].to_list() == [3, 4] and test["seed"].to_list() == [50, 51, 52]
    worst = means["alpha"][0]
    assert set(test["alpha"].to_list()) == {worst} == set(stress["worst_alpha"].to_list())
    held_out = evaluate_policy(policy, spec, [worst], 3, seed=50)
    assert test["reward"].to_list() == pytest.approx(held_out["reward"].to_list())
    assert set(stress["radius"].to_list()) == {0.25} and set(stress["alpha0"].to_list()) == {0.5}


def test_stress_evaluate_refuses_overlapping_seed_ranges(spec):
    with pytest.raises(ValueError, match="overlap"):
        stress_evaluate(SurgePolicy(spec.n_actions), spec, 0.5, 0.25, 4, seed=3,
                        test_episodes=2, test_seed=6)  # fmt: skip


def test_price_traces_follow_the_executed_prices(spec):
    traces = price_traces(QTablePolicy(np.zeros((8, spec.n_actions)), (2, 2, 2)), spec, [0.0], 1)
    assert traces.height == spec.episode_steps
    smoothed = spec.smoothing ** np.arange(1, spec.episode_steps + 1)  # level 0 from scale 1
    scale = smoothed * 1.0 + (1 - smoothed) * spec.price_levels[0]
    expected = np.clip(spec.anchor[None, :] * scale[:, None], spec.p_low, spec.p_high).mean(axis=1)
    assert traces["mean_price"].to_numpy() == pytest.approx(expected)
