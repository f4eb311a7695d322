"""Jobs: one per partitioning of the graph, so each can be launched for one partition key."""

from __future__ import annotations

import dagster as dg

from phantom_assets.assets.partitions import (
    batch_partitions,
    store_actor_partitions,
    store_alpha_partitions,
    store_partitions,
    store_policy_partitions,
)

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
class_kernels_job = dg.define_asset_job(
    "class_kernels_job",
    selection=dg.AssetSelection.assets("labeled_sessions", "transition_kernels"),
    partitions_def=store_actor_partitions,
    description="Labeled sessions and transition kernels of one store × actor class.",
)
store_fingerprint_job = dg.define_asset_job(
    "store_fingerprint_job",
    selection=dg.AssetSelection.assets("divergence_scores", "separability_report"),
    partitions_def=store_partitions,
    description="Out-of-fold divergence scores and the separability report of one store.",
)

contamination_job = dg.define_asset_job(
    "contamination_job",
    selection=dg.AssetSelection.assets("contaminated_datasets"),
    partitions_def=store_alpha_partitions,
    description="Contaminated dataset G(α) and demand proxy of one store × α.",
)
market_job = dg.define_asset_job(
    "market_job",
    selection=dg.AssetSelection.assets("market_simulators"),
    partitions_def=store_partitions,
    description="Compile the pricing market simulator of one store and check its env.",
)
defense_job = dg.define_asset_job(
    "defense_job",
    selection=dg.AssetSelection.assets("trained_policies", "policy_evaluations"),
    partitions_def=store_policy_partitions,
    description="Train one policy of a store (tier, mode, training α) and evaluate it.",
)
benchmark_job = dg.define_asset_job(
    "benchmark_job",
    selection=dg.AssetSelection.assets("benchmark_curves"),
    partitions_def=store_partitions,
    description="Benchmark curves, paired differences and the revenue regression of one store.",
)

ALL_JOBS = [
    ingest_job,
    warehouse_job,
    class_kernels_job,
    store_fingerprint_job,
    contamination_job,
    market_job,
    defense_job,
    benchmark_job,
]
