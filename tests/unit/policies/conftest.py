"""A small demo market and tiny training budgets for the policy tests."""

from __future__ import annotations

import pytest

from phantom_assets.market import MarketSpec, demo_spec
from phantom_assets.policies import TrainingParams

TINY = TrainingParams(
    timesteps=192,
    net_arch=(8,),
    ppo_n_steps=64,
    ppo_batch_size=32,
    dqn_learning_starts=32,
    log_every=64,
    linear_warmup_episodes=2,
)


def small_spec(**overrides) -> MarketSpec:
    """The demo market with a 500-chain bank and 16-step episodes."""
    return demo_spec(0, **{"chain_bank_size": 500, "episode_steps": 16, **overrides})


@pytest.fixture(scope="session")
def spec() -> MarketSpec:
    return small_spec()


@pytest.fixture(scope="session")
def tiny() -> TrainingParams:
    return TINY
