"""Optional Weights & Biases tracking of training: the run, live SB3 metrics and episode returns.

wandb is an optional dependency (the `tracking` extra) and imported only by `wandb_run` when a run
is enabled; stable_baselines3 only when the SB3 callback is built.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

__all__ = ["TrackedEpisodes", "run_location", "wandb_callback", "wandb_run"]

TRAIN_PREFIX = "train/"
"""SB3 records its update statistics (loss, entropy, clip fraction, ...) under this prefix."""


@contextlib.contextmanager
def wandb_run(
    config: dict[str, Any],
    *,
    enabled: bool = False,
    project: str = "phantom",
    api_key: str | None = None,
    **init: Any,
) -> Iterator[Any]:
    """Yield a W&B run (``enabled=True``) or None; wandb is imported only when enabled.

    The run is wandb's own context manager: leaving the block normally finishes it with exit
    code 0, an exception inside marks it failed (exit code 1) and propagates. wandb's service
    is torn down after each run, so its records are complete when the block exits.

    Args:
        config: run configuration (hyperparameters, seed, policy key).
        enabled: start a run only when True.
        project: W&B project name.
        api_key: log in with this key first (online runs; otherwise wandb's own configuration).
        **init: further ``wandb.init`` keyword arguments (e.g. ``mode="offline"``).

    Raises:
        ImportError: tracking is enabled but the `tracking` extra (wandb) is not installed.
    """
    if not enabled:
        yield None
        return
    try:
        import wandb
    except ImportError as e:
        raise ImportError(
            "experiment tracking is configured (WANDB_MODE / WANDB_API_KEY) but wandb is not "
            "installed: install the extra with `pip install -e '.[tracking]'` or unset WANDB_MODE "
            "and WANDB_API_KEY"
        ) from e
    if api_key:
        wandb.login(key=api_key, relogin=False)
    try:
        with wandb.init(project=project, config=config, **init) as run:
            yield run
    finally:
        # `finish` returns before wandb's service has written (offline) or sent (online) the
        # last records; teardown waits for them. Its atexit hook would too, but does not run in
        # the forked step processes of Dagster's multiprocess executor.
        wandb.teardown()


def run_location(run: Any) -> str:
    """Where to find a run: its URL online, its local run directory offline."""
    return str(run.url or run.settings.sync_dir)


def wandb_callback(run: Any, log_every: int, reward_scale: float) -> Any:
    """An SB3 callback that logs to `run` every `log_every` steps while the model trains.

    Args:
        run: the W&B run (from `wandb_run`).
        log_every: environment steps between two logged rows (the x-axis is the timestep).
        reward_scale: the factor the training rewards were multiplied by; episode returns are
            logged in unscaled (market) units like the learning curve.
    """
    if log_every < 1 or not reward_scale > 0:
        raise ValueError(
            f"log_every must be >= 1 and reward_scale > 0, got {log_every}, {reward_scale}"
        )
    return _wandb_callback_class()(run, log_every, reward_scale)


@functools.cache
def _wandb_callback_class() -> type:
    from stable_baselines3.common.callbacks import BaseCallback

    class WandbCallback(BaseCallback):
        """Logs SB3's metrics live, namespaced like SB3's own logger.

        `train/*`: the latest update's statistics as SB3 recorded them; `rollout/ep_rew_mean`:
        mean unscaled return of the last (up to 100) finished episodes; `time/fps` and
        `time/total_timesteps`.
        """

        def __init__(self, run: Any, log_every: int, reward_scale: float) -> None:
            super().__init__(verbose=0)
            self.run, self.log_every, self.reward_scale = run, log_every, reward_scale

        def _on_step(self) -> bool:
            if self.n_calls % max(1, self.log_every // self.training_env.num_envs):
                return True
            metrics: dict[str, float] = {
                key: float(value)
                for key, value in self.logger.name_to_value.items()
                if key.startswith(TRAIN_PREFIX) and isinstance(value, int | float | np.number)
            }
            episodes = [info["r"] for info in self.model.ep_info_buffer or ()]
            if episodes:
                metrics["rollout/ep_rew_mean"] = float(np.mean(episodes)) / self.reward_scale
            elapsed = max((time.time_ns() - self.model.start_time) / 1e9, 1e-9)
            metrics["time/fps"] = self.num_timesteps / elapsed
            metrics["time/total_timesteps"] = self.num_timesteps
            self.run.log(metrics, step=self.num_timesteps)
            return True

    return WandbCallback


class TrackedEpisodes(gym.Wrapper):
    """Logs every finished episode's return to a W&B run as it ends (tiers without SB3).

    A pass-through wrapper: observations, rewards and seeding are unchanged, so tracked and
    untracked training give the same policy. Logged per episode: `rollout/ep_rew` (the episode's
    return in the env's reward units), `rollout/episodes` and `time/total_timesteps`, at step =
    environment steps so far.
    """

    def __init__(self, env: gym.Env, run: Any) -> None:
        """Wrap `env`; `run` receives one `log` call per finished episode."""
        super().__init__(env)
        self.run = run
        self.steps, self.episodes, self.episode_return = 0, 0, 0.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the env and start a new episode return."""
        self.episode_return = 0.0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env; log the return when the episode terminates or is truncated."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        self.episode_return += float(reward)
        if terminated or truncated:
            self.episodes += 1
            self.run.log(
                {
                    "rollout/ep_rew": self.episode_return,
                    "rollout/episodes": self.episodes,
                    "time/total_timesteps": self.steps,
                },
                step=self.steps,
            )
            self.episode_return = 0.0
        return obs, reward, terminated, truncated, info
