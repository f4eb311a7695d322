"""The dbt warehouse assets in process: metadata of every model, and the DuckDB file let go."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import duckdb

from orchestration.resources import build_resources
from orchestration.runner import run_pipeline
from phantom_assets.assets.dbt import build_warehouse_assets
from phantom_assets.assets.partitions import build_partitions
from phantom_assets.config import Settings
from phantom_assets.simulate import simulate_to_incoming

OPEN_FOR_WRITING = "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('select 1')"


def test_warehouse_models_report_row_counts_and_schemas_then_release_the_file(settings: Settings):
    simulate_to_incoming(settings, settings.incoming_dir)
    resources = build_resources(settings)
    models = build_warehouse_assets(settings, build_partitions(settings))
    with dg.instance_for_test() as instance:
        assert not run_pipeline(settings, instance, "raw_events").failed
        result = dg.materialize(
            models,
            instance=instance,
            resources={"dbt": resources["dbt"], "storage": resources["storage"]},
            selection=dg.AssetSelection.groups("warehouse"),
        )
    assert result.success
    materializations = result.get_asset_materialization_events()
    assert len(materializations) == len(models[0].keys)
    for event in materializations:  # views too, which dagster-dbt alone does not count
        metadata = event.materialization.metadata
        assert metadata["dagster/row_count"].value >= 0, event.asset_key
        assert metadata["dagster/column_schema"].value.columns, event.asset_key
    # DuckDB allows one writer: no handle of the metadata queries may outlive the step.
    with duckdb.connect(str(settings.warehouse_path)) as conn:
        assert conn.execute("select count(*) from sessions").fetchone()[0] > 0
    other = [sys.executable, "-c", OPEN_FOR_WRITING, str(settings.warehouse_path)]
    assert subprocess.run(other, capture_output=True).returncode == 0
