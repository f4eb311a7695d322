"""Warehouse group: the dbt-duckdb models (staging -> intermediate -> marts) and their tests."""

import json
from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from orchestration.resources import StorageResource
from phantom_assets.assets.dbt_project import phantom_dbt_project
from phantom_assets.constants import LEGACY_STORE, STORES

WAREHOUSE_POOL = "duckdb"


class PhantomDbtTranslator(DagsterDbtTranslator):
    """Keys are bare names, so the `raw_events` source *is* the `raw_events` asset."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        return dg.AssetKey(dbt_resource_props["name"])

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return "warehouse"


def dbt_vars(storage: StorageResource) -> str:
    """The `--vars` that point dbt at this run's storage root and warehouse file."""
    settings = storage.settings()
    stores = [*STORES, LEGACY_STORE] if settings.accept_legacy_store else list(STORES)
    return json.dumps(
        {
            "data_dir": str(settings.data_dir.resolve()),
            "warehouse_path": str(settings.warehouse_path.resolve()),
            "phantom_stores": stores,
        }
    )


@dbt_assets(
    manifest=phantom_dbt_project.manifest_path,
    project=phantom_dbt_project,
    dagster_dbt_translator=PhantomDbtTranslator(),
    pool=WAREHOUSE_POOL,
)
def warehouse_models(
    context: dg.AssetExecutionContext, dbt: DbtCliResource, storage: StorageResource
):
    """Build the warehouse (sessions, labels, marts) from all raw_events batches; run dbt tests."""
    yield from dbt.cli(["build", "--vars", dbt_vars(storage)], context=context).stream()
