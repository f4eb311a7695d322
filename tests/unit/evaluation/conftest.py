"""A small demo market, fixed-action policies, protocol-shaped synthetic rows and tiny evaluated
partitions for the tests."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from phantom_assets.config import AgentsConfig, EvaluationConfig, MarketConfig
from phantom_assets.evaluation import PolicyEvaluation, evaluate_policies
from phantom_assets.market import DETECTOR_MODES, MarketSpec, demo_spec


@pytest.fixture(scope="session")
def spec() -> MarketSpec:
    """The demo market with a 500-chain bank, 40 shoppers and 6-step episodes."""
    return demo_spec(0, MarketConfig(chain_bank_size=500, shoppers_per_step=40, episode_steps=6))


@dataclasses.dataclass
class FixedAction:
    """A policy that always plays one action of the 45-action grid (counts its resets)."""

    action: int
    tier: str = "fixed"
    resets: int = 0

    def act(self, obs: np.ndarray) -> int:
        return self.action

    def reset(self) -> None:
        self.resets += 1


def action(spec: MarketSpec, level: int, markup: int, detector: int) -> FixedAction:
    """The fixed-action policy of grid indices (level, markup, detector strength)."""
    return FixedAction(spec.action_index(level, markup, detector))


PROTOCOL = EvaluationConfig(episodes=2, test_episodes=2)
"""A tiny protocol: two selection and two held-out episode seeds..."""
GRID = AgentsConfig(alpha_grid=(0.0, 0.5, 1.0), k_grid=(2, 8), stress_radius=0.25)
"""...on three grid α × two K."""
# Policy key -> (tier, mode, train α, grid indices of its fixed action); two training seeds each.
PARTITIONS: dict[str, tuple[str, str, float, tuple[int, int, int]]] = {
    "static-a000": ("static", "heuristic", 0.0, (2, 1, 0)),
    "dqn-baseline-a050": ("dqn", "baseline", 0.5, (3, 1, 0)),
    "dqn-robust-a050": ("dqn", "robust", 0.5, (3, 2, 2)),
}


def partition_labels(key: str) -> dict[str, object]:
    """The columns `policy_evaluations` labels a partition's rows with."""
    tier, mode, alpha, _ = PARTITIONS[key]
    return {
        "store": "hotel",
        "policy": key,
        "tier": tier,
        "mode": mode,
        "train_alpha": alpha,
        "config_hash": key,
    }


@pytest.fixture(scope="session")
def partitions(spec) -> dict[str, PolicyEvaluation]:
    """Protocol tables of fixed-action policies under three keys, two training seeds each."""
    return {
        key: evaluate_policies(
            {0: action(spec, *grid), 1: action(spec, *grid)},
            spec,
            PROTOCOL,
            GRID,
            partition_labels(key),
        )
        for key, (*_, grid) in PARTITIONS.items()
    }


def protocol_rows(
    policies: dict[str, tuple[str, str, float]],
    alphas=(0.0, 0.5, 1.0),
    ks=(2, 8),
    episodes: int = 8,
    train_seeds: int = 3,
    seed: int = 0,
    effect: dict[str, float] | None = None,
    train_sd: float = 3.0,
) -> pl.DataFrame:
    """Synthetic protocol rows (policy × α × K × detector × episode seed × training seed):
    profit = 100 − 30α + 2K + effect[policy] + 4·[fitted] + episode effect (sd 10, shared by
    every policy, cell and detector) + training-seed effect (sd `train_sd`) + noise (sd 2);
    `revenue` = profit + 50; `leak` and `human_harm` are independent noise."""
    rng = np.random.default_rng(seed)
    keys = list(policies)
    shape = (len(keys), len(alphas), len(ks), len(DETECTOR_MODES), episodes, train_seeds)
    pol, a, k, det, episode, train = np.indices(shape).reshape(len(shape), -1)
    alpha, kk = np.asarray(alphas, dtype=float)[a], np.asarray(ks)[k]
    planted = np.asarray([(effect or {}).get(key, 0.0) for key in keys])[pol]
    profit = (
        100
        - 30 * alpha
        + 2 * kk
        + planted
        + 4 * (det == 0)
        + rng.normal(0, 10, episodes)[episode]
        + rng.normal(0, train_sd, (len(keys), train_seeds))[pol, train]
        + rng.normal(0, 2, pol.size)
    )
    labels = np.asarray([policies[key] for key in keys], dtype=object)[pol]
    return pl.DataFrame(
        {
            "policy": np.asarray(keys)[pol],
            "tier": labels[:, 0].astype(str),
            "mode": labels[:, 1].astype(str),
            "train_alpha": labels[:, 2].astype(float),
            "train_seed": train,
            "alpha": alpha,
            "k": kk,
            "detector": np.asarray(DETECTOR_MODES)[det],
            "seed": episode + 100,
            "profit": profit,
            "revenue": profit + 50,
            "leak": rng.uniform(0, 1, pol.size),
            "human_harm": rng.uniform(0, 0.1, pol.size),
        }
    ).with_columns(pl.col("k", "seed", "train_seed").cast(pl.Int64))
