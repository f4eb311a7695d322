"""A small demo market and synthetic protocol frames for the evaluation tests."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.market import MarketSpec, demo_spec


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
