"""Jobs: one per partitioning of the graph, so each can be launched for one partition key.

Partitioning is inferred from the selected assets (they share one partitions definition).
"""

from __future__ import annotations

import dagster as dg

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets("raw_events", "raw_events_quarantine"),
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
    description="Labeled sessions and transition kernels of one store × actor class.",
)
store_fingerprint_job = dg.define_asset_job(
    "store_fingerprint_job",
    selection=dg.AssetSelection.assets("divergence_scores", "separability_report"),
    description="Out-of-fold divergence scores and the separability report of one store.",
)

contamination_job = dg.define_asset_job(
    "contamination_job",
    selection=dg.AssetSelection.assets("contaminated_datasets"),
    description="Contaminated dataset G(α) and demand proxy of one store × α.",
)
market_job = dg.define_asset_job(
    "market_job",
    selection=dg.AssetSelection.assets("market_simulators", "coi_erosion", "market_oracle"),
    description="Compile the pricing market simulator of one store, check its env, and measure "
    "its COI erosion and best fixed actions (oracle).",
)
defense_job = dg.define_asset_job(
    "defense_job",
    selection=dg.AssetSelection.assets("trained_policies", "policy_evaluations"),
    description="Train one policy of a store (tier, mode, training α) and evaluate it.",
)
benchmark_job = dg.define_asset_job(
    "benchmark_job",
    selection=dg.AssetSelection.assets("benchmark_curves"),
    description="Benchmark curves, paired differences and the revenue regression of one store.",
)

audit_job = dg.define_asset_job(
    "audit_job",
    selection=dg.AssetSelection.assets("certification_report"),
    description="Certify (or refuse) a store's best defended policy, with its full lineage.",
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
    audit_job,
]
