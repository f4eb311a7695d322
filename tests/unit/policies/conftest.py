"""A small demo market, tiny training budgets and an episode-profit rollout for the policy tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from phantom_assets.config import MarketConfig
from phantom_assets.market import OBS_EXTRA, MarketSpec, demo_spec, make_env
from phantom_assets.policies import Policy, TrainingParams

TINY = TrainingParams(
    timesteps=192,
    budget_multipliers={},
    net_arch=(8,),
    ppo_n_steps=64,
    ppo_batch_size=32,
    dqn_learning_starts=32,
    log_every=64,
    linear_warmup_episodes=2,
)


MISPRICED = {"mu_human": 1.5, "beta_human": 0.0, "in_market": 1.0}
"""A store whose own pricing (engagement markup, level 1) is far from its best fixed action --
valuations 1.5 × anchor whatever the engagement -- so a policy has something to learn."""


def small_spec(**overrides) -> MarketSpec:
    """The demo market with a 500-chain bank per class, 16-step episodes and `MISPRICED`
    demand (plus any `MarketSpec` field changes)."""
    fields = {"episode_steps": 16, **MISPRICED, **overrides}
    return demo_spec(0, MarketConfig(chain_bank_size=500), **fields)


def market_obs(
    shares: Sequence[float], prices: float | Sequence[float] = 0.25, **extra: float
) -> np.ndarray:
    """A v2 observation: shares, normalised base prices, then `OBS_EXTRA` (0 unless given)."""
    shares = np.asarray(shares, dtype=np.float32)
    prices = np.broadcast_to(np.asarray(prices, dtype=np.float32), shares.shape)
    unknown = set(extra) - set(OBS_EXTRA)
    assert not unknown, f"not observation entries: {unknown}"
    tail = np.array([extra.get(name, 0.0) for name in OBS_EXTRA], dtype=np.float32)
    return np.concatenate([shares, prices, tail])


def episode_profits(
    policy: Policy, spec: MarketSpec, alpha: float, seeds: Sequence[int]
) -> np.ndarray:
    """Episode profit (money, nominal market, fitted detector) of `policy` on each seed."""
    env = make_env(spec, alpha)
    profits = []
    for seed in seeds:
        policy.reset()
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, _, terminated, truncated, info = env.step(policy.act(obs))
            total, done = total + info["profit"], terminated or truncated
        profits.append(total)
    return np.asarray(profits)


@pytest.fixture(scope="session")
def spec() -> MarketSpec:
    return small_spec()


@pytest.fixture(scope="session")
def tiny() -> TrainingParams:
    return TINY
