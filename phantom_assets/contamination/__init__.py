"""Contamination generator G(α), event-chain sampling and the debiased α̂
(docs/method.md#contamination-generator)."""

from phantom_assets.contamination.alpha_hat import (
    AlphaHat,
    AlphaHatParams,
    ClusterStats,
    alpha_hat,
    bootstrap_alpha,
)
from phantom_assets.contamination.chains import (
    PAD,
    InverseCdf,
    iter_transitions,
    sample_chains,
    sampling_cdf,
    validate_kernel,
)
from phantom_assets.contamination.generator import (
    OUTPUT_COLUMNS,
    OUTPUT_SCHEMA,
    ContaminationParams,
    contaminate,
    demand_proxy,
    mean_f_is_monotone,
    n_synthetic,
    synthesize_agents,
)
from phantom_assets.contamination.scoring import (
    REFERENCE_AGENTS,
    alpha_hat_report,
    calibrated_scorer,
    dataset_alpha_hat,
    labeled_alpha_hat,
    reference_agent_f,
)
from phantom_assets.contamination.store import (
    mean_f_by_alpha,
    read_human_sessions,
    read_labeled_f,
    read_session_f,
    write_contaminated_dataset,
)

__all__ = [
    "OUTPUT_COLUMNS",
    "OUTPUT_SCHEMA",
    "PAD",
    "REFERENCE_AGENTS",
    "AlphaHat",
    "AlphaHatParams",
    "ClusterStats",
    "ContaminationParams",
    "InverseCdf",
    "alpha_hat",
    "alpha_hat_report",
    "bootstrap_alpha",
    "calibrated_scorer",
    "contaminate",
    "dataset_alpha_hat",
    "demand_proxy",
    "iter_transitions",
    "labeled_alpha_hat",
    "mean_f_by_alpha",
    "mean_f_is_monotone",
    "n_synthetic",
    "read_human_sessions",
    "read_labeled_f",
    "read_session_f",
    "reference_agent_f",
    "sample_chains",
    "sampling_cdf",
    "synthesize_agents",
    "validate_kernel",
    "write_contaminated_dataset",
]
