"""Pricing policy tiers: training, saved form and partition keys (DESIGN §5, policy tiers)."""

from phantom_assets.policies.artifacts import (
    RELOAD_PROBES,
    PolicyRecord,
    load_trained,
    model_file,
    policy_weights,
    reload_mismatches,
    save_trained,
    weights_digest,
)
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
from phantom_assets.policies.plots import plot_learning_curve
from phantom_assets.policies.qtable import QTablePolicy, train_qtable
from phantom_assets.policies.sb3 import A2CPolicy, DQNPolicy, PPOPolicy, SB3Policy, torch_threads
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
    "RELOAD_PROBES",
    "SB3_TIERS",
    "TIERS",
    "A2CPolicy",
    "DQNPolicy",
    "LinearPolicy",
    "PPOPolicy",
    "Policy",
    "PolicyKey",
    "PolicyRecord",
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
    "load_trained",
    "model_file",
    "parse_policy_key",
    "plot_learning_curve",
    "policy_key",
    "policy_keys",
    "policy_weights",
    "reload_mismatches",
    "revenue_optimal_level",
    "save_trained",
    "split_obs",
    "torch_threads",
    "train_policy",
    "train_qtable",
    "training_env",
    "wandb_run",
    "weights_digest",
]
