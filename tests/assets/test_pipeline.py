"""The main job on tiny simulated data: ingest -> dbt warehouse -> labeled partitions (the
session's built pipeline), re-ingesting, and an unreadable batch file."""

from __future__ import annotations

import shutil

import dagster as dg
import duckdb
import polars as pl
import pytest

from orchestration.runner import run_pipeline
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.config import Settings
from phantom_assets.simulate import simulate_to_incoming
from tests.built_pipeline import BuiltPipeline
from tests.pipeline_helpers import simulation_params


@pytest.fixture
def simulated(settings: Settings) -> Settings:
    simulate_to_incoming(simulation_params(settings), settings.incoming_dir)
    return settings


def _latest(instance: dg.DagsterInstance, key: str, partition: str | None = None):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(key), asset_partitions=[partition] if partition else None
        ),
        limit=1,
    ).records
    return records[0].asset_materialization


def test_pipeline_builds_raw_events_warehouse_and_labeled_sessions(built_pipeline: BuiltPipeline):
    settings = built_pipeline.settings
    with built_pipeline.instance() as instance:
        registered = sorted(instance.get_dynamic_partitions(BATCH_PARTITIONS_NAME))
        assert len(registered) == 5  # csv, parquet, jsonl and Kafka's two topic files
        raw = pl.read_parquet(settings.lake_dir / "raw_events" / "*" / "events.parquet")
        materialization = _latest(instance, "raw_events", registered[0])
        assert materialization.metadata["dagster/row_count"].value > 0
    for key in registered:
        assert (
            settings.lake_dir / "raw_events_quarantine" / f"batch={key}" / "quarantine.parquet"
        ).exists()
    labeled = {
        (store, actor): pl.read_parquet(
            settings.lake_dir
            / "labeled_sessions"
            / f"store={store}"
            / f"actor={actor}"
            / "sessions.parquet"
        )
        for store in ("hotel", "airline")
        for actor in ("human", "agent")
    }
    interactions = raw.filter(pl.col("record_type") == "interaction")
    assert sum(f.height for f in labeled.values()) == interactions["session_id"].n_unique()
    for (store, actor), frame in labeled.items():
        assert frame.height > 0
        assert set(frame["store"]) == {store} and set(frame["actor"]) == {actor}
        assert frame["fold"].is_between(0, settings.fingerprint.folds - 1).all()
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as conn:
        n_sessions = conn.execute("select count(*) from sessions").fetchone()[0]
    assert n_sessions == raw["session_id"].n_unique()


def test_reingesting_identical_content_adds_no_batch(simulated: Settings):
    settings = simulated
    with dg.instance_for_test() as instance:
        first = run_pipeline(settings, instance, "raw_events")
        original = sorted(settings.incoming_dir.iterdir())[0]
        shutil.copyfile(original, settings.incoming_dir / f"again_{original.name}")
        second = run_pipeline(settings, instance, "raw_events")
        assert second.registered == first.registered
        assert second.new_batches == []
        assert not second.failed


def test_unreadable_file_fails_its_batch_naming_the_file_and_others_still_load(
    simulated: Settings,
):
    settings = simulated
    (settings.incoming_dir / "garbage.json").write_bytes(b"\x00\x01not json at all")
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, "raw_events")
        assert len(report.failed) == 1
        failed_run = instance.get_run_by_id(report.failed[0].run_id)
        failures = [
            e
            for e in instance.all_logs(failed_run.run_id)
            if e.dagster_event and e.dagster_event.event_type == dg.DagsterEventType.STEP_FAILURE
        ]
        assert "garbage.json" in str(failures[0].dagster_event.event_specific_data.error)
    assert (settings.incoming_dir / "garbage.json").exists()  # the file stays in incoming/
    assert len(list((settings.lake_dir / "raw_events").glob("batch=*/events.parquet"))) == 5
