"""Warehouse group: the dbt-duckdb models (staging -> intermediate -> marts) and their tests."""

import json
import re
import shutil
from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster_dbt import (
    DagsterDbtTranslator,
    DbtCliInvocation,
    DbtCliResource,
    DbtProject,
    dbt_assets,
)
from dagster_dbt.errors import DagsterDbtManifestNotFoundError

from phantom_assets.assets.dbt_project import phantom_dbt_project
from phantom_assets.assets.declared import settings_version
from phantom_assets.assets.partitions import GridPartitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.constants import LEGACY_STORE, STORES

WAREHOUSE_POOL = "duckdb"
# What `DbtCliInvocation.stream()` yields: model outputs and test (check) results.
ModelEvent = dg.Output | dg.AssetMaterialization | dg.AssetCheckResult | dg.AssetObservation


def warehouse_stores(settings: Settings) -> list[str]:
    """The store values the warehouse accepts (the legacy store only when settings allow it)."""
    return [*STORES, LEGACY_STORE] if settings.accept_legacy_store else list(STORES)


def dbt_vars(settings: Settings) -> str:
    """The `--vars` that point dbt at this run's storage root and warehouse file."""
    return json.dumps(
        {
            "data_dir": str(settings.data_dir.resolve()),
            "warehouse_path": str(settings.warehouse_path.resolve()),
            "phantom_stores": warehouse_stores(settings),
        }
    )


class PhantomDbtTranslator(DagsterDbtTranslator):
    """Keys are bare names, so the `raw_events` source *is* the `raw_events` asset; code versions
    add the store vocabulary the models filter on to dbt's own SQL checksum."""

    def __init__(self, stores: list[str]) -> None:
        super().__init__()
        self.stores = stores

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        return dg.AssetKey(dbt_resource_props["name"])

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return "warehouse"

    def get_code_version(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        checksum = super().get_code_version(dbt_resource_props)
        return settings_version(checksum, {"stores": self.stores}) if checksum else None

    def get_asset_check_spec(
        self,
        asset_spec: dg.AssetSpec,
        manifest: Mapping[str, Any],
        unique_id: str,
        project: DbtProject | None,
    ) -> dg.AssetCheckSpec | None:
        spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
        if spec is None or spec.description:
            return spec
        return spec._replace(description=dbt_test_description(manifest["nodes"][unique_id]))


def _unquoted(jinja: str) -> str:
    """`ref('sessions')` -> `sessions`, `{{ var('phantom_stores') }}` -> `phantom_stores`."""
    return re.sub(r"^\W*\w+\('([^']+)'\)\W*$", r"\1", jinja)


def dbt_test_description(node: Mapping[str, Any]) -> str:
    """What a dbt data test checks, in words: its own description (singular tests describe
    themselves in `tests/_singular_tests.yml`), else one built from the generic test's kwargs."""
    if node.get("description"):
        return node["description"]
    generic = node.get("test_metadata") or {}
    kwargs, column = generic.get("kwargs", {}), f"`{node.get('column_name')}`"
    values = kwargs.get("values")
    allowed = (
        ", ".join(f"`{v}`" for v in values)
        if isinstance(values, list)
        else f"the values of the dbt var `{_unquoted(str(values))}`"
    )
    sentences = {
        "not_null": f"{column} is never null.",
        "unique": f"{column} is unique: one row per value.",
        "accepted_values": f"{column} is one of {allowed}.",
        "relationships": f"Every {column} exists in "
        f"`{_unquoted(str(kwargs.get('to')))}.{kwargs.get('field')}`.",
    }
    return sentences.get(generic.get("name"), f"dbt test `{node['name']}`.")


def with_table_metadata(invocation: DbtCliInvocation, event: ModelEvent) -> ModelEvent:
    """`event`, with `dagster/row_count` and `dagster/column_schema` (with the descriptions of the
    model's .yml) added when it is a model's (tables and views alike: ours are thin selects over
    the lake), queried through dbt's DuckDB adapter. Call it only after the dbt process has
    exited: DuckDB has one writer, so a metadata query while dbt still builds takes the file's
    lock and fails dbt's next model (dagster-dbt's `fetch_row_counts` queries from threads while
    dbt runs: it did, under load)."""
    adapter = invocation.adapter
    if not isinstance(event, dg.Output | dg.AssetMaterialization) or adapter is None:
        return event
    node = invocation.manifest["nodes"][event.metadata["unique_id"].value]
    relation = node["relation_name"]
    with adapter.connection_named(f"metadata_{node['unique_id']}"):
        _, counts = adapter.execute(f"select count(*) from {relation}", fetch=True)
        _, columns = adapter.execute(f"describe {relation}", fetch=True)
    described = {name: col.get("description") or None for name, col in node["columns"].items()}
    schema = dg.TableSchema(
        columns=[dg.TableColumn(row[0], str(row[1]), described.get(row[0])) for row in columns]
    )
    return event.with_metadata(
        {**event.metadata, "dagster/row_count": counts[0][0], "dagster/column_schema": schema}
    )


def warehouse_models(
    context: dg.AssetExecutionContext, dbt: DbtCliResource, storage: StorageResource
):
    """Build the warehouse (sessions, labels, marts) from all raw_events batches; run dbt tests.
    Every model reports its row count and column schema, read once dbt has finished (no column
    lineage: sqlglot cannot resolve the columns of the external parquet source)."""
    invocation = dbt.cli(["build", "--vars", dbt_vars(storage.settings())], context=context)
    try:
        events = list(invocation.stream())  # consumed to the end: dbt has exited
        for event in events:
            yield with_table_metadata(invocation, event)
    finally:
        release_warehouse_file(invocation)


def release_warehouse_file(invocation: DbtCliInvocation) -> None:
    """Close the read-only DuckDB handle the metadata queries opened in this process.

    dbt-duckdb keeps its handle open for the life of the process (`keep_open`). Left open, it
    would keep every writer out of warehouse.duckdb until the process ends: the next DuckDB
    asset of an in-process run, and any other process."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    if invocation.adapter is not None:
        invocation.adapter.cleanup_connections()
    DuckDBConnectionManager.close_all_connections()  # drops the environment, which closes it


def prepared_manifest(project: DbtProject) -> str:
    """The project's manifest; `dagster dev` re-parses the project first (models edit live)."""
    if project.preparer.using_dagster_dev() and shutil.which("dbt") is None:
        raise RuntimeError(  # dagster-dbt re-parses with the `dbt` on PATH
            f"`dagster dev` re-parses the dbt project {project.project_dir} with the `dbt` on "
            "PATH, and there is none: activate the virtualenv (`source .venv/bin/activate`) or "
            "start the UI with `make ui`"
        )
    project.prepare_if_dev()
    if not project.manifest_path.exists():
        raise DagsterDbtManifestNotFoundError(
            f"no dbt manifest at {project.manifest_path}: parse the project first (`make setup`, "
            f"or `dbt parse --project-dir {project.project_dir} --profiles-dir "
            f"{project.profiles_dir}`); `pip install .` ships the manifest that exists then"
        )
    return str(project.manifest_path)


def build_warehouse_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """Every dbt model (and its tests as checks), one `dbt build` for all of them."""
    assets = dbt_assets(
        manifest=prepared_manifest(phantom_dbt_project),
        project=phantom_dbt_project,
        dagster_dbt_translator=PhantomDbtTranslator(warehouse_stores(settings)),
        pool=WAREHOUSE_POOL,
    )
    return [assets(warehouse_models)]
