"""train_policy: every tier trains on a tiny budget, modes pick their market, reruns reproduce."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from phantom_assets.evaluation import evaluate_policy
from phantom_assets.policies import (
    HEURISTIC_MODE,
    HEURISTIC_TIERS,
    LEARNING_CURVE_SCHEMA,
    MODES,
    POLICY_FILENAMES,
    TIERS,
    Policy,
    QTablePolicy,
    TrainingParams,
    load_policy,
    train_policy,
    training_env,
)

GRID = [(tier, None) for tier in HEURISTIC_TIERS] + [
    (tier, mode) for tier in TIERS if tier not in HEURISTIC_TIERS for mode in MODES
]


@pytest.mark.parametrize(("tier", "mode"), GRID)
def test_every_tier_trains_saves_loads_and_evaluates(tmp_path, spec, tiny, tier, mode):
    trained = train_policy(tier, mode, spec, 0.3, tiny, seed=3)
    assert isinstance(trained.policy, Policy)
    assert (trained.tier, trained.mode, trained.seed) == (tier, mode or HEURISTIC_MODE, 3)
    assert trained.key.startswith(tier) and trained.key.endswith("a030")
    assert trained.learning_curve.schema == LEARNING_CURVE_SCHEMA
    if tier not in HEURISTIC_TIERS:
        curve = trained.learning_curve
        assert curve.height >= tiny.timesteps // spec.episode_steps - 1
        assert curve["timesteps"].is_sorted() and curve["timesteps"].max() <= tiny.timesteps + 64
    path = trained.policy.save(tmp_path / POLICY_FILENAMES[tier])
    loaded = load_policy(tier, path)
    before = evaluate_policy(trained.policy, spec, [0.0, 1.0], 2, seed=50)
    after = evaluate_policy(loaded, spec, [0.0, 1.0], 2, seed=50)
    assert before.equals(after)
    assert before.height == 4 and before["revenue"].min() > 0


@pytest.mark.parametrize("tier", ["ppo", "qtable"])
def test_same_seed_reproduces_identical_weights_and_metrics(spec, tiny, tier):
    runs = [train_policy(tier, "robust", spec, 0.5, tiny, seed=7) for _ in range(2)]
    weights = [
        {"q": run.policy.q} if isinstance(run.policy, QTablePolicy) else run.policy.parameters()
        for run in runs
    ]
    assert weights[0].keys() == weights[1].keys()
    assert all(np.array_equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert runs[0].learning_curve.equals(runs[1].learning_curve)
    metrics = [evaluate_policy(run.policy, spec, [0.5], 2, seed=9) for run in runs]
    assert metrics[0].equals(metrics[1])


def test_a_different_seed_gives_different_ppo_weights(spec, tiny):
    """Guards the determinism test above against passing vacuously."""
    a, b = (train_policy("ppo", "baseline", spec, 0.5, tiny, seed=s).policy for s in (1, 2))
    first, second = a.parameters(), b.parameters()
    assert any(not np.array_equal(first[k], second[k]) for k in first)


def test_training_env_baseline_has_no_penalty_or_adversary_and_robust_has_both(spec):
    baseline = training_env(spec, 0.4, "baseline").unwrapped
    robust = training_env(spec, 0.4, "robust").unwrapped
    assert (baseline.robust, baseline.lam) == (False, 0.0)
    assert (robust.robust, robust.lam) == (True, spec.lam)


@pytest.mark.parametrize(("tier", "mode"), [("ppo", None), ("static", "robust"), ("nope", None)])
def test_train_policy_rejects_a_mode_that_does_not_fit_the_tier(spec, tiny, tier, mode):
    with pytest.raises(ValueError, match=r"mode|tier"):
        train_policy(tier, mode, spec, 0.3, tiny, seed=0)


def test_training_params_reject_a_zero_budget_naming_the_field():
    with pytest.raises(ValueError, match="timesteps"):
        TrainingParams(timesteps=0)
    assert dataclasses.replace(TrainingParams(), net_arch=[8]).net_arch == (8,)


def test_training_params_take_budget_device_and_threads_from_the_settings():
    from phantom_assets.config import TrainingConfig

    config = TrainingConfig(timesteps=123, device="cuda", torch_threads=2)
    params = TrainingParams.from_config(config, net_arch=(8,))
    assert (params.timesteps, params.device, params.torch_threads) == (123, "cuda", 2)
    assert params.as_dict()["net_arch"] == [8]
