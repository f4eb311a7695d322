"""Jobs: one per partitioning of the graph, so each can be launched for one partition key."""

from __future__ import annotations

import dagster as dg

from phantom_assets.assets.partitions import batch_partitions, store_actor_partitions

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets("raw_events", "raw_events_quarantine"),
    partitions_def=batch_partitions,
    description="Parse one batch file into canonical events and its quarantine.",
)
warehouse_job = dg.define_asset_job(
    "warehouse_job",
    selection=dg.AssetSelection.groups("warehouse"),
    description="Rebuild the dbt warehouse (sessions, labels, marts) and run its data tests.",
)
labeled_sessions_job = dg.define_asset_job(
    "labeled_sessions_job",
    selection=dg.AssetSelection.assets("labeled_sessions"),
    partitions_def=store_actor_partitions,
    description="Split the warehouse's labeled sessions into store × actor partitions.",
)

ALL_JOBS = [ingest_job, warehouse_job, labeled_sessions_job]
