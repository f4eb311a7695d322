"""The common policy interface, training parameters and result, and observation features.

The market observation is `[shares (n), normalised prices (n), f̄]` (see `PricingMarketEnv`).
Demand shares always sum to 1 (or to 0 when nothing was demanded), so their mean carries no
signal; the heuristics and the Q-table read the demand *breadth* instead: the effective number of
demanded products over n, `1 / (n·Σ share²)` in (0, 1], 0 without demand. Higher prices leave fewer
sessions with positive surplus on the dearer products, so breadth falls as demand weakens.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import polars as pl

from phantom_assets.config import TrainingConfig
from phantom_assets.policies.keys import HEURISTIC_MODE, policy_key

LEARNING_CURVE_SCHEMA: dict[str, Any] = {
    "episode": pl.Int64,
    "timesteps": pl.Int64,
    "reward": pl.Float64,
}
_TRAINING = TrainingConfig()


@runtime_checkable
class Policy(Protocol):
    """A pricing policy: maps a market observation to a price-level action.

    `act` is deterministic given the observations since the last `reset` (heuristics may keep a
    little state, e.g. a running mean). `save` writes atomically; each class has a `load`.
    """

    tier: str

    def act(self, obs: np.ndarray) -> int:
        """Return the action (price level index) for observation `obs`."""
        ...

    def reset(self) -> None:
        """Forget per-episode state (called at every episode start)."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the policy to `path` atomically and return the path."""
        ...


@dataclass(frozen=True)
class TrainingParams:
    """Budgets and hyperparameters of every tier (defaults are the demo profile's).

    Attributes:
        timesteps: environment steps of training (SB3 and Q-table).
        torch_threads: torch intra-op threads during training (fixed for reproducibility).
        device: torch device of SB3 models ("cpu" by default).
        net_arch: hidden layer sizes of the SB3 networks.
        learning_rate: SB3 optimiser step size.
        gamma: discount factor (SB3 and Q-table).
        reward_scale: rewards are multiplied by it during training (learning curves are unscaled).
        ppo_n_steps, ppo_batch_size: PPO rollout length and minibatch size.
        a2c_n_steps: A2C rollout length.
        dqn_buffer_size, dqn_learning_starts: DQN replay settings (clipped to the budget).
        log_every: a progress log line every this many steps.
        q_learning_rate, q_epsilon_start, q_epsilon_end: tabular Q-learning schedule.
        q_demand_bins, q_score_bins, q_price_bins: observation discretisation of the Q-table.
        surge_threshold: relative deviation of demand breadth from its running mean that moves
            the surge price by one level.
        surge_memory: weight of the past in the surge running mean (exponential smoothing).
        linear_warmup_episodes: episodes of random actions the linear tier fits demand on.
    """

    timesteps: int = _TRAINING.timesteps
    torch_threads: int = _TRAINING.torch_threads
    device: str = _TRAINING.device
    net_arch: tuple[int, ...] = (64, 64)
    learning_rate: float = 3e-4
    gamma: float = 0.95
    reward_scale: float = 0.01
    ppo_n_steps: int = 256
    ppo_batch_size: int = 64
    a2c_n_steps: int = 8
    dqn_buffer_size: int = 50_000
    dqn_learning_starts: int = 200
    log_every: int = 1_000
    q_learning_rate: float = 0.1
    q_epsilon_start: float = 1.0
    q_epsilon_end: float = 0.05
    q_demand_bins: int = 4
    q_score_bins: int = 5
    q_price_bins: int = 5
    surge_threshold: float = 0.05
    surge_memory: float = 0.8
    linear_warmup_episodes: int = 3

    def __post_init__(self) -> None:
        """Validate budgets and ranges; raise ValueError naming the bad field."""
        object.__setattr__(self, "net_arch", tuple(int(x) for x in self.net_arch))
        positive = ("timesteps", "torch_threads", "ppo_n_steps", "ppo_batch_size", "a2c_n_steps",
                    "dqn_buffer_size", "log_every", "q_demand_bins", "q_score_bins",
                    "q_price_bins", "linear_warmup_episodes")  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"TrainingParams.{name} must be >= 1, got {getattr(self, name)}")
        unit = ("gamma", "q_learning_rate", "q_epsilon_start", "q_epsilon_end", "surge_memory")
        for name in unit:
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"TrainingParams.{name} must be in [0, 1], got "
                                 f"{getattr(self, name)}")  # fmt: skip
        if not self.net_arch or min(self.net_arch) < 1:
            raise ValueError(f"TrainingParams.net_arch must be positive sizes, got {self.net_arch}")
        if self.reward_scale <= 0 or self.learning_rate <= 0 or self.surge_threshold < 0:
            raise ValueError(
                f"reward_scale/learning_rate must be > 0, surge_threshold >= 0: {self}"
            )

    @classmethod
    def from_config(cls, config: TrainingConfig, **overrides: Any) -> TrainingParams:
        """Params from the `[training]` settings (timesteps, device, threads) plus overrides."""
        base = {"timesteps": config.timesteps, "device": config.device,
                "torch_threads": config.torch_threads}  # fmt: skip
        return cls(**{**base, **overrides})

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view (tuples as lists)."""
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()
        }


@dataclass(frozen=True)
class TrainedPolicy:
    """A trained policy with what produced it.

    Attributes:
        policy: the policy object (implements `Policy`).
        tier, mode, alpha: what was trained (mode `HEURISTIC_MODE` for heuristics).
        seed: the training seed.
        hyperparameters: the tier's effective hyperparameters (JSON-ready).
        learning_curve: one row per finished training episode: episode, timesteps, reward.
    """

    policy: Policy
    tier: str
    mode: str
    alpha: float
    seed: int
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    learning_curve: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=LEARNING_CURVE_SCHEMA)
    )

    @property
    def key(self) -> str:
        """The policy partition key, e.g. `ppo-robust-a030`."""
        return policy_key(self.tier, None if self.mode == HEURISTIC_MODE else self.mode, self.alpha)


def split_obs(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(demand shares, normalised prices, f̄) of a market observation of length 2n + 1."""
    arr = np.asarray(obs, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 3 or arr.size % 2 == 0:
        raise ValueError(f"market observation must be 1-D of odd length 2n+1, got {arr.shape}")
    n = (arr.size - 1) // 2
    return arr[:n], arr[n : 2 * n], float(arr[2 * n])


def demand_breadth(shares: np.ndarray) -> float:
    """Effective number of demanded products over n: `1/(n·Σ s²)`, 0 when nothing was demanded."""
    concentration = float(np.square(shares).sum())
    return 0.0 if concentration <= 0 else min(1.0, 1.0 / (shares.size * concentration))
