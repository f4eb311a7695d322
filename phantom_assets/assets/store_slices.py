"""Warehouse group: `store_warehouse[store]`, each store's slice of the marts, content-hashed.

The dbt models are unpartitioned, so every new batch gives every mart a new data version, for both
stores. The per-store assets depend on this slice instead: it re-hashes the rows of its store in
every mart they read, and a store whose rows did not change keeps its data version -- so a new
export for one store never reruns the other store's chain (docs/architecture.md#automation).
"""

import dagster as dg
from dagster_duckdb import DuckDBResource

from phantom_assets.assets.dbt import WAREHOUSE_POOL
from phantom_assets.assets.metadata import artifact_version, code_version_of
from phantom_assets.assets.partitions import GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.storage import write_json_atomic

# Every mart a per-store asset reads (each has a `store` column).
STORE_MARTS = (
    "fingerprint_sessions",
    "contamination_product_mix",
    "contamination_agent_gaps",
    "contamination_event_times",
    "contamination_store_spans",
    "price_quote_events",
)
# Order-independent digest of a store's rows: md5 of the sorted md5s of each row's text.
SLICE_DIGEST_QUERY = """
select count(*), coalesce(md5(string_agg(row_md5, '' order by row_md5)), '')
from (select md5(cast(t as varchar)) as row_md5 from (select * from {mart} where store = $store) t)
"""
SLICE_CODE = code_version_of("phantom_assets.assets.store_slices")


def store_warehouse(
    context: dg.AssetExecutionContext, storage: StorageResource, warehouse: DuckDBResource
) -> dg.MaterializeResult:
    """Row count and content digest of this store's rows in every mart the per-store assets read;
    its data version changes exactly when one of them does."""
    store, settings = context.partition_key, storage.settings()
    with warehouse.get_connection() as conn:
        digests = {
            mart: dict(zip(("rows", "md5"),
                           conn.execute(SLICE_DIGEST_QUERY.format(mart=mart), {"store": store})
                           .fetchone(), strict=True))
            for mart in STORE_MARTS
        }  # fmt: skip
    path = settings.lake.store_warehouse(store)
    write_json_atomic(digests, path)
    version, artifacts = artifact_version(path)
    return dg.MaterializeResult(
        data_version=version,
        metadata={**artifacts, **{f"rows_{mart}": d["rows"] for mart, d in digests.items()}},
    )


def build_store_slice_assets(settings: Settings, grids: GridPartitions) -> list:
    """`store_warehouse[store]` (settings-free: it hashes what the warehouse holds)."""
    asset = dg.asset(
        partitions_def=store_partitions,
        deps=list(STORE_MARTS),
        group_name="warehouse",
        kinds={"duckdb", "json"},
        pool=WAREHOUSE_POOL,
        code_version=SLICE_CODE,
    )
    return [asset(store_warehouse)]
