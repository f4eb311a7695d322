"""Behavioural fingerprinting: transition kernels, divergence scores, separability
(docs/method.md#transition-kernels and the sections after it).

Pure methodology (numpy/polars/scipy; no dagster). Typical use by the fingerprint assets::

    human = fit_class_kernels(sessions, "human", kappa=cfg.kappa, k=cfg.folds)
    agent = fit_class_kernels(sessions, "agent", kappa=cfg.kappa, k=cfg.folds)
    scores = score_sessions(sessions, human, agent, cfg.temperature)
    prefix = prefix_scores(sessions, human, agent, cfg.temperature, cfg.max_prefix)
    report = separability_report(scores, rng=rng, sessions=sessions, prefix=prefix)

`store` writes a kernel set with its κ (`write_kernel_set`) and is how every reader finds the
stored fingerprint artifacts (`load_kernel_set`, `read_labeled_sessions`, `load_score_calibration`).
"""

from phantom_assets.fingerprint.bench import bench_fingerprint
from phantom_assets.fingerprint.calibration import calibrate_out_of_fold, fit_logistic_1d
from phantom_assets.fingerprint.divergence import (
    SCORE_COLUMNS,
    divergences,
    prefix_scores,
    score_calibration,
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
from phantom_assets.fingerprint.refit_bootstrap import (
    AUC_CI_METHOD,
    auc_interval,
    cluster_bootstrap_aucs,
)
from phantom_assets.fingerprint.refit_core import (
    SessionCounts,
    counts_from_codes,
    oof_aucs,
    session_counts,
)
from phantom_assets.fingerprint.refit_permutation import (
    KERNEL_DIVERGENCE_P_METHOD,
    P_METHOD,
    PermutationTest,
    centred_pvalue,
    experiment_permutation_test,
    observed_auc,
    one_session_per_experiment,
    permute_within_folds,
    upper_pvalue,
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
    mann_whitney,
    roc_curve,
    weighted_row_auc,
)
from phantom_assets.fingerprint.store import (
    KernelMeta,
    load_kernel_meta,
    load_kernel_set,
    load_score_calibration,
    read_kernel_meta,
    read_kernel_set,
    read_labeled_sessions,
    write_kernel_set,
)
from phantom_assets.fingerprint.synthetic import (
    perturbed_chains,
    random_chain,
    sample_event_codes,
    sample_trajectories,
    sessions_per_experiment,
    synthetic_sessions,
    transitions_from_codes,
)

__all__ = [
    "AUC_CI_METHOD",
    "KERNEL_DIVERGENCE_P_METHOD",
    "P_METHOD",
    "SCORE_COLUMNS",
    "SESSION_SCHEMA",
    "Kernel",
    "KernelMeta",
    "KernelSet",
    "MannWhitney",
    "PermutationTest",
    "SeparabilityParams",
    "SeparabilityReport",
    "SessionCounts",
    "Transitions",
    "assign_folds",
    "auc",
    "auc_interval",
    "bench_fingerprint",
    "calibrate_out_of_fold",
    "centred_pvalue",
    "cluster_bootstrap_aucs",
    "counts_from_codes",
    "divergences",
    "empty_rows",
    "encode_trajectories",
    "experiment_permutation_test",
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
    "load_kernel_meta",
    "load_kernel_set",
    "load_score_calibration",
    "mann_whitney",
    "observed_auc",
    "one_session_per_experiment",
    "oof_aucs",
    "permute_within_folds",
    "perturbed_chains",
    "plot_gap_histograms",
    "plot_kernel_heatmap",
    "plot_prefix_curve",
    "plot_roc",
    "prefix_curve",
    "prefix_scores",
    "probs_from_counts",
    "random_chain",
    "read_kernel_meta",
    "read_kernel_set",
    "read_labeled_sessions",
    "roc_curve",
    "sample_event_codes",
    "sample_trajectories",
    "score_calibration",
    "score_sessions",
    "separability_report",
    "session_counts",
    "sessions_per_experiment",
    "stable_hash64",
    "synthetic_sessions",
    "transitions_from_codes",
    "upper_pvalue",
    "validate_sessions",
    "weighted_row_auc",
    "write_kernel_set",
]
