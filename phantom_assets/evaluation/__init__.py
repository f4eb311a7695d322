"""The evaluation protocol, benchmark statistics and plots (DESIGN §5, evaluation / benchmark)."""

from phantom_assets.evaluation.benchmark import (
    CURVE_SCHEMA,
    OlsResult,
    benchmark_curves,
    bootstrap_mean_ci,
    cluster_ols,
    configuration_identity,
    defended_vs_baseline,
    paired_difference,
    revenue_regression,
    unique_configurations,
)
from phantom_assets.evaluation.plots import plot_metric_vs_alpha, plot_price_traces
from phantom_assets.evaluation.protocol import (
    EPISODE_METRICS,
    TRACE_COLUMNS,
    episode_metrics,
    evaluate_policy,
    nominal_env,
    price_traces,
    run_episode,
    stress_alphas,
    stress_evaluate,
    worst_case,
)

__all__ = [
    "CURVE_SCHEMA",
    "EPISODE_METRICS",
    "TRACE_COLUMNS",
    "OlsResult",
    "benchmark_curves",
    "bootstrap_mean_ci",
    "cluster_ols",
    "configuration_identity",
    "defended_vs_baseline",
    "episode_metrics",
    "evaluate_policy",
    "nominal_env",
    "paired_difference",
    "plot_metric_vs_alpha",
    "plot_price_traces",
    "price_traces",
    "revenue_regression",
    "run_episode",
    "stress_alphas",
    "stress_evaluate",
    "unique_configurations",
    "worst_case",
]
