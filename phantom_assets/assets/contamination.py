"""Contamination group: G(α) -- a store's real human sessions plus synthetic agent sessions.

The warehouse inputs are the store's slices of the `contamination_*` dbt marts
(`store_warehouse`); the maths and the lake files are in `phantom_assets.contamination`.
"""

import datetime as dt

import dagster as dg
import numpy as np
import polars as pl

from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    table_metadata,
)
from phantom_assets.assets.partitions import (
    BY_STORE,
    SAME_STORE,
    GridPartitions,
    store_alpha_keys,
)
from phantom_assets.assets.resources import StorageResource
from phantom_assets.assets.store_slices import read_store_slice
from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS, STORES
from phantom_assets.contamination import (
    AlphaHatParams,
    ContaminationParams,
    alpha_hat_report,
    calibrated_scorer,
    contaminate,
    demand_proxy,
    mean_f_by_alpha,
    mean_f_is_monotone,
    read_human_sessions,
    read_labeled_f,
    reference_agent_f,
    write_contaminated_dataset,
)
from phantom_assets.fingerprint import load_kernel_set, load_score_calibration
from phantom_assets.lake import Lake

CONTAMINATION_CODE = code_version_of(
    "phantom_assets.assets.contamination",
    "phantom_assets.contamination",
    "phantom_assets.fingerprint",
    "phantom_assets.constants",
)
MEAN_F_CHECK, ALPHA_HAT_CHECK = "mean_f_rises_with_alpha", "alpha_hat_ci_covers_alpha"
REFERENCE_STREAM, BOOTSTRAP_STREAM = 1_000, 1  # extra seed entropy of the α̂ random streams
# The store's slices of the `contamination_*` marts (dbt builds them; see their .yml).
PRODUCT_MIX_MART, AGENT_GAPS_MART = "contamination_product_mix", "contamination_agent_gaps"
EVENT_TIMES_MART, SPAN_MART = "contamination_event_times", "contamination_store_spans"


def partition_entropy(seed: int, store: str, alpha: float) -> list[int]:
    """Seed entropy of one store × α partition: the config seed plus a stable partition offset."""
    return [seed, STORES.index(store), round(100 * alpha)]


def reference_rng(seed: int, store: str) -> np.random.Generator:
    """Stream of a store's reference synthetic agents (shared by its α partitions)."""
    return np.random.default_rng([seed, STORES.index(store), REFERENCE_STREAM])


def _warehouse_inputs(lake: Lake, store: str) -> tuple[ContaminationParams, pl.DataFrame]:
    """Product mix, agent inter-event gaps and time span of `store`; per-session event times."""
    mix = (
        read_store_slice(lake, store, PRODUCT_MIX_MART)
        .select("product_id", pl.col("n_interactions").cast(pl.Float64).alias("weight"))
        .sort("product_id")
    )
    gaps = read_store_slice(lake, store, AGENT_GAPS_MART)["gap_s"].sort().to_numpy()
    span = read_store_slice(lake, store, SPAN_MART).select(
        pl.col("first_session_at").dt.epoch("ms").alias("origin_ms"), "window_s"
    )
    origin_ms, window_s = span.row(0) if span.height else (None, None)
    event_times = read_store_slice(lake, store, EVENT_TIMES_MART).select(
        "session_id", pl.col("event_times").alias("ts")
    )
    if mix.height == 0 or gaps.size == 0 or origin_ms is None:
        raise ValueError(
            f"store {store!r} has {mix.height} products and {gaps.size} agent inter-event gaps "
            "in its warehouse slice; G(α) needs both -- ingest labeled agent sessions with products"
        )
    params = ContaminationParams(
        product_mix=dict(zip(mix["product_id"], mix["weight"], strict=True)),
        agent_gaps_s=gaps,
        origin=dt.datetime.fromtimestamp(origin_ms / 1e3, dt.UTC),
        window_s=float(window_s),
    )
    return params, event_times


def contaminated_datasets(context: dg.AssetExecutionContext, storage: StorageResource):
    """G(α) of one store: its real human sessions plus round(α·n_H/(1−α)) synthetic agent sessions
    sampled from the agent kernel, one row per session with the store's selected f and `f_method`
    (`sessions.parquet`), the demand proxy per product (`demand.json`) and the debiased α̂ with
    its bootstrap CI (`alpha_hat.json`)."""
    store, alpha = store_alpha_keys(context)
    settings = storage.settings()
    cfg, lake = settings.contamination, settings.lake
    params, event_times = _warehouse_inputs(lake, store)
    humans = read_human_sessions(lake, store, event_times)
    human, agent = (load_kernel_set(lake, store, actor) for actor in ACTORS)
    calibration = load_score_calibration(lake, store)
    scorer = calibrated_scorer(human, agent, store, calibration)
    entropy = partition_entropy(cfg.seed, store, alpha)
    rng = np.random.default_rng(entropy)
    frame = contaminate(humans, agent.full.probs, alpha, params, rng, scorer)
    frame = frame.with_columns(f_method=pl.lit(calibration.method))
    reference = reference_agent_f(agent.full.probs, params, scorer, reference_rng(cfg.seed, store))
    report = alpha_hat_report(
        frame,
        humans,
        reference,
        read_labeled_f(lake, store),
        AlphaHatParams(n_boot=settings.fingerprint.bootstrap_draws),
        np.random.default_rng([*entropy, BOOTSTRAP_STREAM]),
    )
    paths = write_contaminated_dataset(
        frame, demand_proxy(frame), report, lake.contaminated_dir(store, alpha)
    )
    version, artifacts = artifact_version(*paths)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            frame,
            paths[0],
            **artifacts,
            **dataset_metadata(frame, report),
            seed=cfg.seed,
            seed_entropy=str(entropy),
            demand_path=dg.MetadataValue.path(str(paths[1])),
            alpha_hat_path=dg.MetadataValue.path(str(paths[2])),
        ),
    )
    yield mean_f_check(lake, store, settings.agents.alpha_grid, cfg.monotonic_tolerance)
    yield alpha_hat_check(report)


def build_contamination_assets(
    settings: Settings, grids: GridPartitions
) -> list[dg.AssetsDefinition]:
    """`contaminated_datasets` over store × α, versioned with the settings it computes with."""
    asset = declared_asset(
        settings=settings,
        code=CONTAMINATION_CODE,
        reads=("contamination", "agents.alpha_grid", "fingerprint.bootstrap_draws"),
        partitions_def=grids.store_alpha,
        deps=[
            dg.AssetDep("labeled_sessions", partition_mapping=SAME_STORE),
            dg.AssetDep("transition_kernels", partition_mapping=SAME_STORE),
            dg.AssetDep("divergence_scores", partition_mapping=BY_STORE),
            dg.AssetDep("store_warehouse", partition_mapping=BY_STORE),
        ],
        group_name="contamination",
        kinds={"python", "parquet"},
        check_specs=[
            dg.AssetCheckSpec(
                MEAN_F_CHECK,
                asset="contaminated_datasets",
                blocking=False,
                description="Mean f of the store's materialized α partitions never drops as α "
                "rises (within ContaminationConfig.monotonic_tolerance).",
            ),
            dg.AssetCheckSpec(
                ALPHA_HAT_CHECK,
                asset="contaminated_datasets",
                blocking=False,
                description="The α̂ CI holds the dataset's true share of agent sessions (can fail "
                "at the CI's nominal rate).",
            ),
        ],
    )
    return [asset(contaminated_datasets)]


def mean_f_check(
    lake: Lake, store: str, alphas: tuple[float, ...], tolerance: float
) -> dg.AssetCheckResult:
    """WARN when mean f drops as α rises over the store's materialized partitions of `alphas`."""
    observed = mean_f_by_alpha(lake, store, alphas)
    return dg.AssetCheckResult(
        check_name=MEAN_F_CHECK,
        passed=mean_f_is_monotone(observed, tolerance),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"mean_f_by_alpha": str(sorted(observed.items())), "tol": tolerance},
    )


def dataset_metadata(frame: pl.DataFrame, report: dict[str, object]) -> dict[str, object]:
    """Counts, mean f by source, the f used and α̂ with its CI, for the materialization."""
    by_source = dict(frame.group_by("source").agg(pl.col("f").mean()).rows())
    return {
        "alpha": report["alpha"],
        "n_real": int((frame["source"] == "real").sum()),
        "n_synthetic": int((frame["source"] == "synthetic").sum()),
        "mean_f": float(frame["f"].mean() or 0.0),
        "mean_f_real": by_source.get("real"),
        "mean_f_synthetic": by_source.get("synthetic"),
        "f_method": report["f_method"],
        "alpha_true_share": report["alpha_true_share"],
        "alpha_hat": report["alpha_hat"],
        "alpha_hat_unclipped": report["alpha_hat_unclipped"],
        "alpha_hat_ci_low": report["ci_low"],
        "alpha_hat_ci_high": report["ci_high"],
        "alpha_hat_level": report["level"],
        "alpha_hat_method": report["method"],
        "alpha_hat_oof_agents": report["alpha_hat_oof_agents"],
    }


def alpha_hat_check(report: dict[str, object]) -> dg.AssetCheckResult:
    """WARN when the α̂ CI misses the dataset's true share of agent sessions."""
    return dg.AssetCheckResult(
        check_name=ALPHA_HAT_CHECK,
        passed=bool(report["covers_true_share"]),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={k: report[k] for k in ("alpha_true_share", "alpha_hat", "ci_low", "ci_high")},
    )
