"""Fingerprint group: labeled sessions, transition kernels, divergence scores, separability.

Longer than the 250-line guide for asset modules because it holds four assets of one area with
their checks; every body still only loads, calls the pure `phantom_assets.fingerprint` and writes.
"""

from collections.abc import Callable

import dagster as dg
import numpy as np
import polars as pl

from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import (
    BY_STORE,
    GridPartitions,
    store_actor_keys,
    store_actor_partitions,
    store_partitions,
)
from phantom_assets.assets.resources import StorageResource
from phantom_assets.assets.store_slices import read_store_slice
from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS, MIN_EVENTS_FOR_KERNEL, ROW_SUM_TOLERANCE
from phantom_assets.fingerprint import (
    SESSION_SCHEMA,
    KernelSet,
    SeparabilityParams,
    assign_folds,
    fit_class_kernels,
    kernel_checks,
    kernel_frame,
    load_kernel_meta,
    load_kernel_set,
    plot_gap_histograms,
    plot_kernel_heatmap,
    plot_prefix_curve,
    plot_roc,
    prefix_scores,
    read_labeled_sessions,
    score_calibration,
    score_sessions,
    write_kernel_set,
)
from phantom_assets.fingerprint import separability_report as separability_report_of
from phantom_assets.lake import (
    CALIBRATION_FILE,
    PREFIX_SCORES_FILE,
    RECALL_FILE,
    RECALL_MD_FILE,
    REPORT_FILE,
    SCORES_FILE,
)
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

FINGERPRINT_CODE = code_version_of(
    "phantom_assets.assets.fingerprint", "phantom_assets.fingerprint", "phantom_assets.constants"
)
GROUP = "fingerprint"
KERNEL_CHECKS = {
    "rows_sum_to_one": "Every row of the full kernel and of every fold kernel sums to 1 (within "
    f"{ROW_SUM_TOLERANCE:g}).",
    "no_negative_entries": "No count or probability of the full or a fold kernel is negative.",
    "counts_match_transitions": "The full kernel's counts add up to the transitions of the "
    "sessions it was fitted on (each session of at least "
    f"{MIN_EVENTS_FOR_KERNEL} events gives its events + 1, with the `start` and `end` tokens).",
}
SCORE_CHECKS = {
    "f_in_unit_interval": "Every session's agent probability f lies in [0, 1].",
    "every_session_scored": "Every session of the store, labeled or not, has exactly one score.",
}
# The dbt mart `fingerprint_sessions` holds the logic; the assets read their store's slice of it.
SESSIONS_MART = "fingerprint_sessions"
UNLABELED_COLUMNS = ("session_id", "store", "actor", "n_events", "trajectory")
REPORT_HEADLINE = (
    "n_human",
    "n_agent",
    "u_statistic",
    "mann_whitney_p",
    "p_value",
    "p_method",
    "p_floor",
    "n_test_experiments",
    "auc",
    "auc_ci_low",
    "auc_ci_high",
    "auc_ci_method",
    "kernel_divergence",
    "kernel_divergence_p",
    "kernel_divergence_p_method",
)


def labeled_sessions(
    context: dg.AssetExecutionContext, storage: StorageResource
) -> dg.MaterializeResult:
    """Labeled sessions of one store and actor class, each with a deterministic fold id.

    Folds hash the experiment id (one subject's sessions share a fold, so cross-fitting never
    scores a session with a kernel that saw the same subject); unlabeled sessions are excluded
    here and counted, and are scored later against the full kernels.
    """
    store, actor = store_actor_keys(context)
    settings = storage.settings()
    folds = settings.fingerprint.folds
    sessions = read_store_slice(settings.lake, store, SESSIONS_MART)
    selected = (
        sessions.filter(pl.col("is_labeled") & (pl.col("actor") == actor))
        .drop("is_labeled")
        .sort("session_id")
    )
    n_unlabeled = sessions.filter(~pl.col("is_labeled")).height
    group = selected["experiment_id"].fill_null(selected["session_id"])
    selected = selected.with_columns(fold=pl.Series(assign_folds(group, folds), dtype=pl.Int64))
    path = settings.lake.labeled_sessions(store, actor)
    write_parquet_atomic(selected, path)
    version, artifacts = artifact_version(path)
    return dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            selected,
            path,
            **artifacts,
            n_unlabeled_in_store=n_unlabeled,
            folds=folds,
            fold_sizes=str(selected["fold"].value_counts().sort("fold").rows()),
        ),
    )


def transition_kernels(context: dg.AssetExecutionContext, storage: StorageResource):
    """Pooled MLE Markov kernel of one store × actor class (rows = sources), with counts, plus
    one kernel per fold fitted without that fold (for out-of-fold scoring); `kernel.json`
    records the κ and folds they were fitted with, which every reader uses."""
    store, actor = store_actor_keys(context)
    settings = storage.settings()
    cfg, lake = settings.fingerprint, settings.lake
    sessions = pl.read_parquet(lake.labeled_sessions(store, actor))
    kernels = fit_class_kernels(sessions, actor, kappa=cfg.kappa, k=cfg.folds)
    eligible = sessions.filter(pl.col("n_events") >= MIN_EVENTS_FOR_KERNEL)
    n_transitions = int((eligible["n_events"] + 1).sum() or 0)
    paths = write_kernel_set(kernels, lake.kernels_dir(store, actor))
    version, artifacts = artifact_version(*paths)
    figure = plot_kernel_heatmap(kernels.full, title=f"{store} / {actor} kernel")
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            kernel_frame(kernels.full),
            paths[0],
            **artifacts,
            kappa=cfg.kappa,
            folds=cfg.folds,
            n_sessions=sessions.height,
            n_sessions_fitted=eligible.height,
            n_transitions=n_transitions,
            heatmap=figure_markdown(
                figure,
                settings.reports_dir / "transition_kernels" / f"{store}_{actor}.png",
                f"P(next | current), {store} {actor}",
            ),
        ),
    )
    yield from kernel_check_results(kernels, n_transitions)


def kernel_check_results(kernels: KernelSet, n_transitions: int) -> list[dg.AssetCheckResult]:
    """`KERNEL_CHECKS` over the full and every fold kernel of a class."""
    checks = [kernel_checks(k, n_transitions) for k in (kernels.full, *kernels.folds)]
    # Fold kernels see fewer transitions by design; only the full kernel's counts must match.
    return [
        dg.AssetCheckResult(
            check_name=name,
            passed=bool(
                checks[0][name]
                if name == "counts_match_transitions"
                else all(c[name] for c in checks)
            ),
        )
        for name in KERNEL_CHECKS
    ]


def divergence_scores(context: dg.AssetExecutionContext, storage: StorageResource):
    """Δ_H, Δ_A, gap and agent probability f for every session of a store. Labeled sessions are
    scored with the kernels fitted without their fold; unlabeled ones with the full kernels. `f` is
    the probability `fingerprint.calibration` selects (both are kept); `calibration.json` holds the
    choice and the logistic fit on all labeled sessions, `prefix_scores.parquet` f on prefixes."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.fingerprint, settings.lake
    unlabeled = (
        read_store_slice(lake, store, SESSIONS_MART)
        .filter(~pl.col("is_labeled"))
        .select(UNLABELED_COLUMNS)
        .sort("session_id")
    )
    sessions = pl.concat(
        [
            read_labeled_sessions(lake, store),
            unlabeled.with_columns(fold=pl.lit(-1, pl.Int64)).select(list(SESSION_SCHEMA)),
        ]
    ).cast(SESSION_SCHEMA)
    human, agent = (load_kernel_set(lake, store, actor) for actor in ACTORS)
    scores = score_sessions(sessions, human, agent, cfg.temperature, calibration=cfg.calibration)
    calibration = score_calibration(scores, cfg.calibration, cfg.temperature)
    prefix = prefix_scores(sessions, human, agent, cfg.temperature, cfg.max_prefix)
    folder = lake.scores_dir(store)
    paths = folder / SCORES_FILE, folder / PREFIX_SCORES_FILE, folder / CALIBRATION_FILE
    write_parquet_atomic(scores, paths[0])
    write_parquet_atomic(prefix, paths[1])
    write_json_atomic(calibration.to_dict(), paths[2])
    version, artifacts = artifact_version(*paths)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            scores,
            paths[0],
            **artifacts,
            n_unlabeled=unlabeled.height,
            kappa=human.full.kappa,
            temperature=cfg.temperature,
            calibration=cfg.calibration,
            f_method=calibration.method,
            logistic_coef=str(calibration.coef),
            mean_f_by_actor=str(
                scores.group_by("actor").agg(pl.col("f").mean()).sort("actor").rows()
            ),
        ),
    )
    yield dg.AssetCheckResult(
        check_name="f_in_unit_interval",
        passed=bool(scores["f"].drop_nans().is_between(0.0, 1.0).all()),
    )
    yield dg.AssetCheckResult(
        check_name="every_session_scored",
        passed=scores.height == sessions.height
        and scores["session_id"].n_unique() == scores.height,
        metadata={"n_sessions": sessions.height, "n_scores": scores.height},
    )


def separability_report(context: dg.AssetExecutionContext, storage: StorageResource):
    """How well the out-of-fold gap separates agents from humans in one store: AUC with a refit
    experiment-cluster bootstrap CI, the experiment-level refit permutation p (one session per
    experiment), descriptive Mann–Whitney U and p, kernel divergence with its experiment-level
    permutation p, the accuracy/AUC by prefix length and the quote-time detectors' recall at
    1/2/5% human FPR by prefix length (`quote_detector`: v2 vs kernel-only, with intervals;
    `report.json` + plots). The refits use the κ and folds stored with the store's kernels."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.fingerprint, settings.lake
    scores = pl.read_parquet(lake.scores_dir(store) / SCORES_FILE)
    prefix = pl.read_parquet(lake.scores_dir(store) / PREFIX_SCORES_FILE)
    sessions = read_labeled_sessions(lake, store, "experiment_id")
    fitted = load_kernel_meta(lake, store)
    params = SeparabilityParams(
        n_bootstrap=cfg.bootstrap_draws,
        n_permutations=cfg.permutation_draws,
        kappa=fitted.kappa,
        folds=fitted.folds,
    )
    rng = np.random.default_rng(cfg.seed)
    report = separability_report_of(
        scores, rng=rng, params=params, sessions=sessions, prefix=prefix
    )
    path = lake.separability_dir(store) / REPORT_FILE
    payload = report.to_dict()
    # The quote-time detectors' recall by prefix length (`quote_detector`), reported beside the
    # whole-session separability it refines.
    quote = lake.quote_detector_dir(store)
    payload["quote_recall"] = pl.read_parquet(quote / RECALL_FILE).to_dicts()
    write_json_atomic(payload, path)
    version, artifacts = artifact_version(path)
    plots = settings.reports_dir / "separability_report"
    labeled = scores.filter(pl.col("actor").is_in(list(ACTORS)))
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            "path": dg.MetadataValue.path(str(path)),
            "seed": cfg.seed,
            **artifacts,
            **{k: payload[k] for k in REPORT_HEADLINE},
            "gap_histograms": figure_markdown(
                plot_gap_histograms(labeled), plots / f"{store}_gaps.png", "Gap by class"
            ),
            "roc": figure_markdown(plot_roc(labeled), plots / f"{store}_roc.png", "ROC"),
            "quote_recall": dg.MetadataValue.md((quote / RECALL_MD_FILE).read_text()),
            "prefix_curve": figure_markdown(
                plot_prefix_curve(report.prefix_curve),
                plots / f"{store}_prefix.png",
                "Accuracy / AUC by prefix length",
            ),
        },
    )


def build_fingerprint_assets(
    settings: Settings, grids: GridPartitions
) -> list[dg.AssetsDefinition]:
    """The four fingerprint assets, each versioned with the fingerprint settings it reads.

    κ enters only `transition_kernels`: the readers take it from `kernel.json`.
    """

    def asset(*names: str, **kwargs) -> Callable[..., dg.AssetsDefinition]:
        reads = tuple(f"fingerprint.{name}" for name in names)
        return declared_asset(
            settings=settings, code=FINGERPRINT_CODE, reads=reads, group_name=GROUP, **kwargs
        )

    return [
        asset(
            "folds",
            partitions_def=store_actor_partitions,
            deps=[dg.AssetDep("store_warehouse", partition_mapping=BY_STORE)],
            kinds={"python", "parquet"},
        )(labeled_sessions),
        asset(
            "kappa",
            "folds",
            partitions_def=store_actor_partitions,
            deps=["labeled_sessions"],
            kinds={"python", "numpy", "parquet"},
            check_specs=[
                dg.AssetCheckSpec(name, asset="transition_kernels", blocking=True, description=text)
                for name, text in KERNEL_CHECKS.items()
            ],
        )(transition_kernels),
        asset(
            "temperature",
            "calibration",
            "max_prefix",
            partitions_def=store_partitions,
            deps=[
                dg.AssetDep("labeled_sessions", partition_mapping=BY_STORE),
                dg.AssetDep("transition_kernels", partition_mapping=BY_STORE),
                "store_warehouse",
            ],
            kinds={"python", "numpy", "parquet"},
            check_specs=[
                dg.AssetCheckSpec(name, asset="divergence_scores", blocking=True, description=text)
                for name, text in SCORE_CHECKS.items()
            ],
        )(divergence_scores),
        asset(
            "bootstrap_draws",
            "permutation_draws",
            "seed",
            partitions_def=store_partitions,
            deps=[
                "divergence_scores",
                "quote_detector",
                dg.AssetDep("labeled_sessions", partition_mapping=BY_STORE),
                dg.AssetDep("transition_kernels", partition_mapping=BY_STORE),
            ],
            kinds={"python", "scipy"},
        )(separability_report),
    ]
