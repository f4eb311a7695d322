"""Tabular Q-learning over a discretised market observation (demand breadth, f̄, price position).

The state is the bin of the demand breadth (see `demand_breadth`), the bin of the mean detector
score f̄ and the bin of the mean normalised price, each equal-width on [0, 1]. Training is plain
ε-greedy Q-learning with a linearly decaying ε; the learning loop steps one env (each step is
vectorized inside the env), the table update is O(actions).
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

from phantom_assets.policies.base import (
    LEARNING_CURVE_SCHEMA,
    TrainingParams,
    demand_breadth,
    split_obs,
)
from phantom_assets.storage import atomic_write

logger = logging.getLogger(__name__)


def _bin(value: float, bins: int) -> int:
    return min(int(np.clip(value, 0.0, 1.0) * bins), bins - 1)


@dataclass
class QTablePolicy:
    """Greedy policy of a Q-table over `bins = (demand, score, price)` discretised states.

    Attributes:
        q: (n_states, n_actions) action values, states in `np.ravel_multi_index` order of `bins`.
        bins: number of equal-width bins of demand breadth, f̄ and mean normalised price.
    """

    q: np.ndarray
    bins: tuple[int, int, int]
    tier: str = field(default="qtable", init=False)

    def __post_init__(self) -> None:
        """Check that the table matches the bins."""
        self.q = np.asarray(self.q, dtype=np.float64)
        self.bins = tuple(int(b) for b in self.bins)  # type: ignore[assignment]
        if self.q.ndim != 2 or self.q.shape[0] != int(np.prod(self.bins)):
            raise ValueError(f"q table shape {self.q.shape} does not match bins {self.bins}")

    def state(self, obs: np.ndarray) -> int:
        """Index of the discretised state of `obs`."""
        shares, prices, score = split_obs(obs)
        parts = (_bin(demand_breadth(shares), self.bins[0]), _bin(score, self.bins[1]),
                 _bin(float(prices.mean()), self.bins[2]))  # fmt: skip
        return int(np.ravel_multi_index(parts, self.bins))

    def act(self, obs: np.ndarray) -> int:
        """Greedy action (lowest index among ties)."""
        return int(np.argmax(self.q[self.state(obs)]))

    def reset(self) -> None:
        """Stateless between steps: nothing to forget."""

    def save(self, path: str | Path) -> Path:
        """Write the table and bins as `.npz` atomically."""
        buffer = io.BytesIO()
        np.savez(buffer, q=self.q, bins=np.asarray(self.bins), tier=np.asarray(self.tier))
        return atomic_write(path, lambda fh: fh.write(buffer.getvalue()))

    @classmethod
    def load(cls, path: str | Path) -> QTablePolicy:
        """Read a policy written by `save`."""
        with np.load(path) as data:
            if str(data["tier"]) != "qtable":
                raise ValueError(f"{path} does not hold a qtable policy")
            return cls(q=data["q"], bins=tuple(int(b) for b in data["bins"]))  # type: ignore[arg-type]


def qtable_hyperparameters(params: TrainingParams) -> dict[str, Any]:
    """The Q-learning hyperparameters actually used (JSON-ready)."""
    return {
        "timesteps": params.timesteps,
        "learning_rate": params.q_learning_rate,
        "gamma": params.gamma,
        "epsilon_start": params.q_epsilon_start,
        "epsilon_end": params.q_epsilon_end,
        "bins": [params.q_demand_bins, params.q_score_bins, params.q_price_bins],
        "reward_scale": params.reward_scale,
    }


def train_qtable(
    env: gym.Env, params: TrainingParams, seed: int
) -> tuple[QTablePolicy, pl.DataFrame]:
    """ε-greedy Q-learning for `params.timesteps` steps; returns the policy and learning curve.

    Exploration draws come from `np.random.default_rng(seed)`; the env is reset with `seed` once
    and then continues its own stream, so the same inputs give the same table.
    """
    bins = (params.q_demand_bins, params.q_score_bins, params.q_price_bins)
    n_actions = int(env.action_space.n)
    policy = QTablePolicy(np.zeros((int(np.prod(bins)), n_actions)), bins)
    rng = np.random.default_rng(seed)
    epsilons = np.linspace(params.q_epsilon_start, params.q_epsilon_end, params.timesteps)
    explore = rng.random(params.timesteps) < epsilons
    random_actions = rng.integers(n_actions, size=params.timesteps)
    curve: list[tuple[int, int, float]] = []
    obs, _ = env.reset(seed=seed)
    state, episode_reward = policy.state(obs), 0.0
    for t in range(params.timesteps):
        action = int(random_actions[t]) if explore[t] else int(np.argmax(policy.q[state]))
        obs, reward, terminated, truncated, _ = env.step(action)
        nxt = policy.state(obs)
        target = reward * params.reward_scale
        if not terminated:
            target += params.gamma * policy.q[nxt].max()
        policy.q[state, action] += params.q_learning_rate * (target - policy.q[state, action])
        state, episode_reward = nxt, episode_reward + float(reward)
        if terminated or truncated:
            curve.append((len(curve), t + 1, episode_reward))
            obs, _ = env.reset()
            state, episode_reward = policy.state(obs), 0.0
        if (t + 1) % params.log_every == 0:
            last = curve[-1][2] if curve else float("nan")
            logger.info("qtable step %d/%d, episodes %d, last episode reward %.1f",
                        t + 1, params.timesteps, len(curve), last)  # fmt: skip
    frame = pl.DataFrame(curve, schema=LEARNING_CURVE_SCHEMA, orient="row")
    return policy, frame
