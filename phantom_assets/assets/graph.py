"""The whole asset graph, built from one `Settings` (docs/architecture.md#asset-graph).

Every asset module exposes `build_<group>_assets(settings, grids)`; the settings decide the α and
policy grids and enter each asset's code version (only the sections that asset computes with).
"""

from __future__ import annotations

import dagster as dg

from phantom_assets.assets.audit import build_audit_assets
from phantom_assets.assets.contamination import build_contamination_assets
from phantom_assets.assets.dbt import build_warehouse_assets
from phantom_assets.assets.defense import build_defense_assets
from phantom_assets.assets.demand import build_demand_assets
from phantom_assets.assets.detector import build_detector_assets
from phantom_assets.assets.evaluation import build_evaluation_assets
from phantom_assets.assets.fingerprint import build_fingerprint_assets
from phantom_assets.assets.ingest import build_ingest_assets
from phantom_assets.assets.market import build_market_assets
from phantom_assets.assets.partitions import build_partitions
from phantom_assets.assets.prices import build_price_assets
from phantom_assets.assets.publish import build_publish_assets
from phantom_assets.assets.sensitivity import build_sensitivity_assets
from phantom_assets.assets.store_slices import build_store_slice_assets
from phantom_assets.config import Settings

BUILDERS = (
    build_ingest_assets,
    build_warehouse_assets,
    build_store_slice_assets,
    build_fingerprint_assets,
    build_contamination_assets,
    build_price_assets,
    build_demand_assets,
    build_market_assets,
    build_detector_assets,
    build_sensitivity_assets,
    build_defense_assets,
    build_evaluation_assets,
    build_publish_assets,
    build_audit_assets,
)


def build_assets(settings: Settings) -> list[dg.AssetsDefinition | dg.SourceAsset]:
    """Every asset (and observable source) of PHANTOM for `settings`, in graph order."""
    grids = build_partitions(settings)
    return [asset for build in BUILDERS for asset in build(settings, grids)]
