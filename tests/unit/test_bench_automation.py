"""`phantom bench automation`'s parts that run without a daemon: the export it drops, what it
builds first, and how it counts materializations (the whole bench runs `dagster dev`: its figures
are in the README)."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest

from orchestration.bench_automation import (
    CHEAP_SELECTION,
    _assets_of,
    _drop_one_store_export,
    _materializations_since,
    _trains,
    bench_automation,
)
from orchestration.definitions import build_definitions
from phantom_assets.config import Settings
from phantom_assets.schema import parse_batch


def test_the_dropped_export_is_new_and_holds_one_store_only(settings: Settings):
    path = _drop_one_store_export(settings, "hotel")
    assert path.parent == settings.incoming_dir / "demo"  # beside the demo's files
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no staging leftovers
    assert not list(settings.data_dir.glob("tmp*"))
    events = parse_batch(path, "b1").events
    assert events.height > 0
    assert set(events["store"]) == {"hotel"}
    again = _drop_one_store_export(settings, "airline")
    assert set(parse_batch(again, "b2").events["store"]) == {"airline"}


def test_the_bench_builds_what_the_automation_rebuilds_eagerly_and_no_training(
    settings: Settings,
):
    defs = build_definitions(settings)
    selection = dg.AssetSelection.from_string(CHEAP_SELECTION)
    built = {key.to_user_string() for key in selection.resolve(defs.resolve_asset_graph())}
    assert {"stg_events", "store_warehouse", "transition_kernels", "market_oracle"} <= built
    assert not built & {"trained_policies", "policy_evaluations", "certification_report"}


def test_materializations_since_counts_each_partition_and_ignores_earlier_ones():
    @dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]))
    def thing() -> None:
        return None

    with dg.instance_for_test() as instance:
        dg.materialize([thing], partition_key="a", instance=instance)
        since = time.time()
        for key in ("a", "b", "a"):
            dg.materialize([thing], partition_key=key, instance=instance)
        made = _materializations_since(instance, since)
    assert {node: len(times) for node, times in made.items()} == {
        ("thing", "a"): 2,
        ("thing", "b"): 1,
    }
    assert made[("thing", "a")] == sorted(made[("thing", "a")])


def test_the_bench_refuses_an_unknown_store(settings: Settings, tmp_path: Path):
    with pytest.raises(ValueError, match="unknown store 'casino'"):
        bench_automation(settings, "casino", 60)


def test_runs_are_named_by_their_assets_and_training_runs_are_told_apart():
    def run(job: str, *assets: str) -> dg.DagsterRun:
        return dg.DagsterRun(job_name=job, asset_selection=frozenset(map(dg.AssetKey, assets)))

    kernels = run("__ASSET_JOB", "transition_kernels", "labeled_sessions")
    training = run("__ASSET_JOB", "trained_policies")
    ingest = run("ingest_job")
    assert _assets_of(kernels) == "labeled_sessions+transition_kernels"
    assert _assets_of(ingest) == "ingest_job"
    assert [_trains(r) for r in (kernels, training, ingest)] == [False, True, False]
