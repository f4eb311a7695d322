"""Behavioural fingerprinting: transition kernels, divergence scores, separability (DESIGN §5).

Pure methodology (numpy/polars/scipy; no dagster). Typical use by the fingerprint assets::

    human = fit_class_kernels(sessions, "human", kappa=cfg.kappa, k=cfg.folds)
    agent = fit_class_kernels(sessions, "agent", kappa=cfg.kappa, k=cfg.folds)
    scores = score_sessions(sessions, human, agent, cfg.temperature)
    prefix = prefix_scores(sessions, human, agent, cfg.temperature, cfg.max_prefix)
    report = separability_report(scores, rng=rng, sessions=sessions, prefix=prefix)
"""

from phantom_assets.fingerprint.bench import bench_fingerprint
from phantom_assets.fingerprint.calibration import calibrate_out_of_fold, fit_logistic_1d
from phantom_assets.fingerprint.divergence import (
    SCORE_COLUMNS,
    divergences,
    prefix_scores,
    score_sessions,
)
from phantom_assets.fingerprint.encoding import Transitions, encode_trajectories
from phantom_assets.fingerprint.folds import assign_folds, fnv1a64, stable_hash64
from phantom_assets.fingerprint.kernels import (
    Kernel,
    empty_rows,
    fit_fold_kernels,
    fit_kernel,
    kernel_checks,
    kernel_frame,
    kernel_from_frame,
    probs_from_counts,
)
from phantom_assets.fingerprint.plots import (
    plot_gap_histograms,
    plot_kernel_heatmap,
    plot_prefix_curve,
    plot_roc,
)
from phantom_assets.fingerprint.refit_permutation import (
    centred_pvalue,
    refit_permutation_null,
    refit_permutation_pvalue,
)
from phantom_assets.fingerprint.separability import (
    SeparabilityParams,
    SeparabilityReport,
    kernel_divergence,
    prefix_curve,
    separability_report,
)
from phantom_assets.fingerprint.sessions import (
    SESSION_SCHEMA,
    KernelSet,
    fit_class_kernels,
    fit_kernel_set,
    validate_sessions,
)
from phantom_assets.fingerprint.statistics import (
    MannWhitney,
    auc,
    bootstrap_auc,
    mann_whitney,
    permutation_auc_pvalue,
    roc_curve,
    weighted_auc,
)
from phantom_assets.fingerprint.synthetic import (
    random_chain,
    sample_trajectories,
    synthetic_sessions,
)

__all__ = [
    "SCORE_COLUMNS",
    "SESSION_SCHEMA",
    "Kernel",
    "KernelSet",
    "MannWhitney",
    "SeparabilityParams",
    "SeparabilityReport",
    "Transitions",
    "assign_folds",
    "auc",
    "bench_fingerprint",
    "bootstrap_auc",
    "calibrate_out_of_fold",
    "centred_pvalue",
    "divergences",
    "empty_rows",
    "encode_trajectories",
    "fit_class_kernels",
    "fit_fold_kernels",
    "fit_kernel",
    "fit_kernel_set",
    "fit_logistic_1d",
    "fnv1a64",
    "kernel_checks",
    "kernel_divergence",
    "kernel_frame",
    "kernel_from_frame",
    "mann_whitney",
    "permutation_auc_pvalue",
    "plot_gap_histograms",
    "plot_kernel_heatmap",
    "plot_prefix_curve",
    "plot_roc",
    "prefix_curve",
    "prefix_scores",
    "probs_from_counts",
    "random_chain",
    "refit_permutation_null",
    "refit_permutation_pvalue",
    "roc_curve",
    "sample_trajectories",
    "score_sessions",
    "separability_report",
    "stable_hash64",
    "synthetic_sessions",
    "validate_sessions",
    "weighted_auc",
]
