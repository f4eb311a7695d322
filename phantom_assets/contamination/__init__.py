"""Contamination generator G(α) and event-chain sampling (DESIGN §5)."""

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

__all__ = [
    "OUTPUT_COLUMNS",
    "OUTPUT_SCHEMA",
    "PAD",
    "ContaminationParams",
    "InverseCdf",
    "contaminate",
    "demand_proxy",
    "iter_transitions",
    "mean_f_is_monotone",
    "n_synthetic",
    "sample_chains",
    "sampling_cdf",
    "synthesize_agents",
    "validate_kernel",
]
