"""Stable-Baselines3 tiers (PPO, A2C, DQN) behind the `Policy` interface.

torch and stable_baselines3 are imported inside the functions only. Rewards are multiplied by the
spec's `reward_scale` for learning (a step's profit is then O(1)); learning curves stay in money.
Training fixes the seed (`set_random_seed` + the model/env seed) and torch's thread count, so a
rerun with the same inputs gives identical weights on the same machine.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import polars as pl

from phantom_assets.policies.base import LEARNING_CURVE_SCHEMA, TrainingParams
from phantom_assets.policies.tracking import wandb_callback

logger = logging.getLogger(__name__)


class SB3Policy:
    """A trained SB3 model acting greedily (`predict(..., deterministic=True)`)."""

    tier: ClassVar[str] = ""
    algorithm: ClassVar[str] = ""

    def __init__(self, model: Any) -> None:
        """Wrap a trained SB3 model of this class's algorithm."""
        self.model = model

    def act(self, obs: np.ndarray) -> int:
        """Deterministic action of the model."""
        action, _ = self.model.predict(np.asarray(obs, dtype=np.float32), deterministic=True)
        return int(action)

    def act_batch(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic actions of the model on a (B, obs) batch, in one network call."""
        actions, _ = self.model.predict(np.asarray(obs, dtype=np.float32), deterministic=True)
        return np.asarray(actions, dtype=np.int64).reshape(-1)

    def reset(self) -> None:
        """Feed-forward policies keep no per-episode state."""

    def save(self, path: str | Path) -> Path:
        """Save the model zip atomically (temp `.zip` in the same folder, then `os.replace`)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".zip")
        os.close(fd)
        try:
            self.model.save(tmp)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu") -> SB3Policy:
        """Read a model zip written by `save`."""
        return cls(_algorithm_class(cls.algorithm).load(str(path), device=device))

    def parameters(self) -> dict[str, np.ndarray]:
        """The network weights as numpy arrays (for determinism checks and hashing)."""
        state = self.model.policy.state_dict()
        return {name: tensor.detach().cpu().numpy() for name, tensor in state.items()}


class PPOPolicy(SB3Policy):
    """Proximal Policy Optimization tier."""

    tier = "ppo"
    algorithm = "PPO"


class A2CPolicy(SB3Policy):
    """Advantage Actor-Critic tier."""

    tier = "a2c"
    algorithm = "A2C"


class DQNPolicy(SB3Policy):
    """Deep Q-Network tier."""

    tier = "dqn"
    algorithm = "DQN"


SB3_POLICIES: dict[str, type[SB3Policy]] = {"ppo": PPOPolicy, "a2c": A2CPolicy, "dqn": DQNPolicy}


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Fix torch's intra-op thread count inside the block (results depend on it), then restore."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _algorithm_class(name: str) -> Any:
    import stable_baselines3

    return getattr(stable_baselines3, name)


@functools.cache
def _curve_callback_class() -> type:
    from stable_baselines3.common.callbacks import BaseCallback

    class LearningCurveCallback(BaseCallback):
        """Records (episode, timesteps, unscaled episode reward); logs progress every N steps."""

        def __init__(self, log_every: int, reward_scale: float) -> None:
            super().__init__(verbose=0)
            self.log_every, self.reward_scale = log_every, reward_scale
            self.rows: list[tuple[int, int, float]] = []
            self._returns: np.ndarray | None = None

        def _on_step(self) -> bool:
            rewards = np.asarray(self.locals["rewards"], dtype=np.float64) / self.reward_scale
            dones = np.asarray(self.locals["dones"], dtype=bool)
            if self._returns is None:
                self._returns = np.zeros_like(rewards)
            self._returns += rewards
            for env_index in np.flatnonzero(dones):  # at most n_envs per step
                episode_return = float(self._returns[env_index])
                self.rows.append((len(self.rows), self.num_timesteps, episode_return))
                self._returns[env_index] = 0.0
            if self.n_calls % max(1, self.log_every // self.training_env.num_envs) == 0:
                last = self.rows[-1][2] if self.rows else float("nan")
                logger.info(
                    "time/total_timesteps=%d rollout/episodes=%d rollout/ep_rew_last=%.1f",
                    self.num_timesteps,
                    len(self.rows),
                    last,
                )
            return True

    return LearningCurveCallback


def sb3_hyperparameters(tier: str, params: TrainingParams) -> dict[str, Any]:
    """Constructor keyword arguments of the tier's SB3 algorithm (JSON-ready) for `params.envs`
    markets stepped together (`TrainingParams.envs`: the samples per update stay one market's).

    DQN's buffer, warm-up and target interval are clipped to the tier's budget so that tiny test
    budgets still learn.
    """
    common = {"gamma": params.gamma, "policy_kwargs": {"net_arch": list(params.net_arch)}}
    envs = params.envs
    if tier == "ppo":
        n_steps = params.ppo_n_steps
        return {
            **common,
            "learning_rate": params.learning_rate,
            "n_steps": n_steps // envs,
            "batch_size": min(params.ppo_batch_size, n_steps),
            "n_epochs": params.ppo_epochs,
            "ent_coef": params.ent_coef,
        }
    if tier == "a2c":
        return {
            **common,
            "learning_rate": params.learning_rate,
            "n_steps": params.a2c_n_steps // envs,
            "ent_coef": params.ent_coef,
        }
    if tier == "dqn":
        budget = params.tier_timesteps(tier)
        target = max(1, min(params.dqn_target_update, budget // 10))
        return {
            **common,
            "learning_rate": params.dqn_learning_rate,
            "buffer_size": min(params.dqn_buffer_size, budget),
            "learning_starts": min(params.dqn_learning_starts, budget // 2),
            "batch_size": params.dqn_batch_size,
            "train_freq": params.dqn_train_freq,
            "gradient_steps": envs,
            "exploration_fraction": params.dqn_exploration_fraction,
            "target_update_interval": target,
        }
    raise ValueError(f"unknown SB3 tier {tier!r}; choose one of {sorted(SB3_POLICIES)}")


def train_sb3(
    tier: str,
    make_market: Callable[[], gym.Env],
    params: TrainingParams,
    seed: int,
    reward_scale: float,
    run: Any | None = None,
) -> tuple[SB3Policy, pl.DataFrame, dict[str, Any]]:
    """Train `tier` for its budget (`params.tier_timesteps`) with fixed seed and threads on
    `params.envs` markets built by `make_market`, stepped together (SB3's `DummyVecEnv`; market
    i is seeded `seed + i`).

    The markets' rewards are multiplied by `reward_scale` (the spec's) for learning; the learning
    curve is in unscaled (money) units. With a W&B `run`, SB3's metrics are logged to it every
    `params.log_every` steps while the model trains (`tracking.wandb_callback`).

    Returns:
        (policy, learning curve frame, hyperparameters).
    """
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.utils import set_random_seed
    from stable_baselines3.common.vec_env import DummyVecEnv

    def scaled() -> gym.Env:  # wrapped as SB3 wraps a single env itself (Monitor outermost)
        return Monitor(gym.wrappers.TransformReward(make_market(), lambda r: r * reward_scale))

    hyper, steps = sb3_hyperparameters(tier, params), params.tier_timesteps(tier)
    with torch_threads(params.torch_threads):
        set_random_seed(seed)
        algo = _algorithm_class(SB3_POLICIES[tier].algorithm)
        kwargs = copy.deepcopy(hyper)  # SB3 adds entries to policy_kwargs in place
        markets = DummyVecEnv([scaled] * params.envs)
        model = algo("MlpPolicy", markets, seed=seed, device=params.device, verbose=0, **kwargs)
        # Progress goes through our callback's logging; SB3's default logger would create an
        # empty /tmp/SB3-<timestamp> folder per training run.
        model.set_logger(Logger(folder=None, output_formats=[]))
        callback = _curve_callback_class()(params.log_every, reward_scale)
        callbacks = [callback]
        if run is not None:
            callbacks.append(wandb_callback(run, params.log_every, reward_scale))
        model.learn(total_timesteps=steps, callback=CallbackList(callbacks))
    curve = pl.DataFrame(callback.rows, schema=LEARNING_CURVE_SCHEMA, orient="row")
    record = {
        **hyper,
        "algorithm": SB3_POLICIES[tier].algorithm,
        "device": params.device,
        "torch_threads": params.torch_threads,
        "envs": params.envs,
        "reward_scale": reward_scale,
        "timesteps": steps,
    }
    return SB3_POLICIES[tier](model), curve, record
