"""Heuristic tiers on the (base level, markup m, detector δ) action grid.

static: the undefended engine (`MarketSpec.undefended_action`) always. tuned, defended: the best
undefended and the best defended fixed action on the selection seeds. surge: moves the base level
by one when demand breadth leaves its running mean, at the middle markup and δ = 0. linear: fits
purchases and the price paid on the base level from warm-up episodes of random levels (middle
markup, δ = 0) and plays the profit-optimal level. All save to a small JSON file and carry
the grid shape, so they act without their spec.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self

import gymnasium as gym
import numpy as np

from phantom_assets.market import MarketSpec
from phantom_assets.policies.base import demand_breadth, grid_action, split_obs
from phantom_assets.storage import atomic_write

logger = logging.getLogger(__name__)

Grid = tuple[int, int, int]


def _write_json(path: str | Path, payload: dict[str, Any]) -> Path:
    blob = json.dumps(payload, sort_keys=True, indent=2).encode()
    return atomic_write(path, lambda fh: fh.write(blob))


def _read_json(path: str | Path, tier: str) -> dict[str, Any]:
    payload = json.loads(Path(path).read_text())
    if payload.get("tier") != tier:
        raise ValueError(f"{path} holds a {payload.get('tier')!r} policy, not {tier!r}")
    return payload


def _grid(values: Any) -> Grid:
    grid = tuple(int(v) for v in values)
    if len(grid) != 3 or min(grid) < 1:
        raise ValueError(f"an action grid is (levels, markups, strengths) >= 1, got {values!r}")
    return grid  # type: ignore[return-value]


@dataclass
class StaticPolicy:
    """Always the same action; `undefended` = the static tier (middle level and markup, δ = 0)."""

    action: int
    tier: str = field(default="static", init=False)

    @classmethod
    def undefended(cls, spec: MarketSpec) -> StaticPolicy:
        """The undefended engine of `spec`."""
        return cls(action=spec.undefended_action)

    def act(self, obs: np.ndarray) -> int:
        """The fixed action, whatever the observation."""
        return self.action

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def save(self, path: str | Path) -> Path:
        """Write `{"tier", "action"}` as JSON atomically."""
        return _write_json(path, {"tier": self.tier, "action": self.action})

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read a policy of this class's tier written by `save`."""
        tier = cls.__dataclass_fields__["tier"].default
        return cls(action=int(_read_json(path, tier)["action"]))


@dataclass
class TunedStaticPolicy(StaticPolicy):
    """The best undefended response (the tuned-static tier, docs/method.md#policy-tiers): the fixed
    δ = 0 action with the best stress objective on the selection seeds
    (`market.response.best_fixed_responses`) -- the gate's baseline: beating it takes more
    than a price increase."""

    tier: str = field(default="tuned", init=False)


@dataclass
class TunedDefendedPolicy(StaticPolicy):
    """The best defended fixed action (the tuned-defended tier, docs/method.md#policy-tiers): the
    δ > 0 action with the best stress objective on the selection seeds
    (`market.response.best_fixed_responses`) -- the simplest candidate a defence has, the same
    fixed action as tuned-static's but for the detector it may use."""

    tier: str = field(default="defended", init=False)


@dataclass
class SurgePolicy:
    """Raise the base level one step when demand breadth exceeds its running mean, lower it below.

    Breadth (see `demand_breadth`) above `(1 + threshold)·mean` raises the level by one, below
    `(1 − threshold)·mean` (or no demand) lowers it by one; the mean is then updated with weight
    `memory` on the past. Starts every episode at the middle level (where the env starts); plays
    the middle markup and δ = 0.
    """

    grid: Grid
    threshold: float = 0.05
    memory: float = 0.8
    tier: str = field(default="surge", init=False)
    _level: int = field(default=0, init=False, repr=False)
    _mean: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        """Validate and start at the middle level."""
        self.grid = _grid(self.grid)
        if self.threshold < 0 or not 0 <= self.memory <= 1:
            raise ValueError(f"invalid surge settings: {self!r}")
        self.reset()

    def reset(self) -> None:
        """Back to the middle level with no running mean."""
        self._level, self._mean = self.grid[0] // 2, None

    def act(self, obs: np.ndarray) -> int:
        """Move one level towards the demand signal's deviation from its running mean."""
        signal = demand_breadth(split_obs(obs)[0])
        mean = signal if self._mean is None else self._mean
        if signal > mean * (1.0 + self.threshold) and signal > 0:
            self._level = min(self._level + 1, self.grid[0] - 1)
        elif signal < mean * (1.0 - self.threshold) or signal == 0:
            self._level = max(self._level - 1, 0)
        self._mean = self.memory * mean + (1.0 - self.memory) * signal
        return grid_action(self.grid, self._level, self.grid[1] // 2, 0)

    def save(self, path: str | Path) -> Path:
        """Write the settings as JSON atomically (the per-episode state is not saved)."""
        payload = {
            "tier": self.tier,
            "grid": list(self.grid),
            "threshold": self.threshold,
            "memory": self.memory,
        }
        return _write_json(path, payload)

    @classmethod
    def load(cls, path: str | Path) -> SurgePolicy:
        """Read a policy written by `save`."""
        payload = _read_json(path, "surge")
        return cls(_grid(payload["grid"]), float(payload["threshold"]), float(payload["memory"]))


@dataclass
class LinearPolicy:
    """The profit-optimal base level under fitted lines `purchases = a + b·level` and
    `price paid = c + d·level`, at the middle markup and δ = 0.

    Attributes:
        grid: the action grid's shape.
        level: the chosen base level index.
        demand: (a, b) of purchases per step on the base level.
        price: (c, d) of the mean price paid on the base level.
    """

    grid: Grid
    level: int
    demand: tuple[float, float]
    price: tuple[float, float]
    tier: str = field(default="linear", init=False)

    def __post_init__(self) -> None:
        """Coerce the JSON lists back to tuples and check the level is on the grid."""
        self.grid = _grid(self.grid)
        self.demand = (float(self.demand[0]), float(self.demand[1]))
        self.price = (float(self.price[0]), float(self.price[1]))
        if not 0 <= self.level < self.grid[0]:
            raise ValueError(f"level {self.level} is not on a grid of {self.grid[0]} levels")

    def act(self, obs: np.ndarray) -> int:
        """The fitted level's action, whatever the observation."""
        return grid_action(self.grid, self.level, self.grid[1] // 2, 0)

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def save(self, path: str | Path) -> Path:
        """Write grid, level and both fits as JSON atomically."""
        return _write_json(path, asdict(self))

    @classmethod
    def load(cls, path: str | Path) -> LinearPolicy:
        """Read a policy written by `save`."""
        payload = _read_json(path, "linear")
        return cls(payload["grid"], int(payload["level"]), payload["demand"], payload["price"])


def settings_identity(policy: object) -> str | None:
    """The identity of a heuristic policy whose settings are all it is (static, tuned-static,
    surge, linear): its repr, which holds every setting and no per-episode state. Two policies
    with the same identity act alike on every episode; None for a learned policy."""
    return repr(policy) if isinstance(policy, StaticPolicy | SurgePolicy | LinearPolicy) else None


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares `(intercept, slope)` of y on x.

    Raises:
        ValueError: when the inputs differ in length or x does not vary.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"need two equal 1-D arrays of >= 2 points, got {x.shape}, {y.shape}")
    if np.ptp(x) == 0:
        raise ValueError(f"x does not vary (all {x[0]}); cannot fit a slope")
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones_like(x), x]), y, rcond=None)
    return float(coef[0]), float(coef[1])


def profit_optimal_level(
    levels: tuple[float, ...],
    p_low: float,
    demand: tuple[float, float],
    price: tuple[float, float],
) -> int:
    """Index of the base level maximising `(price(level) − p_low)·max(0, demand(level))` for
    fitted lines `demand` and `price` (intercept, slope); `p_low`: the mean marginal cost."""
    x = np.asarray(levels, dtype=np.float64)
    purchases = np.maximum(demand[0] + demand[1] * x, 0.0)
    return int(np.argmax((price[0] + price[1] * x - p_low) * purchases))


def warmup_data(
    env: gym.Env, spec: MarketSpec, episodes: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(base level, purchases, revenue) of every step of `episodes` episodes of uniformly random
    base levels at the middle markup and δ = 0.

    Episode e is reset with seed `seed + e`; the levels come from `default_rng(seed)`.
    """
    rng = np.random.default_rng(seed)
    levels, markups, _ = spec.action_shape
    rows: list[tuple[float, float, float]] = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        done = False
        while not done:
            action = spec.action_index(int(rng.integers(levels)), markups // 2, 0)
            _, _, terminated, truncated, info = env.step(action)
            bought = info["human_purchases"] + info["agent_purchases"]
            rows.append((info["level"], bought, info["revenue"]))
            done = terminated or truncated
    level, purchases, revenue = np.asarray(rows).T
    return level, purchases, revenue


def fit_linear_policy(
    env: gym.Env, spec: MarketSpec, episodes: int, seed: int
) -> tuple[LinearPolicy, dict[str, Any]]:
    """Fit the linear tier on warm-up episodes; returns the policy and its fit summary."""
    level, purchases, revenue = warmup_data(env, spec, episodes, seed)
    sold = purchases > 0
    demand = fit_line(level, purchases)
    price = fit_line(level[sold], revenue[sold] / purchases[sold])
    best = profit_optimal_level(spec.base_levels, spec.mean_cost, demand, price)
    logger.info(
        "linear fit: q = %.2f %+.2f·level, p = %.2f %+.2f·level -> level %d", *demand, *price, best
    )
    summary = {
        "demand": list(demand),
        "price": list(price),
        "level": best,
        "warmup_steps": int(level.size),
    }
    return LinearPolicy(spec.action_shape, best, demand, price), summary
