"""Warehouse group: `store_warehouse[store]`, each store's slice of the marts, content-hashed.

The dbt models are unpartitioned, so every new batch gives every mart a new data version, for both
stores. The per-store assets depend on this slice instead: it writes the rows of its store in
every mart they read to parquet and hashes them, and a store whose rows did not change keeps its
data version -- so a new export for one store never reruns the other store's chain
(docs/architecture.md#automation). The per-store assets read these files, not the warehouse: only
the dbt models and this slice hold DuckDB's one-writer pool, so a store's sessions, scores,
prices and datasets never queue behind another run's warehouse connection.
"""

from pathlib import Path

import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource
from duckdb import DuckDBPyConnection

from phantom_assets.assets.dbt import WAREHOUSE_POOL
from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import artifact_version, code_version_of
from phantom_assets.assets.partitions import GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.lake import Lake
from phantom_assets.reads import record_asset_read
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

# Every mart a per-store asset reads (each has a `store` column).
STORE_MARTS = (
    "fingerprint_sessions",
    "contamination_product_mix",
    "contamination_agent_gaps",
    "contamination_event_times",
    "contamination_store_spans",
    "price_quote_events",
)
# All of a store's rows in a fixed order, so the same rows always give the same parquet bytes.
SLICE_ROWS_QUERY = "select * from {mart} where store = $store order by all"
SLICE_CODE = code_version_of("phantom_assets.assets.store_slices")


def store_warehouse(
    context: dg.AssetExecutionContext, storage: StorageResource, warehouse: DuckDBResource
) -> dg.MaterializeResult:
    """This store's rows of every mart the per-store assets read (one parquet file per mart), with
    each mart's row count and file digest (`digest.json`); its data version changes exactly when
    one of them does."""
    store, lake = context.partition_key, storage.settings().lake
    with warehouse.get_connection() as conn:
        slices = {mart: read_mart_rows(conn, mart, store) for mart in STORE_MARTS}
    digests = {
        mart: {
            "rows": frame.height,
            "digest": write_parquet_atomic(frame, lake.store_slice(store, mart)),
        }
        for mart, frame in slices.items()
    }
    path = lake.store_warehouse(store)
    write_json_atomic(digests, path)
    version, artifacts = artifact_version(path, *(lake.store_slice(store, m) for m in STORE_MARTS))
    return dg.MaterializeResult(
        data_version=version,
        metadata={**artifacts, **{f"rows_{mart}": d["rows"] for mart, d in digests.items()}},
    )


def read_mart_rows(conn: DuckDBPyConnection, mart: str, store: str) -> pl.DataFrame:
    """`store`'s rows of the warehouse mart `mart`, in a fixed order (a read of that asset)."""
    record_asset_read(mart)
    return conn.execute(SLICE_ROWS_QUERY.format(mart=mart), {"store": store}).pl()


def read_store_slice(lake: Lake, store: str, mart: str) -> pl.DataFrame:
    """`store`'s rows of `mart` as `store_warehouse[store]` wrote them.

    Raises:
        FileNotFoundError: that slice was never materialized (naming the file and the fix).
    """
    path: Path = lake.store_slice(store, mart)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: materialize store_warehouse[{store}] first "
            f"(`phantom run --select store_warehouse`)"
        )
    return pl.read_parquet(path)


def build_store_slice_assets(settings: Settings, grids: GridPartitions) -> list:
    """`store_warehouse[store]` (settings-free: it hashes what the warehouse holds)."""
    asset = declared_asset(
        settings=settings,
        code=SLICE_CODE,
        partitions_def=store_partitions,
        deps=list(STORE_MARTS),
        group_name="warehouse",
        kinds={"duckdb", "parquet"},
        pool=WAREHOUSE_POOL,
    )
    return [asset(store_warehouse)]
