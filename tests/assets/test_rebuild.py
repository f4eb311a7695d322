"""No needless work: rebuilding unchanged inputs with unchanged code reproduces every data version,
and nothing downstream turns stale (DESIGN §6)."""

import dagster as dg
import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver  # no public equivalent

from orchestration.planning import plan_stages
from orchestration.resources import build_resources
from orchestration.runner import run_pipeline
from phantom_assets.simulate import simulate_to_incoming
from tests.pipeline_helpers import DEMO_DEFS as defs
from tests.pipeline_helpers import simulation_params, tiny_settings

SELECTION = "*separability_report"


def _data_versions(instance: dg.DagsterInstance) -> dict[tuple[str, str | None], str]:
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
def rebuilt(tmp_path_factory: pytest.TempPathFactory):
    settings = tiny_settings(tmp_path_factory.mktemp("rebuild") / "data")
    simulate_to_incoming(simulation_params(settings), settings.incoming_dir)
    with dg.instance_for_test() as instance:
        resources = build_resources(settings)
        assert not run_pipeline(settings, instance, resources=resources, selection=SELECTION).failed
        first = _data_versions(instance)
        assert not run_pipeline(settings, instance, resources=resources, selection=SELECTION).failed
        yield instance, first, _data_versions(instance)


def test_second_materialization_without_change_keeps_every_data_version(rebuilt):
    _, first, second = rebuilt
    assert len(first) > 10
    assert second == first


def test_after_a_rebuild_without_change_nothing_is_stale(rebuilt):
    instance, first, _ = rebuilt
    resolver = get_stale_status_resolver(instance, list(defs.assets or []))
    stale = [
        (asset, partition)
        for asset, partition in first
        if resolver.get_status(dg.AssetKey(asset), partition) != StaleStatus.FRESH
    ]
    assert stale == []
