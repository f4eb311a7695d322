"""`train_policy`: one entry point for every tier and mode, and `load_policy` for its files.

Modes: `baseline` trains on the nominal market without the leakage penalty (λ = 0, no adversary);
`robust` trains against the worst α of the ambiguity set with the spec's λ. Heuristic tiers have no
mode (they never see a reward); the linear tier fits demand on the nominal market.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import gymnasium as gym

from phantom_assets.market import MarketSpec, make_env
from phantom_assets.policies.base import Policy, TrainedPolicy, TrainingParams
from phantom_assets.policies.heuristics import (
    LinearPolicy,
    StaticPolicy,
    SurgePolicy,
    fit_linear_policy,
)
from phantom_assets.policies.keys import HEURISTIC_MODE, HEURISTIC_TIERS, check_tier_mode
from phantom_assets.policies.qtable import QTablePolicy, qtable_hyperparameters, train_qtable
from phantom_assets.policies.sb3 import SB3_POLICIES, train_sb3
from phantom_assets.policies.tracking import TrackedEpisodes

logger = logging.getLogger(__name__)

POLICY_FILENAMES: dict[str, str] = {
    "static": "policy.json",
    "surge": "policy.json",
    "linear": "policy.json",
    "qtable": "policy.npz",
    **dict.fromkeys(SB3_POLICIES, "policy.zip"),
}
"""File name of each tier's saved policy inside its partition folder."""


def training_env(spec: MarketSpec, alpha: float, mode: str) -> gym.Env:
    """The market a mode trains on: baseline = nominal with λ = 0, robust = adversarial, spec λ."""
    if mode == "robust":
        return make_env(spec, alpha, robust=True, lam=spec.lam)
    if mode in ("baseline", HEURISTIC_MODE):
        return make_env(spec, alpha, robust=False, lam=0.0)
    raise ValueError(f"unknown training mode {mode!r}; choose 'baseline' or 'robust'")


def train_policy(
    tier: str,
    mode: str | None,
    spec: MarketSpec,
    alpha: float,
    params: TrainingParams,
    seed: int,
    run: Any | None = None,
) -> TrainedPolicy:
    """Train (or build) one policy of the grid.

    Args:
        tier: one of `TIERS`.
        mode: "baseline" | "robust" for learnable tiers, None for heuristics.
        spec: the compiled market.
        alpha: training contamination level in [0, 1].
        params: budgets and hyperparameters.
        seed: training seed (exploration, env, network initialisation).
        run: optional W&B run (`tracking.wandb_run`) the learnable tiers log to while they train:
            SB3 tiers through `tracking.wandb_callback`, the Q-table per episode through
            `tracking.TrackedEpisodes`. Tracking never changes the trained policy.

    Returns:
        The policy with its learning curve (empty for heuristics), hyperparameters and seed.
    """
    check_tier_mode(tier, mode)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    mode_name = HEURISTIC_MODE if tier in HEURISTIC_TIERS else str(mode)
    logger.info("training %s (%s) at alpha=%.2f, seed %d", tier, mode_name, alpha, seed)
    common = {"tier": tier, "mode": mode_name, "alpha": float(alpha), "seed": int(seed)}
    if tier == "static":
        policy = StaticPolicy.mid(spec.n_actions)
        return TrainedPolicy(policy, hyperparameters={"level": policy.level}, **common)
    if tier == "surge":
        surge = SurgePolicy(spec.n_actions, params.surge_threshold, params.surge_memory)
        hyper = {"threshold": surge.threshold, "memory": surge.memory}
        return TrainedPolicy(surge, hyperparameters=hyper, **common)
    env = training_env(spec, alpha, mode_name)
    if tier == "linear":
        linear, summary = fit_linear_policy(env, spec, params.linear_warmup_episodes, seed)
        hyper = {"warmup_episodes": params.linear_warmup_episodes, **summary}
        return TrainedPolicy(linear, hyperparameters=hyper, **common)
    if tier == "qtable":
        table, curve = train_qtable(env if run is None else TrackedEpisodes(env, run), params, seed)
        hyper = qtable_hyperparameters(params)
        return TrainedPolicy(table, hyperparameters=hyper, learning_curve=curve, **common)
    model, curve, hyper = train_sb3(tier, env, params, seed, run=run)
    return TrainedPolicy(model, hyperparameters=hyper, learning_curve=curve, **common)


def load_policy(tier: str, path: str | Path, device: str = "cpu") -> Policy:
    """Load a policy of `tier` saved by its `save` method."""
    loaders = {"static": StaticPolicy.load, "surge": SurgePolicy.load,
               "linear": LinearPolicy.load, "qtable": QTablePolicy.load}  # fmt: skip
    if tier in loaders:
        return loaders[tier](path)
    if tier in SB3_POLICIES:
        return SB3_POLICIES[tier].load(path, device=device)
    raise ValueError(f"unknown policy tier {tier!r}")
