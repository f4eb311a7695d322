"""train_policy: every tier trains on a tiny budget, every mode trains on its market, reruns
reproduce, budgets and the plateau statistic."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from phantom_assets.market import EpisodeLaw
from phantom_assets.policies import (
    HEURISTIC_MODE,
    HEURISTIC_TIERS,
    LEARNABLE_TIERS,
    LEARNING_CURVE_SCHEMA,
    POLICY_FILENAMES,
    TRAINING_MODES,
    Policy,
    QTablePolicy,
    TrainingParams,
    has_plateaued,
    load_policy,
    plateau_ratio,
    train_policy,
    training_env,
)
from phantom_assets.policies.artifacts import probe_observations

GRID = [(tier, None) for tier in HEURISTIC_TIERS] + [(tier, "baseline") for tier in LEARNABLE_TIERS]


def weights(policy: Policy) -> dict[str, np.ndarray]:
    return {"q": policy.q} if isinstance(policy, QTablePolicy) else policy.parameters()


@pytest.mark.parametrize(("tier", "mode"), GRID)
def test_every_tier_trains_saves_and_loads_to_the_same_actions(tmp_path, spec, tiny, tier, mode):
    fixed = {"tuned": spec.action_index(3, 1, 0), "defended": spec.action_index(3, 1, 1)}
    trained = train_policy(tier, mode, spec, 0.3, tiny, seed=3, fixed_action=fixed.get(tier))
    assert isinstance(trained.policy, Policy)
    assert (trained.tier, trained.mode, trained.seed) == (tier, mode or HEURISTIC_MODE, 3)
    assert trained.key.startswith(tier) and trained.key.endswith("a030")
    assert trained.learning_curve.schema == LEARNING_CURVE_SCHEMA
    if tier not in HEURISTIC_TIERS:
        curve = trained.learning_curve
        assert curve.height == tiny.timesteps // spec.episode_steps
        assert curve["timesteps"].is_sorted() and curve["timesteps"].max() <= tiny.timesteps
        # Money per episode (a step's profit is O(1 / reward_scale)), not the scaled reward.
        assert curve["reward"].min() > 1.0 / spec.reward_scale
    loaded = load_policy(tier, trained.policy.save(tmp_path / POLICY_FILENAMES[tier]))
    probes = probe_observations(spec, 0.3, 40)
    for policy in (trained.policy, loaded):
        policy.reset()
    actions = [[p.act(o) for o in probes] for p in (trained.policy, loaded)]
    assert actions[0] == actions[1]
    assert all(0 <= a < spec.n_actions for a in actions[0])


@pytest.mark.parametrize("mode", list(TRAINING_MODES))
def test_training_env_has_the_adversary_and_lambda_of_its_mode(spec, mode):
    env = training_env(spec, 0.4, mode, ablation_lam=2.5).unwrapped
    setting = TRAINING_MODES[mode]
    assert (env.robust, env.lam) == (setting.robust, 2.5 if setting.charged else 0.0)
    assert env.default_alpha == 0.4 and env.detector == "fitted"


def test_a_training_law_sets_every_training_episodes_alpha_and_k_and_is_recorded(spec, tiny):
    law = EpisodeLaw((0.0, 1.0), (2, 8))
    env = training_env(spec, 0.5, "robust", ablation_lam=0.0, law=law)
    drawn = {(info["alpha"], info["k"]) for info in (env.reset(seed=s)[1] for s in range(20))}
    assert len(drawn) == 20 and {k for _, k in drawn} == {2, 8}
    runs = [train_policy("qtable", "baseline", spec, 0.5, tiny, seed=4, law=law) for _ in range(2)]
    assert runs[0].hyperparameters["law"] == dataclasses.asdict(law)
    assert np.array_equal(runs[0].policy.q, runs[1].policy.q)  # same seed, same draws
    fixed = train_policy("qtable", "baseline", spec, 0.5, tiny, seed=4)
    assert fixed.hyperparameters["law"] is None
    assert not fixed.learning_curve.equals(runs[0].learning_curve)


@pytest.mark.parametrize(
    ("tier", "mode"),
    [(t, m) for m in TRAINING_MODES for t in ("qtable",)] + [("dqn", "robustcharged")],
)
def test_train_policy_records_the_market_its_mode_trained_on(spec, tiny, tier, mode):
    params = dataclasses.replace(tiny, ablation_lam=2.5)
    trained = train_policy(tier, mode, spec, 0.5, params, seed=1)
    setting = TRAINING_MODES[mode]
    hyper = trained.hyperparameters
    assert (hyper["robust"], hyper["lam"]) == (setting.robust, 2.5 if setting.charged else 0.0)
    assert hyper["reward_scale"] == spec.reward_scale


def test_the_charged_mode_trains_on_rewards_net_of_the_leak_charge(spec, tiny):
    """Same seed, same first (random) actions and draws: only the λ·leak charge differs."""
    charged = dataclasses.replace(tiny, ablation_lam=5.0)
    curves = [
        train_policy("qtable", mode, spec, 0.5, charged, seed=2).learning_curve
        for mode in ("baseline", "charged")
    ]
    first = [curve["reward"][0] for curve in curves]
    assert first[1] < first[0] - 1_000


@pytest.mark.parametrize("tier", ["ppo", "dqn", "qtable"])
def test_same_seed_reproduces_identical_weights_and_curves(spec, tiny, tier):
    runs = [train_policy(tier, "robust", spec, 0.5, tiny, seed=7) for _ in range(2)]
    first, second = (weights(run.policy) for run in runs)
    assert first.keys() == second.keys()
    assert all(np.array_equal(first[k], second[k]) for k in first)
    assert runs[0].learning_curve.equals(runs[1].learning_curve)


@pytest.mark.parametrize("tier", ["ppo", "dqn"])
def test_a_different_seed_gives_different_weights(spec, tiny, tier):
    """Guards the determinism test above against passing vacuously."""
    first, second = (
        weights(train_policy(tier, "baseline", spec, 0.5, tiny, seed=s).policy) for s in (1, 2)
    )
    assert any(not np.array_equal(first[k], second[k]) for k in first)


@pytest.mark.parametrize(("tier", "mode"), [("ppo", None), ("static", "robust"), ("nope", None)])
def test_train_policy_rejects_a_mode_that_does_not_fit_the_tier(spec, tiny, tier, mode):
    with pytest.raises(ValueError, match=r"mode|tier"):
        train_policy(tier, mode, spec, 0.3, tiny, seed=0)


def test_tier_budgets_multiply_the_default_and_reach_the_trainer(spec, tiny):
    params = dataclasses.replace(tiny, timesteps=64, budget_multipliers={"qtable": 2.0})
    assert (params.tier_timesteps("qtable"), params.tier_timesteps("ppo")) == (128, 64)
    trained = train_policy("qtable", "baseline", spec, 0.5, params, seed=0)
    assert trained.hyperparameters["timesteps"] == 128
    assert trained.learning_curve["timesteps"].max() == 128


def test_training_params_reject_bad_values_naming_the_field():
    with pytest.raises(ValueError, match="timesteps"):
        TrainingParams(timesteps=0)
    with pytest.raises(ValueError, match="ablation_lam"):
        TrainingParams(ablation_lam=-1.0)
    with pytest.raises(ValueError, match="budget_multipliers"):
        TrainingParams(budget_multipliers={"ppo": 0.0})
    with pytest.raises(ValueError, match="envs = 4 must divide ppo_n_steps and a2c_n_steps"):
        TrainingParams(envs=4)  # 25 A2C steps per update cannot be split over 4 markets
    assert dataclasses.replace(TrainingParams(), net_arch=[8]).net_arch == (8,)


def test_training_params_take_budget_lambda_device_threads_and_envs_from_the_settings():
    from phantom_assets.config import TrainingConfig

    config = TrainingConfig(timesteps=123, ablation_lam=0.5, device="cuda", torch_threads=2, envs=5)
    params = TrainingParams.from_config(config, net_arch=(8,))
    assert (
        params.timesteps,
        params.ablation_lam,
        params.device,
        params.torch_threads,
        params.envs,
    ) == (123, 0.5, "cuda", 2, 5)
    assert params.as_dict()["net_arch"] == [8]


@pytest.mark.parametrize(
    ("rewards", "ratio"),
    [
        ([5.0] * 10, 1.0),
        ([1, 1, 1, 1, 1, 1, 2, 2, 3, 3], 1.5),
        ([-4] * 8 + [-2, -2], 1.5),
        ([1.0, 2.0, 3.0, 4.0], float("nan")),
    ],
)
def test_plateau_ratio_compares_the_last_fifth_of_episodes_with_the_fifth_before(rewards, ratio):
    np.testing.assert_allclose(plateau_ratio(np.asarray(rewards, dtype=float)), ratio)


@pytest.mark.parametrize(
    ("ratio", "flat"), [(1.0, True), (0.981, True), (1.021, False), (None, None), (np.nan, None)]
)
def test_a_curve_has_plateaued_when_its_ratio_is_within_two_percent_of_one(ratio, flat):
    assert has_plateaued(ratio) is flat


@pytest.mark.parametrize(("tier", "delta", "other"), [("tuned", 0, 1), ("defended", 2, 0)])
def test_a_tuned_tier_plays_the_given_fixed_response_of_its_kind_and_nothing_else(
    spec, tiny, tier, delta, other
):
    fixed = spec.action_index(4, 2, delta)
    trained = train_policy(tier, None, spec, 0.5, tiny, seed=0, fixed_action=fixed)
    assert trained.policy.act(probe_observations(spec, 0.5, 1)[0]) == fixed
    assert trained.hyperparameters["action"] == fixed
    assert trained.hyperparameters["delta"] == spec.action_values(fixed)[2]
    with pytest.raises(ValueError, match="pass its action"):
        train_policy(tier, None, spec, 0.5, tiny, seed=0)
    with pytest.raises(ValueError, match=f"the {tier} tier's action .* has δ"):
        train_policy(
            tier, None, spec, 0.5, tiny, seed=0, fixed_action=spec.action_index(4, 2, other)
        )


@pytest.mark.parametrize(("tier", "per_update"), [("ppo", 64), ("a2c", 8), ("dqn", None)])
def test_markets_stepped_together_keep_the_samples_per_update_and_every_episode(
    spec, tiny, tier, per_update
):
    params = dataclasses.replace(tiny, envs=4, a2c_n_steps=8)
    runs = [train_policy(tier, "baseline", spec, 0.5, params, seed=3) for _ in range(2)]
    model, curve = runs[0].policy.model, runs[0].learning_curve
    assert model.n_envs == 4 and runs[0].hyperparameters["envs"] == 4
    if tier == "dqn":  # 4 gradient steps per 4 steps of the 4 markets: one per 4 transitions
        assert (model.gradient_steps, model.train_freq.frequency) == (4, params.dqn_train_freq)
    else:
        assert model.n_steps * model.n_envs == per_update
    assert curve.height == params.timesteps // spec.episode_steps  # every market's episodes
    assert curve["timesteps"].max() == params.timesteps
    first, second = (weights(run.policy) for run in runs)
    assert all(np.array_equal(first[k], second[k]) for k in first)
