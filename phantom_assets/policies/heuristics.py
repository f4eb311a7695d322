"""Heuristic tiers: static (mid price), surge (demand vs running mean), linear (fitted demand).

All three save to a small JSON file. The linear tier is fitted on warm-up episodes of random
actions; static and surge learn nothing from the market.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from phantom_assets.market import MarketSpec
from phantom_assets.policies.base import demand_breadth, split_obs
from phantom_assets.storage import atomic_write

logger = logging.getLogger(__name__)


def _write_json(path: str | Path, payload: dict[str, Any]) -> Path:
    blob = json.dumps(payload, sort_keys=True, indent=2).encode()
    return atomic_write(path, lambda fh: fh.write(blob))


def _read_json(path: str | Path, tier: str) -> dict[str, Any]:
    payload = json.loads(Path(path).read_text())
    if payload.get("tier") != tier:
        raise ValueError(f"{path} holds a {payload.get('tier')!r} policy, not {tier!r}")
    return payload


@dataclass
class StaticPolicy:
    """Always the same price level (by default the middle of the grid)."""

    level: int
    tier: str = field(default="static", init=False)

    @classmethod
    def mid(cls, n_actions: int) -> StaticPolicy:
        """The static policy at the middle action of an `n_actions` grid."""
        if n_actions < 1:
            raise ValueError(f"n_actions must be >= 1, got {n_actions}")
        return cls(level=n_actions // 2)

    def act(self, obs: np.ndarray) -> int:
        """The fixed level, whatever the observation."""
        return self.level

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def save(self, path: str | Path) -> Path:
        """Write `{"tier", "level"}` as JSON atomically."""
        return _write_json(path, {"tier": self.tier, "level": self.level})

    @classmethod
    def load(cls, path: str | Path) -> StaticPolicy:
        """Read a policy written by `save`."""
        return cls(level=int(_read_json(path, "static")["level"]))


@dataclass
class SurgePolicy:
    """Raise the price one level when demand breadth exceeds its running mean, lower it below.

    Breadth (see `demand_breadth`) above `(1 + threshold)·mean` raises the level by one, below
    `(1 − threshold)·mean` lowers it by one; the mean is then updated with weight `memory` on the
    past. Starts every episode at the middle level.
    """

    n_actions: int
    threshold: float = 0.05
    memory: float = 0.8
    tier: str = field(default="surge", init=False)
    _level: int = field(default=0, init=False, repr=False)
    _mean: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        """Validate and start at the middle level."""
        if self.n_actions < 1 or self.threshold < 0 or not 0 <= self.memory <= 1:
            raise ValueError(f"invalid surge settings: {self!r}")
        self.reset()

    def reset(self) -> None:
        """Back to the middle level with no running mean."""
        self._level, self._mean = self.n_actions // 2, None

    def act(self, obs: np.ndarray) -> int:
        """Move one level towards the demand signal's deviation from its running mean."""
        signal = demand_breadth(split_obs(obs)[0])
        mean = signal if self._mean is None else self._mean
        if signal > mean * (1.0 + self.threshold) and signal > 0:
            self._level = min(self._level + 1, self.n_actions - 1)
        elif signal < mean * (1.0 - self.threshold) or signal == 0:
            self._level = max(self._level - 1, 0)
        self._mean = self.memory * mean + (1.0 - self.memory) * signal
        return self._level

    def save(self, path: str | Path) -> Path:
        """Write the settings as JSON atomically (the per-episode state is not saved)."""
        payload = {"tier": self.tier, "n_actions": self.n_actions,
                   "threshold": self.threshold, "memory": self.memory}  # fmt: skip
        return _write_json(path, payload)

    @classmethod
    def load(cls, path: str | Path) -> SurgePolicy:
        """Read a policy written by `save`."""
        payload = _read_json(path, "surge")
        return cls(int(payload["n_actions"]), float(payload["threshold"]), float(payload["memory"]))


@dataclass
class LinearPolicy:
    """The revenue-optimal level under a fitted linear demand `q = intercept + slope·p̄`."""

    level: int
    intercept: float
    slope: float
    tier: str = field(default="linear", init=False)

    def act(self, obs: np.ndarray) -> int:
        """The fitted level, whatever the observation."""
        return self.level

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def save(self, path: str | Path) -> Path:
        """Write level and coefficients as JSON atomically."""
        return _write_json(path, asdict(self))

    @classmethod
    def load(cls, path: str | Path) -> LinearPolicy:
        """Read a policy written by `save`."""
        payload = _read_json(path, "linear")
        return cls(int(payload["level"]), float(payload["intercept"]), float(payload["slope"]))


def fit_linear_demand(prices: np.ndarray, purchases: np.ndarray) -> tuple[float, float]:
    """Least-squares `(intercept, slope)` of purchases on mean price.

    Raises:
        ValueError: when the inputs differ in length or the prices do not vary.
    """
    x = np.asarray(prices, dtype=np.float64)
    y = np.asarray(purchases, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"need two equal 1-D arrays of >= 2 points, got {x.shape}, {y.shape}")
    if np.ptp(x) == 0:
        raise ValueError(f"prices do not vary (all {x[0]}); cannot fit a demand slope")
    design = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(coef[0]), float(coef[1])


def revenue_optimal_level(spec: MarketSpec, intercept: float, slope: float) -> int:
    """Action level maximising `p̄·max(0, intercept + slope·p̄)` at its steady-state prices."""
    levels = np.asarray(spec.price_levels)
    prices = np.clip(spec.anchor[None, :] * levels[:, None], spec.p_low, spec.p_high)
    mean_price = prices.mean(axis=1)
    revenue = mean_price * np.maximum(intercept + slope * mean_price, 0.0)
    return int(np.argmax(revenue))


def warmup_data(
    env: gym.Env, episodes: int, rng: np.random.Generator, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(mean price, purchases) of every step of `episodes` episodes of uniformly random actions.

    Episode e is reset with seed `seed + e`; actions come from `rng`.
    """
    prices: list[float] = []
    purchases: list[float] = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        done = False
        while not done:
            action = int(rng.integers(env.action_space.n))
            _, _, terminated, truncated, info = env.step(action)
            prices.append(info["mean_price"])
            purchases.append(info["purchases"])
            done = terminated or truncated
    return np.asarray(prices), np.asarray(purchases)


def fit_linear_policy(
    env: gym.Env, spec: MarketSpec, episodes: int, seed: int
) -> tuple[LinearPolicy, dict[str, Any]]:
    """Fit the linear tier on warm-up episodes; returns the policy and its fit summary."""
    prices, purchases = warmup_data(env, episodes, np.random.default_rng(seed), seed)
    intercept, slope = fit_linear_demand(prices, purchases)
    level = revenue_optimal_level(spec, intercept, slope)
    logger.info("linear demand fit: q = %.3f + %.4f p -> level %d", intercept, slope, level)
    summary = {"intercept": intercept, "slope": slope, "level": level,
               "warmup_steps": int(prices.size)}  # fmt: skip
    return LinearPolicy(level, intercept, slope), summary
