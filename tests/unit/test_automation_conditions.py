"""The automation conditions on a two-asset graph, where each tick's evaluation can be read whole
(the pipeline's own graph: tests/integration/test_automation.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

import dagster as dg

from orchestration.automation import condition_for

STORES = dg.StaticPartitionsDefinition(["hotel", "airline"])
_versions = count()


def _graph(child_group: str) -> list[dg.AssetsDefinition]:
    @dg.asset(
        partitions_def=STORES,
        group_name="fingerprint",
        automation_condition=condition_for("fingerprint"),
    )
    def scores() -> dg.MaterializeResult:
        return dg.MaterializeResult(data_version=dg.DataVersion(str(next(_versions))))

    @dg.asset(
        partitions_def=STORES,
        group_name=child_group,
        deps=[scores],
        automation_condition=condition_for(child_group),
    )
    def market() -> dg.MaterializeResult:
        return dg.MaterializeResult(data_version=dg.DataVersion("same"))

    return [scores, market]


def _requested(assets, instance, cursor, now) -> tuple[set[tuple[str, str]], object]:
    result = dg.evaluate_automation_conditions(assets, instance, cursor=cursor, evaluation_time=now)
    requested = {
        (record.key.to_user_string(), partition)
        for record in result.results
        for partition in result.get_requested_partitions(record.key)
    }
    return requested, result.cursor


def test_an_input_updated_in_the_same_run_does_not_request_the_asset_again():
    # Why: live, a store's scores and market ran in one run and the market then ran again alone,
    # for the scores' new version it had already read.
    assets = _graph("market")
    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    with dg.instance_for_test() as instance:
        for store in ("hotel", "airline"):
            assert dg.materialize(assets, partition_key=store, instance=instance).success
        quiet, cursor = _requested(assets, instance, None, now)
        assert not quiet
        # Both in one run, the scores with a new data version: nothing is left to do.
        assert dg.materialize(assets, partition_key="hotel", instance=instance).success
        again, cursor = _requested(assets, instance, cursor, now + timedelta(minutes=1))
        assert again == set()
        # The scores alone, with a new data version: the market follows, for that store only.
        assert dg.materialize(
            assets, selection=["scores"], partition_key="hotel", instance=instance
        ).success
        follows, _ = _requested(assets, instance, cursor, now + timedelta(minutes=2))
    assert follows == {("market", "hotel")}


def _diamond() -> list[dg.AssetsDefinition]:
    """sessions → scores → market ← prices: the market reads two branches of different depth."""

    def version() -> dg.MaterializeResult:
        return dg.MaterializeResult(data_version=dg.DataVersion(str(next(_versions))))

    def asset(name: str, group: str, deps: list[str]) -> dg.AssetsDefinition:
        return dg.asset(
            name=name,
            partitions_def=STORES,
            group_name=group,
            deps=deps,
            automation_condition=condition_for(group),
        )(version)

    return [
        asset("sessions", "fingerprint", []),
        asset("scores", "fingerprint", ["sessions"]),
        asset("prices", "market", []),
        asset("market", "market", ["scores", "prices"]),
    ]


def test_an_asset_waits_while_an_ancestor_two_levels_up_is_being_rebuilt():
    # Why: live, a store's market ran once after its prices changed while its sessions were still
    # being rebuilt, and again after the new sessions reached its scores.
    assets = _diamond()
    now = datetime(2026, 12, 6, 12, tzinfo=UTC)
    with dg.instance_for_test() as instance:
        assert dg.materialize(assets, partition_key="hotel", instance=instance).success
        quiet, cursor = _requested(assets, instance, None, now)
        assert not quiet
        # The sessions' run is under way when the prices change beside it.
        job = dg.Definitions(assets=assets).resolve_implicit_global_asset_job_def()
        sessions = dg.AssetKey("sessions")
        instance.create_run_for_job(
            job,
            asset_selection=frozenset({sessions}),
            tags={"dagster/partition": "hotel"},
            status=dg.DagsterRunStatus.STARTED,
        )
        assert dg.materialize(
            assets, selection=["prices"], partition_key="hotel", instance=instance
        ).success
        waiting, cursor = _requested(assets, instance, cursor, now + timedelta(minutes=1))
    assert waiting == set()
