"""Fingerprint group: labeled session partitions (D_H, D_A per store) with cross-fitting folds."""


import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource

from orchestration.resources import StorageResource
from phantom_assets.assets.dbt import WAREHOUSE_POOL
from phantom_assets.assets.metadata import code_version_of, table_metadata
from phantom_assets.assets.partitions import store_actor_keys, store_actor_partitions
from phantom_assets.fingerprint import assign_folds
from phantom_assets.storage import partition_dir, write_parquet_atomic

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
    code_version=code_version_of("phantom_assets.assets.fingerprint", "phantom_assets.fingerprint"),
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
    digest = write_parquet_atomic(selected, path / "sessions.parquet")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(digest),
        metadata=table_metadata(
            selected,
            path / "sessions.parquet",
            n_unlabeled_in_store=n_unlabeled,
            folds=settings.fingerprint.folds,
            fold_sizes=str(selected["fold"].value_counts().sort("fold").rows()),
        ),
    )
