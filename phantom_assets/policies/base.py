"""The common policy interface, training parameters and result, observation features, and the
learning-curve plateau statistic.

The market observation is `[shares (n), normalised base prices (n), *OBS_EXTRA]` (see
`PricingMarketEnv`). Demand shares always sum to 1 (or to 0 when nothing was demanded), so their
mean carries no signal; the surge tier reads the demand *breadth* instead: the effective number of
demanded products over n, `1 / (n·Σ share²)` in (0, 1], 0 without demand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import polars as pl

from phantom_assets.config import TrainingConfig
from phantom_assets.market import OBS_EXTRA, MarketSpec
from phantom_assets.policies.keys import HEURISTIC_MODE, policy_key

LEARNING_CURVE_SCHEMA: dict[str, Any] = {
    "episode": pl.Int64,
    "timesteps": pl.Int64,
    "reward": pl.Float64,
}
PLATEAU_WINDOW = 0.2
"""The plateau statistic compares the mean reward of the last this share of a curve's episodes
with the share before it."""
PLATEAU_TOLERANCE = 0.02
"""A curve has plateaued when its plateau ratio is within this of 1."""
_TRAINING = TrainingConfig()


@runtime_checkable
class Policy(Protocol):
    """A pricing policy: maps a market observation to an action of the (level, m, δ) grid.

    `act` is deterministic given the observations since the last `reset` (heuristics may keep a
    little state, e.g. a running mean). `save` writes atomically; each class has a `load`.
    """

    tier: str

    def act(self, obs: np.ndarray) -> int:
        """Return the action index (`MarketSpec.action_index`) for observation `obs`."""
        ...

    def reset(self) -> None:
        """Forget per-episode state (called at every episode start)."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the policy to `path` atomically and return the path."""
        ...


@runtime_checkable
class BatchPolicy(Policy, Protocol):
    """A stateless policy that also acts on a batch of observations at once (the SB3 tiers: one
    network call for many episodes' steps). `act_batch(obs)[i]` is `act(obs[i])`."""

    def act_batch(self, obs: np.ndarray) -> np.ndarray:
        """The (B,) action indices of the (B, obs) observations."""
        ...


@dataclass(frozen=True)
class TrainingParams:
    """Budgets and hyperparameters of every tier (defaults are the demo profile's).

    Rewards are normalised for learning by the spec's `reward_scale` (learning curves stay in
    money). The defaults were sized on the demo market (45 actions, 25-step episodes, a
    near-bandit problem): with 10,000 steps every learnable tier's curve plateaus
    (`plateau_ratio` within `PLATEAU_TOLERANCE` of 1) and its greedy policy beats the static
    engine and matches the best fixed action at the training α. With α and K drawn per episode
    (`market.training_law`) the curves still plateau at 10,000 steps on a demo store's market
    (ratios 1.005 Q-table, 1.008 PPO, 1.008 DQN, 0.995 robust DQN), but DQN's greedy policy
    still trails the best fixed action by 2-5% at 10,000 and 20,000 steps and matches it only at
    30,000, which the demo's run time cannot afford (8 DQN partitions); the study profile trains
    60,000 steps.

    Attributes:
        timesteps: environment steps of training of a tier without a multiplier.
        budget_multipliers: tier -> factor on `timesteps` for a tier that needs more steps to
            plateau (`tier_timesteps`); none on the demo market, where every tier plateaued
            within 10,000 steps (Q-table and A2C 5,000, PPO and DQN 7,500).
        ablation_lam: λ of the charged modes (`keys.TRAINING_MODES`).
        torch_threads: torch intra-op threads during training (fixed for reproducibility).
        envs: E, the markets an SB3 tier steps together (SB3 `n_envs`: one network call per
            step for all E). The samples per update stay those of one market: PPO and A2C
            collect `n_steps / E` steps per market (E must divide both), DQN makes E gradient
            steps every `dqn_train_freq` steps of the E markets (one per `dqn_train_freq`
            transitions). What changes with E is that a rollout's episodes run side by side.
        device: torch device of SB3 models ("cpu" by default).
        net_arch: hidden layer sizes of the SB3 networks.
        learning_rate: PPO/A2C optimiser step size.
        dqn_learning_rate: DQN optimiser step size.
        gamma: discount factor (SB3 and Q-table). Low: the market is nearly a bandit whose only
            link between steps is the η_ux cost of moving the base level, which a horizon of a
            couple of steps covers (γ = 0.9 left DQN's greedy policy 2-20% short of γ = 0.5's).
        ppo_n_steps: PPO rollout length in steps (ten 25-step episodes).
        ppo_batch_size: PPO minibatch size.
        ppo_epochs: PPO passes over each rollout.
        ent_coef: PPO/A2C entropy bonus (small: 45 actions keep enough entropy early on).
        a2c_n_steps: A2C rollout length in steps.
        dqn_buffer_size: DQN replay buffer size.
        dqn_learning_starts: steps DQN collects before it starts learning.
        dqn_batch_size, dqn_train_freq: DQN minibatch size and steps between its updates.
        dqn_target_update: steps between DQN target-network updates.
        dqn_exploration_fraction: share of the budget over which DQN's ε decays to its end.
        log_every: a progress log line every this many steps.
        q_learning_rate: tabular Q-learning step size.
        q_epsilon_start, q_epsilon_end, q_exploration_fraction: ε decays linearly from start
            to end over this share of the budget, then stays at the end.
        q_alpha_bins, q_low_engagement_bins: equal-width bins of the shopper α̂ and of the
            low-engagement purchase share (the Q-table's state; the base level is the third
            coordinate).
        surge_threshold: relative deviation of demand breadth from its running mean that moves
            the surge base level by one.
        surge_memory: weight of the past in the surge running mean (exponential smoothing).
        linear_warmup_episodes: episodes of random base levels the linear tier fits demand on.
    """

    timesteps: int = _TRAINING.timesteps
    budget_multipliers: dict[str, float] = field(default_factory=dict)
    ablation_lam: float = _TRAINING.ablation_lam
    torch_threads: int = _TRAINING.torch_threads
    envs: int = _TRAINING.envs
    device: str = _TRAINING.device
    net_arch: tuple[int, ...] = (64, 64)
    learning_rate: float = 3e-4
    dqn_learning_rate: float = 1e-3
    gamma: float = 0.5
    ppo_n_steps: int = 250
    ppo_batch_size: int = 50
    ppo_epochs: int = 10
    ent_coef: float = 0.01
    a2c_n_steps: int = 25
    dqn_buffer_size: int = 50_000
    dqn_learning_starts: int = 1_000
    dqn_batch_size: int = 64
    dqn_train_freq: int = 4
    dqn_target_update: int = 500
    dqn_exploration_fraction: float = 0.4
    log_every: int = 1_000
    q_learning_rate: float = 0.05
    q_epsilon_start: float = 1.0
    q_epsilon_end: float = 0.05
    q_exploration_fraction: float = 0.5
    q_alpha_bins: int = 4
    q_low_engagement_bins: int = 3
    surge_threshold: float = 0.05
    surge_memory: float = 0.8
    linear_warmup_episodes: int = 4

    def __post_init__(self) -> None:
        """Validate budgets and ranges; raise ValueError naming the bad field."""
        object.__setattr__(self, "net_arch", tuple(int(x) for x in self.net_arch))
        object.__setattr__(self, "budget_multipliers", dict(self.budget_multipliers))
        positive = (
            "timesteps",
            "torch_threads",
            "envs",
            "ppo_n_steps",
            "ppo_batch_size",
            "ppo_epochs",
            "a2c_n_steps",
            "dqn_buffer_size",
            "dqn_batch_size",
            "dqn_train_freq",
            "dqn_target_update",
            "log_every",
            "q_alpha_bins",
            "q_low_engagement_bins",
            "linear_warmup_episodes",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"TrainingParams.{name} must be >= 1, got {getattr(self, name)}")
        unit = (
            "gamma",
            "q_learning_rate",
            "q_epsilon_start",
            "q_epsilon_end",
            "surge_memory",
            "q_exploration_fraction",
            "dqn_exploration_fraction",
        )
        for name in unit:
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(
                    f"TrainingParams.{name} must be in [0, 1], got {getattr(self, name)}"
                )
        if not self.net_arch or min(self.net_arch) < 1:
            raise ValueError(f"TrainingParams.net_arch must be positive sizes, got {self.net_arch}")
        nonnegative = ("ablation_lam", "ent_coef", "surge_threshold", "dqn_learning_starts")
        for name in nonnegative:
            if getattr(self, name) < 0:
                raise ValueError(f"TrainingParams.{name} must be >= 0, got {getattr(self, name)}")
        if self.learning_rate <= 0 or self.dqn_learning_rate <= 0:
            raise ValueError(
                f"TrainingParams learning rates must be > 0: {self.learning_rate}, "
                f"{self.dqn_learning_rate}"
            )
        if self.ppo_n_steps % self.envs or self.a2c_n_steps % self.envs:
            steps = (self.ppo_n_steps, self.a2c_n_steps)
            raise ValueError(
                f"TrainingParams.envs = {self.envs} must divide ppo_n_steps and a2c_n_steps {steps}"
            )
        if min(self.budget_multipliers.values(), default=1.0) <= 0:
            raise ValueError(
                f"TrainingParams.budget_multipliers must be > 0, got {self.budget_multipliers}"
            )

    def tier_timesteps(self, tier: str) -> int:
        """The training budget of `tier`: `timesteps` times its multiplier (default 1)."""
        return max(1, round(self.timesteps * self.budget_multipliers.get(tier, 1.0)))

    @classmethod
    def from_config(cls, config: TrainingConfig, **overrides: Any) -> TrainingParams:
        """Params from the `[training]` settings (timesteps, ablation λ, device, threads, envs)
        plus overrides."""
        base = {
            "timesteps": config.timesteps,
            "ablation_lam": config.ablation_lam,
            "device": config.device,
            "torch_threads": config.torch_threads,
            "envs": config.envs,
        }
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
        learning_curve: one row per finished training episode: episode, timesteps, reward (in
            money: the env's unscaled reward).
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

    @property
    def plateau_ratio(self) -> float:
        """`plateau_ratio` of the learning curve (NaN for heuristics)."""
        return plateau_ratio(self.learning_curve["reward"].to_numpy())


def plateau_ratio(rewards: np.ndarray, window: float = PLATEAU_WINDOW) -> float:
    """1 + (mean of the last `window` share of episode rewards − mean of the share before it) /
    |mean before|: 1 on a flat curve, > 1 while still improving; NaN with fewer than
    2 / `window` episodes or a zero mean before."""
    values = np.asarray(rewards, dtype=np.float64)
    size = int(values.size * window)
    if size < 1:
        return float("nan")
    last, before = values[-size:].mean(), values[-2 * size : -size].mean()
    return float("nan") if before == 0 else float(1.0 + (last - before) / abs(before))


def has_plateaued(ratio: float | None) -> bool | None:
    """Whether a plateau ratio is within `PLATEAU_TOLERANCE` of 1 (None without a ratio)."""
    return None if ratio is None or np.isnan(ratio) else bool(abs(ratio - 1.0) <= PLATEAU_TOLERANCE)


def split_obs(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """(demand shares, normalised base prices, {`OBS_EXTRA` name: value}) of a market
    observation of length 2n + len(OBS_EXTRA)."""
    arr = np.asarray(obs, dtype=np.float64)
    extra = len(OBS_EXTRA)
    if arr.ndim != 1 or arr.size < 2 + extra or (arr.size - extra) % 2:
        raise ValueError(f"market observation must be 1-D of length 2n + {extra}, got {arr.shape}")
    n = (arr.size - extra) // 2
    return arr[:n], arr[n : 2 * n], dict(zip(OBS_EXTRA, arr[2 * n :].tolist(), strict=True))


def demand_breadth(shares: np.ndarray) -> float:
    """Effective number of demanded products over n: `1/(n·Σ s²)`, 0 when nothing was demanded."""
    concentration = float(np.square(shares).sum())
    return 0.0 if concentration <= 0 else min(1.0, 1.0 / (shares.size * concentration))


def level_prices(spec: MarketSpec) -> np.ndarray:
    """Mean normalised base price `(anchor·level − p_low)/(p_high − p_low)` of every base level,
    clipped to [0, 1] like the observation: what the observation shows at each level."""
    prices = spec.anchor[None, :] * np.asarray(spec.base_levels)[:, None] - spec.p_low
    return np.clip(prices / (spec.p_high - spec.p_low), 0.0, 1.0).mean(axis=1)


def level_position(prices: np.ndarray, positions: np.ndarray) -> int:
    """Index of the base level whose mean normalised price (`level_prices`) is nearest to the
    observed prices' mean."""
    return int(np.argmin(np.abs(np.asarray(positions) - float(np.mean(prices)))))


def grid_action(grid: tuple[int, int, int], level: int, markup: int, detector: int) -> int:
    """The action of grid indices on a (levels, markups, strengths) grid: the same numbering as
    `MarketSpec.action_index`, for policies saved without their spec."""
    return int(np.ravel_multi_index((level, markup, detector), grid))
