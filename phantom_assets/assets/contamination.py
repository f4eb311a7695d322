"""Contamination group: G(α) -- a store's real human sessions plus synthetic agent sessions.

Slightly over the 250-line guide: the warehouse queries and the α̂ report's file helpers live
beside the one asset that uses them; the maths is in `phantom_assets.contamination`.
"""

import datetime as dt
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
from dagster_duckdb import DuckDBResource
from duckdb import DuckDBPyConnection

from orchestration.resources import StorageResource
from phantom_assets.assets.dbt import WAREHOUSE_POOL
from phantom_assets.assets.fingerprint import (
    BY_STORE,
    labeled_sessions_path,
    load_kernel_set,
    load_score_calibration,
)
from phantom_assets.assets.metadata import artifact_version, code_version_of, table_metadata
from phantom_assets.assets.partitions import (
    ALPHA_GRID,
    alpha_key,
    store_alpha_keys,
    store_alpha_partitions,
)
from phantom_assets.constants import ACTORS, STORES
from phantom_assets.contamination import (
    AlphaHatParams,
    ContaminationParams,
    calibrated_scorer,
    contaminate,
    dataset_alpha_hat,
    demand_proxy,
    labeled_alpha_hat,
    mean_f_is_monotone,
    reference_agent_f,
)
from phantom_assets.storage import partition_dir, write_json_atomic, write_parquet_atomic

CONTAMINATION_CODE_VERSION = code_version_of(
    "phantom_assets.assets.contamination",
    "phantom_assets.contamination",
    "phantom_assets.fingerprint",
    "phantom_assets.constants",
)
SESSIONS_FILE, DEMAND_FILE, ALPHA_HAT_FILE = "sessions.parquet", "demand.json", "alpha_hat.json"
MEAN_F_CHECK, ALPHA_HAT_CHECK = "mean_f_rises_with_alpha", "alpha_hat_ci_covers_alpha"
DATASET_FILES = (SESSIONS_FILE, DEMAND_FILE, ALPHA_HAT_FILE)
REFERENCE_STREAM, BOOTSTRAP_STREAM = 1_000, 1  # extra seed entropy of the α̂ random streams
# store × alpha -> the same store's partitions of a store × actor asset (every actor).
SAME_STORE = dg.MultiPartitionMapping(
    {"store": dg.DimensionPartitionMapping("store", dg.IdentityPartitionMapping())}
)
# Interaction events only, deduplicated and ordered exactly like `sessions.trajectory`.
PRODUCT_MIX_QUERY = """
select product_id, count(*)::double as weight
from int_events_deduplicated
where store = $store and record_type = 'interaction' and product_id is not null
group by product_id
order by product_id
"""
AGENT_GAPS_QUERY = """
with agent_events as (
    select e.session_id, e.event_at, e.batch_id, e.source_row
    from int_events_deduplicated e join session_labels l using (session_id)
    where e.store = $store and e.record_type = 'interaction' and l.actor = 'agent'
)
select (epoch_ms(event_at) - epoch_ms(lag(event_at) over (
    partition by session_id order by event_at, batch_id, source_row))) / 1000.0 as gap_s
from agent_events
qualify gap_s is not null
order by gap_s
"""
EVENT_TIMES_QUERY = """
select session_id, list(event_at order by event_at, batch_id, source_row) as ts
from int_events_deduplicated
where store = $store and record_type = 'interaction'
group by session_id
"""
SPAN_QUERY = """
select epoch_ms(min(started_at)) as origin_ms,
       (epoch_ms(max(started_at)) - epoch_ms(min(started_at))) / 1000.0 as window_s
from sessions where store = $store
"""


def partition_entropy(seed: int, store: str, alpha: float) -> list[int]:
    """Seed entropy of one store × α partition: the config seed plus a stable partition offset."""
    return [seed, STORES.index(store), round(100 * alpha)]


def _warehouse_inputs(
    conn: DuckDBPyConnection, store: str
) -> tuple[ContaminationParams, pl.DataFrame]:
    """Product mix, agent inter-event gaps and time span of `store`; per-session event times."""
    args = {"store": store}
    mix = conn.execute(PRODUCT_MIX_QUERY, args).pl()
    gaps = conn.execute(AGENT_GAPS_QUERY, args).pl()["gap_s"].to_numpy()
    origin_ms, window_s = conn.execute(SPAN_QUERY, args).fetchone() or (None, None)
    event_times = conn.execute(EVENT_TIMES_QUERY, args).pl()
    if mix.height == 0 or gaps.size == 0 or origin_ms is None:
        raise ValueError(
            f"store {store!r} has {mix.height} products and {gaps.size} agent inter-event gaps "
            "in the warehouse; G(α) needs both -- ingest labeled agent sessions with products"
        )
    params = ContaminationParams(
        product_mix=dict(zip(mix["product_id"], mix["weight"], strict=True)),
        agent_gaps_s=gaps,
        origin=dt.datetime.fromtimestamp(origin_ms / 1e3, dt.UTC),
        window_s=float(window_s),
    )
    return params, event_times


def _human_sessions(lake: Path, store: str, event_times: pl.DataFrame) -> pl.DataFrame:
    """Real human sessions of `store` with their out-of-fold f and per-event times."""
    scores = pl.read_parquet(
        partition_dir(lake, "divergence_scores", store=store) / "scores.parquet"
    )
    return (
        pl.read_parquet(labeled_sessions_path(lake, store, "human"))
        .join(scores.select("session_id", "f"), on="session_id", how="left", maintain_order="left")
        .join(event_times, on="session_id", how="left", maintain_order="left")
    )


def _labeled_oof(lake: Path, store: str) -> pl.DataFrame:
    """Both classes' labeled sessions with their out-of-fold (selected) f and experiment ids."""
    scores = pl.read_parquet(
        partition_dir(lake, "divergence_scores", store=store) / "scores.parquet"
    ).select("session_id", "f")
    return pl.concat(
        [
            pl.read_parquet(labeled_sessions_path(lake, store, actor))
            .select("session_id", "actor", "experiment_id")
            .join(scores, on="session_id", how="left", maintain_order="left")
            for actor in ACTORS
        ]
    )


def alpha_hat_report(
    frame: pl.DataFrame,
    humans: pl.DataFrame,
    reference_f: np.ndarray,
    lake: Path,
    store: str,
    params: AlphaHatParams,
    rng: np.random.Generator,
) -> dict[str, object]:
    """`alpha_hat.json` of one dataset: α̂ (E[f|A] from the reference synthetic agents), the true
    session share, and the diagnostic α̂ with E[f|A] from the labeled agents' out-of-fold f."""
    estimate = dataset_alpha_hat(frame, humans, reference_f, params, rng)
    oof = labeled_alpha_hat(frame, _labeled_oof(lake, store), params, rng)
    share = float((frame["source"] == "synthetic").mean() or 0.0)
    return {
        **estimate.to_dict(),
        "alpha": float(frame["alpha"][0]) if frame.height else None,
        "alpha_true_share": share,
        "covers_true_share": estimate.covers(share),
        "f_method": frame["f_method"][0] if frame.height else None,
        "e_f_agent_source": "reference synthetic agents scored like the dataset",
        "n_reference_agents": int(reference_f.size),
        "alpha_hat_oof_agents": oof.alpha_hat_unclipped,
        "mean_f_agent_oof": oof.mean_f_agent,
    }


def mean_f_by_alpha(lake: Path, store: str) -> dict[float, float]:
    """Mean f of every materialized α partition of `store` in the grid (files on disk)."""
    paths = {
        alpha: partition_dir(lake, "contaminated_datasets", store=store, alpha=alpha_key(alpha))
        / SESSIONS_FILE
        for alpha in ALPHA_GRID
    }
    return {
        alpha: float(pl.scan_parquet(path).select(pl.col("f").mean()).collect().item())
        for alpha, path in paths.items()
        if path.exists()
    }


@dg.asset(
    partitions_def=store_alpha_partitions,
    deps=[
        dg.AssetDep("labeled_sessions", partition_mapping=SAME_STORE),
        dg.AssetDep("transition_kernels", partition_mapping=SAME_STORE),
        dg.AssetDep("divergence_scores", partition_mapping=BY_STORE),
        "int_events_deduplicated",
        "session_labels",
        "sessions",
    ],
    group_name="contamination",
    kinds={"python", "duckdb", "parquet"},
    pool=WAREHOUSE_POOL,
    code_version=CONTAMINATION_CODE_VERSION,
    check_specs=[
        dg.AssetCheckSpec(
            MEAN_F_CHECK,
            asset="contaminated_datasets",
            blocking=False,
            description="Mean f of the store's materialized α partitions never drops as α rises "
            "(within ContaminationConfig.monotonic_tolerance).",
        ),
        dg.AssetCheckSpec(
            ALPHA_HAT_CHECK,
            asset="contaminated_datasets",
            blocking=False,
            description="The α̂ CI holds the dataset's true share of agent sessions (can fail at "
            "the CI's nominal rate).",
        ),
    ],
)
def contaminated_datasets(
    context: dg.AssetExecutionContext, storage: StorageResource, warehouse: DuckDBResource
):
    """G(α) of one store: its real human sessions plus round(α·n_H/(1−α)) synthetic agent sessions
    sampled from the agent kernel, one row per session with the store's selected f and `f_method`
    (`sessions.parquet`), the demand proxy per product (`demand.json`) and the debiased α̂ with
    its bootstrap CI (`alpha_hat.json`)."""
    store, alpha = store_alpha_keys(context)
    settings = storage.settings()
    cfg, lake = settings.contamination, settings.lake_dir
    with warehouse.get_connection() as conn:
        params, event_times = _warehouse_inputs(conn, store)
    humans = _human_sessions(lake, store, event_times)
    human, agent = (load_kernel_set(lake, store, a, settings.fingerprint.kappa) for a in ACTORS)
    calibration = load_score_calibration(lake, store)
    scorer = calibrated_scorer(human, agent, store, calibration)
    entropy = partition_entropy(cfg.seed, store, alpha)
    rng = np.random.default_rng(entropy)
    frame = contaminate(humans, agent.full.probs, alpha, params, rng, scorer)
    frame = frame.with_columns(f_method=pl.lit(calibration.method))
    reference = reference_agent_f(agent.full.probs, params, scorer, reference_rng(cfg.seed, store))
    report = alpha_hat_report(frame, humans, reference, lake, store,
                              AlphaHatParams(n_boot=settings.fingerprint.bootstrap_draws),
                              np.random.default_rng([*entropy, BOOTSTRAP_STREAM]))  # fmt: skip
    folder = partition_dir(lake, "contaminated_datasets", store=store, alpha=alpha_key(alpha))
    write_parquet_atomic(frame, folder / SESSIONS_FILE)
    write_json_atomic(demand_proxy(frame), folder / DEMAND_FILE)
    write_json_atomic(report, folder / ALPHA_HAT_FILE)
    version, artifacts = artifact_version(*(folder / n for n in DATASET_FILES))
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            frame,
            folder / SESSIONS_FILE,
            **artifacts,
            **dataset_metadata(frame, report),
            seed=cfg.seed,
            seed_entropy=str(entropy),
            demand_path=dg.MetadataValue.path(str(folder / DEMAND_FILE)),
            alpha_hat_path=dg.MetadataValue.path(str(folder / ALPHA_HAT_FILE)),
        ),
    )
    observed = mean_f_by_alpha(lake, store)
    yield dg.AssetCheckResult(
        check_name=MEAN_F_CHECK,
        passed=mean_f_is_monotone(observed, cfg.monotonic_tolerance),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"mean_f_by_alpha": str(sorted(observed.items())), "tol": cfg.monotonic_tolerance},
    )
    yield alpha_hat_check(report)


def reference_rng(seed: int, store: str) -> np.random.Generator:
    """Stream of a store's reference synthetic agents (shared by its α partitions)."""
    return np.random.default_rng([seed, STORES.index(store), REFERENCE_STREAM])


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
