"""A small demo market, synthetic protocol frames and tiny evaluated partitions for the tests."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.config import EvaluationConfig
from phantom_assets.evaluation import PolicyEvaluation, evaluate_policies
from phantom_assets.market import MarketSpec, demo_spec
from phantom_assets.policies import StaticPolicy, parse_policy_key


@pytest.fixture(scope="session")
def spec() -> MarketSpec:
    """The demo market with a 500-chain bank and 12-step episodes."""
    return demo_spec(0, chain_bank_size=500, episode_steps=12)


def synthetic_evaluations(
    policies=("ppo-baseline-a050", "ppo-robust-a050"), alphas=(0.0, 0.5, 1.0), episodes=10, seed=0
) -> pl.DataFrame:
    """Protocol-shaped rows: revenue = 100 − 30α + episode effect (shared by seed) + noise."""
    rng = np.random.default_rng(seed)
    episode_effect = rng.normal(0, 10, episodes)
    rows = []
    for shift, policy in enumerate(policies):
        for alpha in alphas:
            noise = rng.normal(0, 2, episodes)
            revenue = 100 - 30 * alpha + 5 * shift + episode_effect + noise
            rows.append(pl.DataFrame({
                "policy": policy, "alpha": alpha, "seed": np.arange(episodes) + 100,
                "revenue": revenue, "leakage": rng.uniform(0, 1, episodes)}))  # fmt: skip
    return pl.concat(rows).with_columns(pl.col("seed").cast(pl.Int64))


@pytest.fixture
def evaluations() -> pl.DataFrame:
    return synthetic_evaluations()


PROTOCOL = EvaluationConfig(alphas=(0.0, 0.5, 1.0), episodes=2, test_episodes=2)
"""A tiny protocol: three grid α, two selection and two held-out episode seeds."""
# Policy key -> static price level (two training seeds each); the robust one has a baseline twin.
PARTITIONS = {"qtable-baseline-a050": 2, "qtable-robust-a050": 5, "static-a000": 4}


def partition_labels(key: str) -> dict[str, object]:
    """The columns `policy_evaluations` labels a partition's rows with."""
    parsed = parse_policy_key(key)
    return {"store": "hotel", "policy": key, "tier": parsed.tier, "mode": parsed.mode,
            "train_alpha": parsed.alpha, "config_hash": key}  # fmt: skip


@pytest.fixture(scope="session")
def partitions(spec) -> dict[str, PolicyEvaluation]:
    """Protocol tables of static policies stored under three keys, two training seeds each."""
    return {
        key: evaluate_policies({0: StaticPolicy(level), 1: StaticPolicy(level)}, spec, PROTOCOL,
                               partition_labels(key))
        for key, level in PARTITIONS.items()
    }  # fmt: skip
