"""No needless work: rebuilding unchanged inputs with unchanged code reproduces every data version,
and nothing downstream turns stale (docs/architecture.md#automation). The first build is the
session's `phantom run`; the rebuild runs in process on a copy of it."""

import dagster as dg
import pytest

from orchestration.definitions import build_definitions
from orchestration.planning import plan_stages
from orchestration.resources import build_resources
from orchestration.runner import run_pipeline
from phantom_assets.assets.dagster_internals import StaleStatus, stale_status_resolver
from tests.built_pipeline import BuiltPipeline

SELECTION = "*separability_report"


def _data_versions(
    instance: dg.DagsterInstance, defs: dg.Definitions
) -> dict[tuple[str, str | None], str]:
    versions = {}
    for stage in plan_stages(defs, SELECTION):
        for key in stage.keys:
            partitions = instance.get_materialized_partitions(key) or {None}
            for partition in partitions:
                record = instance.fetch_materializations(
                    dg.AssetRecordsFilter(
                        asset_key=key, asset_partitions=[partition] if partition else None
                    ),
                    limit=1,
                ).records[0]
                tags = record.event_log_entry.dagster_event.event_specific_data.materialization.tags
                versions[(key.to_user_string(), partition)] = tags["dagster/data_version"]
    return versions


@pytest.fixture(scope="module")
def rebuilt(built_pipeline: BuiltPipeline, tmp_path_factory: pytest.TempPathFactory):
    copy = built_pipeline.copy_to(tmp_path_factory.mktemp("rebuild"))
    defs = build_definitions(copy.settings)
    with copy.instance() as instance:
        first = _data_versions(instance, defs)
        resources = build_resources(copy.settings)
        assert not run_pipeline(
            copy.settings, instance, resources=resources, selection=SELECTION
        ).failed
        yield instance, defs, first, _data_versions(instance, defs)


def test_second_materialization_without_change_keeps_every_data_version(rebuilt):
    _, _, first, second = rebuilt
    assert len(first) > 10
    assert second == first


def test_after_a_rebuild_without_change_nothing_is_stale(rebuilt):
    instance, defs, first, _ = rebuilt
    resolver = stale_status_resolver(instance, list(defs.assets or []))
    stale = [
        (asset, partition)
        for asset, partition in first
        if resolver.get_status(dg.AssetKey(asset), partition) != StaleStatus.FRESH
    ]
    assert stale == []
