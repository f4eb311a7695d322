"""Pricing policy tiers, their training and their partition keys (DESIGN §5, policy tiers)."""

from phantom_assets.policies.base import (
    LEARNING_CURVE_SCHEMA,
    Policy,
    TrainedPolicy,
    TrainingParams,
    demand_breadth,
    split_obs,
)
from phantom_assets.policies.heuristics import (
    LinearPolicy,
    StaticPolicy,
    SurgePolicy,
    fit_linear_demand,
    revenue_optimal_level,
)
from phantom_assets.policies.keys import (
    ALPHA_FREE_TIERS,
    HEURISTIC_MODE,
    HEURISTIC_TIERS,
    LEARNABLE_TIERS,
    MODES,
    SB3_TIERS,
    TIERS,
    PolicyKey,
    baseline_twin,
    parse_policy_key,
    policy_key,
    policy_keys,
)
from phantom_assets.policies.qtable import QTablePolicy, train_qtable
from phantom_assets.policies.sb3 import A2CPolicy, DQNPolicy, PPOPolicy, SB3Policy
from phantom_assets.policies.tracking import wandb_run
from phantom_assets.policies.train import POLICY_FILENAMES, load_policy, train_policy, training_env

__all__ = [
    "ALPHA_FREE_TIERS",
    "HEURISTIC_MODE",
    "HEURISTIC_TIERS",
    "LEARNABLE_TIERS",
    "LEARNING_CURVE_SCHEMA",
    "MODES",
    "POLICY_FILENAMES",
    "SB3_TIERS",
    "TIERS",
    "A2CPolicy",
    "DQNPolicy",
    "LinearPolicy",
    "PPOPolicy",
    "Policy",
    "PolicyKey",
    "QTablePolicy",
    "SB3Policy",
    "StaticPolicy",
    "SurgePolicy",
    "TrainedPolicy",
    "TrainingParams",
    "baseline_twin",
    "demand_breadth",
    "fit_linear_demand",
    "load_policy",
    "parse_policy_key",
    "policy_key",
    "policy_keys",
    "revenue_optimal_level",
    "split_obs",
    "train_policy",
    "train_qtable",
    "training_env",
    "wandb_run",
]
