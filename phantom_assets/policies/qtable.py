"""Tabular Q-learning over a discretised market observation: (shopper α̂, low-engagement share,
level).

The state is the equal-width bin of the shopper-share estimate (`shopper_alpha_hat`: on α's own
scale, and not confounded with K like the session-share α̂), the bin of the share of last step's
purchases made in low-engagement sessions (both from `OBS_EXTRA`) and the current base level (the
level whose mean normalised price is nearest the observed prices). Training is ε-greedy Q-learning
over the 45 (level, m, δ) actions with ε decaying linearly to its end value, rewards scaled by the
spec's `reward_scale`, and a step size of max(1/visits, `q_learning_rate`) per (state, action):
sample means while a pair is new, a constant step later. The loop steps one env (each step is
vectorized inside the env); the table update is O(actions).
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import polars as pl

from phantom_assets.market import MarketSpec
from phantom_assets.policies.base import (
    LEARNING_CURVE_SCHEMA,
    TrainingParams,
    level_position,
    level_prices,
    split_obs,
)
from phantom_assets.storage import atomic_write

logger = logging.getLogger(__name__)


def _bin(value: float, bins: int) -> int:
    return min(int(np.clip(value, 0.0, 1.0) * bins), bins - 1)


@dataclass
class QTablePolicy:
    """Greedy policy of a Q-table over (shopper α̂ bin, low-engagement bin, base level) states.

    Attributes:
        q: (n_states, n_actions) action values, states in `np.ravel_multi_index` order of
            `shape`.
        bins: equal-width bins of the shopper α̂ and of the low-engagement purchase share.
        levels: (L,) mean normalised price of each base level (`base.level_prices`).
        visits: (n_states,) training visits per state. An unvisited state (e.g. an α̂ never seen
            at the training α) acts greedily on the visit-weighted mean of the visited rows.
    """

    q: np.ndarray
    bins: tuple[int, int]
    levels: np.ndarray
    visits: np.ndarray
    tier: str = field(default="qtable", init=False)

    def __post_init__(self) -> None:
        """Coerce the arrays and check that the table matches the state shape."""
        self.q = np.asarray(self.q, dtype=np.float64)
        self.bins = (int(self.bins[0]), int(self.bins[1]))
        self.levels = np.asarray(self.levels, dtype=np.float64)
        self.visits = np.asarray(self.visits, dtype=np.int64)
        states = int(np.prod(self.shape))
        if self.q.ndim != 2 or self.q.shape[0] != states or self.visits.shape != (states,):
            raise ValueError(
                f"q table {self.q.shape} / visits {self.visits.shape} do not match "
                f"the state shape {self.shape}"
            )

    @property
    def shape(self) -> tuple[int, int, int]:
        """(shopper α̂ bins, low-engagement bins, levels)."""
        return (*self.bins, self.levels.size)

    def state(self, obs: np.ndarray) -> int:
        """Index of the discretised state of `obs`."""
        _, prices, extra = split_obs(obs)
        parts = (
            _bin(extra["shopper_alpha_hat"], self.bins[0]),
            _bin(extra["low_engagement_share"], self.bins[1]),
            level_position(prices, self.levels),
        )
        return int(np.ravel_multi_index(parts, self.shape))

    def act(self, obs: np.ndarray) -> int:
        """Greedy action (lowest index among ties); see `visits` for unvisited states."""
        state = self.state(obs)
        if self.visits[state] > 0:
            return int(np.argmax(self.q[state]))
        return int(np.argmax(self.visits @ self.q))

    def reset(self) -> None:
        """Stateless between steps: nothing to forget."""

    def save(self, path: str | Path) -> Path:
        """Write the table, bins, level prices and visits as `.npz` atomically."""
        buffer = io.BytesIO()
        np.savez(
            buffer,
            q=self.q,
            bins=np.asarray(self.bins),
            levels=self.levels,
            visits=self.visits,
            tier=np.asarray(self.tier),
        )
        return atomic_write(path, lambda fh: fh.write(buffer.getvalue()))

    @classmethod
    def load(cls, path: str | Path) -> QTablePolicy:
        """Read a policy written by `save`."""
        with np.load(path) as data:
            if str(data["tier"]) != "qtable":
                raise ValueError(f"{path} does not hold a qtable policy")
            bins = (int(data["bins"][0]), int(data["bins"][1]))
            return cls(q=data["q"], bins=bins, levels=data["levels"], visits=data["visits"])


def qtable_hyperparameters(params: TrainingParams, spec: MarketSpec) -> dict[str, Any]:
    """The Q-learning hyperparameters actually used (JSON-ready)."""
    return {
        "timesteps": params.tier_timesteps("qtable"),
        "learning_rate": params.q_learning_rate,
        "gamma": params.gamma,
        "epsilon_start": params.q_epsilon_start,
        "epsilon_end": params.q_epsilon_end,
        "exploration_fraction": params.q_exploration_fraction,
        "bins": [params.q_alpha_bins, params.q_low_engagement_bins, len(spec.base_levels)],
        "reward_scale": spec.reward_scale,
    }


def epsilon_schedule(params: TrainingParams, steps: int) -> np.ndarray:
    """ε of every step: linear from start to end over `q_exploration_fraction` of `steps`."""
    progress = np.arange(steps) / max(params.q_exploration_fraction * steps, 1.0)
    start, end = params.q_epsilon_start, params.q_epsilon_end
    return end + (start - end) * np.clip(1.0 - progress, 0.0, 1.0)


def train_qtable(
    env: gym.Env, spec: MarketSpec, params: TrainingParams, seed: int
) -> tuple[QTablePolicy, pl.DataFrame]:
    """ε-greedy Q-learning for the tier's budget; returns the policy and learning curve.

    Exploration draws come from `np.random.default_rng(seed)`; the env is reset with `seed` once
    and then continues its own stream, so the same inputs give the same table.
    """
    steps = params.tier_timesteps("qtable")
    bins = (params.q_alpha_bins, params.q_low_engagement_bins)
    n_actions, positions = int(env.action_space.n), level_prices(spec)
    states = int(np.prod(bins)) * positions.size
    policy = QTablePolicy(np.zeros((states, n_actions)), bins, positions, np.zeros(states))
    counts = np.zeros((states, n_actions))
    rng = np.random.default_rng(seed)
    explore = rng.random(steps) < epsilon_schedule(params, steps)
    random_actions = rng.integers(n_actions, size=steps)
    curve: list[tuple[int, int, float]] = []
    obs, _ = env.reset(seed=seed)
    state, episode_reward = policy.state(obs), 0.0
    for t in range(steps):
        action = int(random_actions[t]) if explore[t] else int(np.argmax(policy.q[state]))
        obs, reward, terminated, truncated, _ = env.step(action)
        nxt = policy.state(obs)
        target = reward * spec.reward_scale
        if not terminated:  # a time-limit truncation still bootstraps
            target += params.gamma * policy.q[nxt].max()
        counts[state, action] += 1
        step = max(1.0 / counts[state, action], params.q_learning_rate)
        policy.q[state, action] += step * (target - policy.q[state, action])
        state, episode_reward = nxt, episode_reward + float(reward)
        if terminated or truncated:
            curve.append((len(curve), t + 1, episode_reward))
            obs, _ = env.reset()
            state, episode_reward = policy.state(obs), 0.0
        if (t + 1) % params.log_every == 0:
            last = curve[-1][2] if curve else float("nan")
            logger.info(
                "qtable step %d/%d, episodes %d, last episode reward %.1f",
                t + 1,
                steps,
                len(curve),
                last,
            )
    policy.visits = counts.sum(axis=1).astype(np.int64)
    return policy, pl.DataFrame(curve, schema=LEARNING_CURVE_SCHEMA, orient="row")
