"""`train_policy`: one entry point for every tier and mode, and `load_policy` for its files.

A learnable mode's market comes from `keys.TRAINING_MODES`: the adversary over (α, K) when the
mode is robust, λ = the ablation λ when it is charged, else λ = 0 (the leak measured, not charged).
Heuristic tiers have no mode (they never see a reward); the linear tier fits demand on the nominal
market with λ = 0. With a training law (`market.training_law`) every training episode runs at an
(α, K) drawn from it, and a robust mode's adversary works inside the ambiguity set around the
drawn α; without one, every episode runs at the training α and the nominal K.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from pathlib import Path
from typing import Any

import gymnasium as gym

from phantom_assets.market import EpisodeLaw, MarketSpec, make_env
from phantom_assets.policies.base import Policy, TrainedPolicy, TrainingParams
from phantom_assets.policies.heuristics import (
    LinearPolicy,
    StaticPolicy,
    SurgePolicy,
    TunedDefendedPolicy,
    TunedStaticPolicy,
    fit_linear_policy,
)
from phantom_assets.policies.keys import (
    HEURISTIC_MODE,
    HEURISTIC_TIERS,
    check_tier_mode,
    mode_market,
)
from phantom_assets.policies.qtable import QTablePolicy, qtable_hyperparameters, train_qtable
from phantom_assets.policies.sb3 import SB3_POLICIES, train_sb3
from phantom_assets.policies.tracking import TrackedEpisodes

logger = logging.getLogger(__name__)

POLICY_FILENAMES: dict[str, str] = {
    "static": "policy.json",
    "tuned": "policy.json",
    "defended": "policy.json",
    "surge": "policy.json",
    "linear": "policy.json",
    "qtable": "policy.npz",
    **dict.fromkeys(SB3_POLICIES, "policy.zip"),
}
"""File name of each tier's saved policy inside its partition folder."""
TUNED_POLICIES: dict[str, type[StaticPolicy]] = {
    "tuned": TunedStaticPolicy,
    "defended": TunedDefendedPolicy,
}
"""The tiers that play one best fixed response of the market (undefended, defended)."""


def training_env(
    spec: MarketSpec, alpha: float, mode: str, ablation_lam: float, law: EpisodeLaw | None = None
) -> gym.Env:
    """The market a mode trains on (`keys.mode_market`; heuristics: nominal with λ = 0), each
    episode at an (α, K) drawn from `law` (None: at `alpha` and the nominal K)."""
    robust, lam = mode_market(mode, ablation_lam)
    return make_env(spec, alpha, robust=robust, lam=lam, law=law)


def train_policy(
    tier: str,
    mode: str | None,
    spec: MarketSpec,
    alpha: float,
    params: TrainingParams,
    seed: int,
    run: Any | None = None,
    fixed_action: int | None = None,
    law: EpisodeLaw | None = None,
) -> TrainedPolicy:
    """Train (or build) one policy of the grid.

    Args:
        tier: one of `TIERS`.
        mode: a `TRAINING_MODES` name for learnable tiers, None for heuristics.
        spec: the compiled market.
        alpha: training contamination level in [0, 1] (with a `law`: the nominal α of its band,
            which names the policy).
        params: budgets and hyperparameters (`params.ablation_lam`: λ of the charged modes).
        seed: training seed (exploration, env, network initialisation).
        run: optional W&B run (`tracking.wandb_run`) the learnable tiers log to while they train:
            SB3 tiers through `tracking.wandb_callback`, the Q-table per episode through
            `tracking.TrackedEpisodes`. Tracking never changes the trained policy.
        fixed_action: the action a tuned tier plays (required for them): the best undefended
            response for tuned-static, the best defended fixed action for tuned-defended
            (`market.response.best_fixed_responses`).
        law: the (α, K) law of the training episodes of the tiers that learn from the market
            (linear and the learnable tiers); None: every episode at `alpha`, nominal K.

    Returns:
        The policy with its learning curve (empty for heuristics), hyperparameters (with the
        training law, and the mode's robust flag and λ for learnable tiers) and seed.
    """
    check_tier_mode(tier, mode)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    mode_name = HEURISTIC_MODE if tier in HEURISTIC_TIERS else str(mode)
    logger.info("training %s (%s) at alpha=%.2f, seed %d", tier, mode_name, alpha, seed)
    common = {"tier": tier, "mode": mode_name, "alpha": float(alpha), "seed": int(seed)}
    if tier == "static":
        policy = StaticPolicy.undefended(spec)
        return TrainedPolicy(policy, hyperparameters={"action": policy.action}, **common)
    if tier in TUNED_POLICIES:
        if fixed_action is None:
            raise ValueError(f"the {tier} tier plays a best fixed response: pass its action")
        tuned = TUNED_POLICIES[tier](action=int(fixed_action))
        level, markup, delta = spec.action_values(tuned.action)
        if (delta > 0.0) != (tier == "defended"):
            raise ValueError(f"the {tier} tier's action {tuned.action} has δ = {delta}")
        hyper = {"action": tuned.action, "level": level, "markup": markup, "delta": delta}
        return TrainedPolicy(tuned, hyperparameters=hyper, **common)
    if tier == "surge":
        surge = SurgePolicy(spec.action_shape, params.surge_threshold, params.surge_memory)
        hyper = {"threshold": surge.threshold, "memory": surge.memory}
        return TrainedPolicy(surge, hyperparameters=hyper, **common)
    env = training_env(spec, alpha, mode_name, params.ablation_lam, law)
    drawn = {"law": None if law is None else dataclasses.asdict(law)}
    if tier == "linear":
        linear, summary = fit_linear_policy(env, spec, params.linear_warmup_episodes, seed)
        hyper = {"warmup_episodes": params.linear_warmup_episodes, **summary, **drawn}
        return TrainedPolicy(linear, hyperparameters=hyper, **common)
    market = {"robust": env.unwrapped.robust, "lam": env.unwrapped.lam, **drawn}
    if tier == "qtable":
        tracked = env if run is None else TrackedEpisodes(env, run)
        table, curve = train_qtable(tracked, spec, params, seed)
        hyper = {**qtable_hyperparameters(params, spec), **market}
        return TrainedPolicy(table, hyperparameters=hyper, learning_curve=curve, **common)
    markets = functools.partial(training_env, spec, alpha, mode_name, params.ablation_lam, law)
    model, curve, hyper = train_sb3(tier, markets, params, seed, spec.reward_scale, run=run)
    return TrainedPolicy(model, hyperparameters={**hyper, **market}, learning_curve=curve, **common)


def load_policy(tier: str, path: str | Path, device: str = "cpu") -> Policy:
    """Load a policy of `tier` saved by its `save` method."""
    loaders = {
        "static": StaticPolicy.load,
        **{tier: policy.load for tier, policy in TUNED_POLICIES.items()},
        "surge": SurgePolicy.load,
        "linear": LinearPolicy.load,
        "qtable": QTablePolicy.load,
    }
    if tier in loaders:
        return loaders[tier](path)
    if tier in SB3_POLICIES:
        return SB3_POLICIES[tier].load(path, device=device)
    raise ValueError(f"unknown policy tier {tier!r}")
