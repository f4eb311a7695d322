"""W&B tracking: a no-op unless enabled; offline runs read back from the files wandb wrote.

Live logging, failure marking and the pass-through guarantee are checked on real offline runs
(`mode="offline"`, run directories under tmp) parsed by `wandb_files.read_offline_run`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from phantom_assets.market import MarketSpec
from phantom_assets.policies import TrainedPolicy, TrainingParams, train_policy, wandb_run
from phantom_assets.policies.tracking import run_location
from tests.unit.policies.wandb_files import OfflineRun, offline_runs, read_offline_run

TrainTracked = Callable[..., tuple[TrainedPolicy, OfflineRun]]


def test_wandb_run_is_a_no_op_when_disabled():
    already = "wandb" in sys.modules
    with wandb_run({"seed": 1}) as run:
        assert run is None
    assert ("wandb" in sys.modules) == already


@pytest.fixture
def train_tracked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: MarketSpec
) -> TrainTracked:
    """Train one policy inside an offline run under tmp; return it with the run's records."""
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)

    def train(tier: str, params: TrainingParams) -> tuple[TrainedPolicy, OfflineRun]:
        with wandb_run({"tier": tier}, enabled=True, mode="offline", dir=str(tmp_path)) as run:
            location = run_location(run)
            trained = train_policy(tier, "baseline", spec, 0.3, params, seed=3, run=run)
        (directory,) = offline_runs(tmp_path)
        assert location == str(directory)
        return trained, read_offline_run(directory)

    return train


def test_sb3_training_logs_namespaced_metrics_every_log_every_steps_while_it_trains(
    train_tracked: TrainTracked, tiny: TrainingParams
):
    trained, run = train_tracked("ppo", tiny)
    steps = list(range(tiny.log_every, tiny.timesteps + 1, tiny.log_every))
    assert run.exit_code == 0
    assert [step for step, _ in run.metric("time/total_timesteps")] == steps
    assert all(value == step for step, value in run.metric("time/total_timesteps"))
    assert all(fps > 0 for _, fps in run.metric("time/fps"))
    # SB3's update statistics exist only once the first rollout (ppo_n_steps) has been trained on.
    updated = [step for step, _ in run.metric("train/loss")]
    assert updated == [s for s in steps if s > tiny.ppo_n_steps] and updated
    assert {"train/entropy_loss", "train/value_loss", "train/n_updates"} <= run.history[-1].keys()
    # rollout/ep_rew_mean: unscaled mean return of the episodes finished before the logged step.
    curve = trained.learning_curve
    for step, mean in run.metric("rollout/ep_rew_mean"):
        done = curve.filter(curve["timesteps"] < step)["reward"]
        assert mean == pytest.approx(done.mean(), rel=1e-6)
    assert len(run.metric("rollout/ep_rew_mean")) == len(steps)


def test_qtable_training_logs_each_episode_return_as_it_ends(
    train_tracked: TrainTracked, tiny: TrainingParams
):
    trained, run = train_tracked("qtable", tiny)
    curve = trained.learning_curve
    assert curve.height > 0 and run.exit_code == 0
    assert run.metric("rollout/ep_rew") == list(
        zip(curve["timesteps"].to_list(), curve["reward"].to_list(), strict=True)
    )


@pytest.mark.parametrize("tier", ["ppo", "dqn", "qtable"])
def test_tracking_does_not_change_the_trained_policy(
    train_tracked: TrainTracked, tiny: TrainingParams, spec: MarketSpec, tier: str
):
    tracked, run = train_tracked(tier, tiny)
    untracked = train_policy(tier, "baseline", spec, 0.3, tiny, seed=3)
    assert run.history, "the tracked training logged nothing"
    assert tracked.learning_curve.equals(untracked.learning_curve)
    if tier == "qtable":
        assert np.array_equal(tracked.policy.q, untracked.policy.q)
    else:
        first, second = tracked.policy.parameters(), untracked.policy.parameters()
        assert all(np.array_equal(first[k], second[k]) for k in first)


def test_a_training_that_crashes_inside_the_run_marks_it_failed_after_logging_live(
    train_tracked: TrainTracked, tiny: TrainingParams, tmp_path: Path
):
    """Regression: runs used to be finished with exit code 0 whatever happened inside them."""
    # An infinite step size turns the weights to NaN in the first update; the next forward pass
    # of the policy raises, after the first rollout was logged.
    diverging = dataclasses.replace(tiny, learning_rate=float("inf"))
    with pytest.raises(ValueError, match="invalid values"):
        train_tracked("ppo", diverging)
    (directory,) = offline_runs(tmp_path)
    run = read_offline_run(directory)
    assert run.exit_code == 1
    assert [step for step, _ in run.metric("time/total_timesteps")] == [tiny.log_every]
