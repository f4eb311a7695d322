"""Fingerprint group: labeled sessions, transition kernels, divergence scores, separability.

Longer than the 250-line guide for asset modules because it holds four assets of one area with
their checks; every body still only loads, calls the pure `phantom_assets.fingerprint` and writes.
"""

import json
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
from dagster_duckdb import DuckDBResource

from orchestration.resources import StorageResource
from phantom_assets.assets.dbt import WAREHOUSE_POOL
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import (
    store_actor_keys,
    store_actor_partitions,
    store_partitions,
)
from phantom_assets.constants import ACTORS, MIN_EVENTS_FOR_KERNEL
from phantom_assets.fingerprint import (
    SESSION_SCHEMA,
    KernelSet,
    SeparabilityParams,
    assign_folds,
    fit_class_kernels,
    kernel_checks,
    kernel_frame,
    kernel_from_frame,
    plot_gap_histograms,
    plot_kernel_heatmap,
    plot_prefix_curve,
    plot_roc,
    prefix_scores,
    score_sessions,
)
from phantom_assets.fingerprint import separability_report as separability_report_of
from phantom_assets.fingerprint.calibration import ScoreCalibration, fit_score_calibration
from phantom_assets.storage import (
    partition_dir,
    write_json_atomic,
    write_parquet_atomic,
)

FINGERPRINT_CODE_VERSION = code_version_of(
    "phantom_assets.assets.fingerprint", "phantom_assets.fingerprint", "phantom_assets.constants"
)
BY_STORE = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="store")
KERNEL_FILE, FOLD_KERNELS_FILE = "kernel.parquet", "fold_kernels.parquet"
KERNEL_CHECKS = ("rows_sum_to_one", "no_negative_entries", "counts_match_transitions")
LABELED_SESSIONS_QUERY = """
select s.session_id, s.store, l.actor, l.label_source, s.experiment_id, s.n_events,
       s.trajectory, s.product_ids, s.started_at
from sessions s join session_labels l using (session_id)
where s.store = $store
order by s.session_id
"""


@dg.asset(
    partitions_def=store_actor_partitions,
    deps=["sessions", "session_labels"],
    group_name="fingerprint",
    kinds={"python", "duckdb", "parquet"},
    pool=WAREHOUSE_POOL,
    code_version=FINGERPRINT_CODE_VERSION,
)
def labeled_sessions(
    context: dg.AssetExecutionContext, storage: StorageResource, warehouse: DuckDBResource
) -> dg.MaterializeResult:
    """Labeled sessions of one store and actor class, each with a deterministic fold id.

    Folds hash the experiment id (one subject's sessions share a fold, so cross-fitting never
    scores a session with a kernel that saw the same subject); unlabeled sessions are excluded
    here and counted, and are scored later against the full kernels.
    """
    store, actor = store_actor_keys(context)
    settings = storage.settings()
    with warehouse.get_connection() as conn:
        sessions = conn.execute(LABELED_SESSIONS_QUERY, {"store": store}).pl()
    n_unlabeled = sessions.filter(pl.col("actor") == "unknown").height
    selected = sessions.filter(pl.col("actor") == actor)
    group = selected["experiment_id"].fill_null(selected["session_id"])
    selected = selected.with_columns(
        fold=pl.Series(assign_folds(group, settings.fingerprint.folds), dtype=pl.Int64)
    )
    path = partition_dir(settings.lake_dir, "labeled_sessions", store=store, actor=actor)
    write_parquet_atomic(selected, path / "sessions.parquet")
    version, artifacts = artifact_version(path / "sessions.parquet")
    return dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            selected,
            path / "sessions.parquet",
            **artifacts,
            n_unlabeled_in_store=n_unlabeled,
            folds=settings.fingerprint.folds,
            fold_sizes=str(selected["fold"].value_counts().sort("fold").rows()),
        ),
    )


def labeled_sessions_path(lake: Path, store: str, actor: str) -> Path:
    return partition_dir(lake, "labeled_sessions", store=store, actor=actor) / "sessions.parquet"


def read_labeled_sessions(lake: Path, store: str, *extra: str) -> pl.DataFrame:
    """Both classes' labeled sessions of `store` in the scoring schema (plus `extra` columns)."""
    return pl.concat(
        [
            pl.read_parquet(labeled_sessions_path(lake, store, actor)).select(
                *SESSION_SCHEMA, *extra
            )
            for actor in ACTORS
        ]
    ).cast(SESSION_SCHEMA)


def load_kernel_set(lake: Path, store: str, actor: str, kappa: float) -> KernelSet:
    folder = partition_dir(lake, "transition_kernels", store=store, actor=actor)
    folds = pl.read_parquet(folder / FOLD_KERNELS_FILE).partition_by("fold", maintain_order=True)
    return KernelSet(
        full=kernel_from_frame(pl.read_parquet(folder / KERNEL_FILE), kappa=kappa),
        folds=tuple(kernel_from_frame(frame, kappa=kappa) for frame in folds),
    )


@dg.asset(
    partitions_def=store_actor_partitions,
    deps=["labeled_sessions"],
    group_name="fingerprint",
    kinds={"python", "numpy", "parquet"},
    code_version=FINGERPRINT_CODE_VERSION,
    check_specs=[
        dg.AssetCheckSpec(name, asset="transition_kernels", blocking=True) for name in KERNEL_CHECKS
    ],
)
def transition_kernels(context: dg.AssetExecutionContext, storage: StorageResource):
    """Pooled MLE Markov kernel of one store × actor class (rows = sources), with counts, plus
    one kernel per fold fitted without that fold (for out-of-fold scoring)."""
    store, actor = store_actor_keys(context)
    settings = storage.settings()
    cfg = settings.fingerprint
    sessions = pl.read_parquet(labeled_sessions_path(settings.lake_dir, store, actor))
    kernels = fit_class_kernels(sessions, actor, kappa=cfg.kappa, k=cfg.folds)
    eligible = sessions.filter(pl.col("n_events") >= MIN_EVENTS_FOR_KERNEL)
    n_transitions = int((eligible["n_events"] + 1).sum() or 0)
    folder = partition_dir(settings.lake_dir, "transition_kernels", store=store, actor=actor)
    full = kernel_frame(kernels.full)
    folds = pl.concat([kernel_frame(k, fold=i) for i, k in enumerate(kernels.folds)])
    write_parquet_atomic(full, folder / KERNEL_FILE)
    write_parquet_atomic(folds, folder / FOLD_KERNELS_FILE)
    version, artifacts = artifact_version(folder / KERNEL_FILE, folder / FOLD_KERNELS_FILE)
    figure = plot_kernel_heatmap(kernels.full, title=f"{store} / {actor} kernel")
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            full,
            folder / KERNEL_FILE,
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
    checks = [kernel_checks(k, n_transitions) for k in (kernels.full, *kernels.folds)]
    for name in KERNEL_CHECKS:
        # Fold kernels see fewer transitions by design; only the full kernel's counts must match.
        passed = (
            checks[0][name] if name == "counts_match_transitions" else all(c[name] for c in checks)
        )
        yield dg.AssetCheckResult(check_name=name, passed=bool(passed))


CALIBRATION_FILE = "calibration.json"


def score_calibration_of(scores: pl.DataFrame, method: str, temperature: float) -> ScoreCalibration:
    """The store's f selection with the logistic fit on every labeled out-of-fold gap."""
    return fit_score_calibration(
        scores["gap"].to_numpy(),
        (scores["actor"] == ACTORS[1]).to_numpy(),
        scores["actor"].is_in(list(ACTORS)).to_numpy(),
        method,
        temperature,
    )


def load_score_calibration(lake: Path, store: str) -> ScoreCalibration:
    """The `calibration.json` written beside a store's divergence scores."""
    path = partition_dir(lake, "divergence_scores", store=store) / CALIBRATION_FILE
    return ScoreCalibration.from_dict(json.loads(path.read_text()))


UNLABELED_SESSIONS_QUERY = """
select s.session_id, s.store, l.actor, s.n_events, s.trajectory
from sessions s join session_labels l using (session_id)
where s.store = $store and l.actor = 'unknown'
order by s.session_id
"""


@dg.asset(
    partitions_def=store_partitions,
    deps=[
        dg.AssetDep("labeled_sessions", partition_mapping=BY_STORE),
        dg.AssetDep("transition_kernels", partition_mapping=BY_STORE),
        "sessions",
    ],
    group_name="fingerprint",
    kinds={"python", "numpy", "parquet"},
    pool=WAREHOUSE_POOL,
    code_version=FINGERPRINT_CODE_VERSION,
    check_specs=[
        dg.AssetCheckSpec("f_in_unit_interval", asset="divergence_scores", blocking=True),
        dg.AssetCheckSpec("every_session_scored", asset="divergence_scores", blocking=True),
    ],
)
def divergence_scores(
    context: dg.AssetExecutionContext, storage: StorageResource, warehouse: DuckDBResource
):
    """Δ_H, Δ_A, gap and agent probability f for every session of a store. Labeled sessions are
    scored with the kernels fitted without their fold; unlabeled ones with the full kernels. `f` is
    the probability `fingerprint.calibration` selects (both are kept); `calibration.json` holds the
    choice and the logistic fit on all labeled sessions, `prefix_scores.parquet` f on prefixes."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.fingerprint, settings.lake_dir
    with warehouse.get_connection() as conn:
        unlabeled = conn.execute(UNLABELED_SESSIONS_QUERY, {"store": store}).pl()
    sessions = pl.concat(
        [
            read_labeled_sessions(lake, store),
            unlabeled.with_columns(fold=pl.lit(-1, pl.Int64)).select(list(SESSION_SCHEMA)),
        ]
    ).cast(SESSION_SCHEMA)
    human, agent = (load_kernel_set(lake, store, actor, cfg.kappa) for actor in ACTORS)
    scores = score_sessions(sessions, human, agent, cfg.temperature, calibration=cfg.calibration)
    calibration = score_calibration_of(scores, cfg.calibration, cfg.temperature)
    prefix = prefix_scores(sessions, human, agent, cfg.temperature, cfg.max_prefix)
    folder = partition_dir(lake, "divergence_scores", store=store)
    write_parquet_atomic(scores, folder / "scores.parquet")
    write_parquet_atomic(prefix, folder / "prefix_scores.parquet")
    write_json_atomic(calibration.to_dict(), folder / CALIBRATION_FILE)
    version, artifacts = artifact_version(
        folder / "scores.parquet", folder / "prefix_scores.parquet", folder / CALIBRATION_FILE
    )
    f_ok = scores["f"].drop_nans().is_between(0.0, 1.0).all()
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            scores,
            folder / "scores.parquet",
            **artifacts,
            n_unlabeled=unlabeled.height,
            temperature=cfg.temperature,
            calibration=cfg.calibration,
            f_method=calibration.method,
            logistic_coef=str(calibration.coef),
            mean_f_by_actor=str(
                scores.group_by("actor").agg(pl.col("f").mean()).sort("actor").rows()
            ),
        ),
    )
    yield dg.AssetCheckResult(check_name="f_in_unit_interval", passed=bool(f_ok))
    yield dg.AssetCheckResult(
        check_name="every_session_scored",
        passed=scores.height == sessions.height
        and scores["session_id"].n_unique() == scores.height,
        metadata={"n_sessions": sessions.height, "n_scores": scores.height},
    )


@dg.asset(
    partitions_def=store_partitions,
    deps=["divergence_scores", dg.AssetDep("labeled_sessions", partition_mapping=BY_STORE)],
    group_name="fingerprint",
    kinds={"python", "scipy"},
    code_version=FINGERPRINT_CODE_VERSION,
)
def separability_report(context: dg.AssetExecutionContext, storage: StorageResource):
    """How well the out-of-fold gap separates agents from humans in one store: AUC with a refit
    experiment-cluster bootstrap CI, the experiment-level refit permutation p (one session per
    experiment), descriptive Mann–Whitney U and p, kernel divergence with its experiment-level
    permutation p and the accuracy/AUC by prefix length (`report.json` + plots)."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.fingerprint, settings.lake_dir
    folder = partition_dir(lake, "divergence_scores", store=store)
    scores = pl.read_parquet(folder / "scores.parquet")
    prefix = pl.read_parquet(folder / "prefix_scores.parquet")
    sessions = read_labeled_sessions(lake, store, "experiment_id")
    params = SeparabilityParams(
        n_bootstrap=cfg.bootstrap_draws,
        n_permutations=cfg.permutation_draws,
        kappa=cfg.kappa,
        folds=cfg.folds,
    )
    rng = np.random.default_rng(cfg.seed)
    report = separability_report_of(
        scores, rng=rng, params=params, sessions=sessions, prefix=prefix
    )
    out = partition_dir(lake, "separability_report", store=store)
    payload = report.to_dict()
    write_json_atomic(payload, out / "report.json")
    version, artifacts = artifact_version(out / "report.json")
    plots = settings.reports_dir / "separability_report"
    labeled = scores.filter(pl.col("actor").is_in(list(ACTORS)))
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            "path": dg.MetadataValue.path(str(out / "report.json")),
            "seed": cfg.seed,
            **artifacts,
            **{k: payload[k] for k in REPORT_HEADLINE},
            "gap_histograms": figure_markdown(
                plot_gap_histograms(labeled), plots / f"{store}_gaps.png", "Gap by class"
            ),
            "roc": figure_markdown(plot_roc(labeled), plots / f"{store}_roc.png", "ROC"),
            "prefix_curve": figure_markdown(
                plot_prefix_curve(report.prefix_curve),
                plots / f"{store}_prefix.png",
                "Accuracy / AUC by prefix length",
            ),
        },
    )


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
