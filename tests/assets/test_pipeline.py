"""The main job on tiny simulated data: ingest -> dbt warehouse -> labeled partitions (the
session's built pipeline), re-ingesting, and bad input: bad rows never fail a batch (a file of
nothing but bad rows loads as 0 events), an unreadable file fails its batch alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from orchestration.failures import failed_lines
from orchestration.runner import run_pipeline
from orchestration.summary import collect_summary
from phantom_assets.assets.lineage import collect_lineage
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.audit import failed_blocking_checks
from phantom_assets.config import Settings
from phantom_assets.simulate import simulate_to_incoming
from tests.built_pipeline import BuiltPipeline
from tests.pipeline_helpers import demo_definitions

T0 = 1_732_960_800_000  # 2024-11-30T10:00:00Z in epoch ms


def _row(**changes: object) -> str:
    """A valid JSON Lines record (a hotel page view) with `changes` applied."""
    base = {
        "sessionId": "s1",
        "experimentId": "xp-h",
        "storeMode": "hotel",
        "ts": T0,
        "page": "/",
        "eventName": "page_view",
        "productId": "room-1",
        "metadata": {},
        "userAgent": "ua",
    }
    return json.dumps({**base, **changes})


# One row of each kind of bad input, and not one good row: (reason, record line).
ALL_BAD_ROWS = (
    ("missing_session_id", _row(sessionId="")),
    ("unparseable_timestamp", _row(ts="yesterday")),
    ("unknown_event", _row(eventName="teleport")),
    ("unknown_store", _row(storeMode="casino")),
    ("malformed_json", '{"sessionId": "s1", "ts": '),
)


@pytest.fixture
def simulated(settings: Settings) -> Settings:
    simulate_to_incoming(settings, settings.incoming_dir)
    return settings


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _only_batch(instance: dg.DagsterInstance) -> str:
    (key,) = instance.get_dynamic_partitions(BATCH_PARTITIONS_NAME)
    return key


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


def _data_pages_lost(settings: Settings) -> bytes:
    """A simulated Parquet export cut to its magic and footer: the footer points past its end
    (polars panics on it: a BaseException, not an error)."""
    data = next(settings.incoming_dir.glob("*.parquet")).read_bytes()
    footer = int.from_bytes(data[-8:-4], "little") + 8
    return data[:4] + data[-footer:]


@pytest.mark.parametrize(
    ("name", "content"),
    [("garbage.json", lambda _: b"\x00\x01not json at all"), ("cut.parquet", _data_pages_lost)],
)
def test_unreadable_file_fails_its_batch_naming_the_file_and_others_still_load(
    simulated: Settings, name: str, content
):
    settings = simulated
    (settings.incoming_dir / name).write_bytes(content(settings))
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, "raw_events")
        assert len(report.failed) == 1
        failed_run = instance.get_run_by_id(report.failed[0].run_id)
        failures = [
            e
            for e in instance.all_logs(failed_run.run_id)
            if e.dagster_event and e.dagster_event.event_type == dg.DagsterEventType.STEP_FAILURE
        ]
        assert name in str(failures[0].dagster_event.event_specific_data.error)
    assert (settings.incoming_dir / name).exists()  # the file stays in incoming/
    assert len(list((settings.lake_dir / "raw_events").glob("batch=*/events.parquet"))) == 5


def test_a_file_of_only_bad_rows_loads_as_an_empty_batch_with_every_row_quarantined(
    settings: Settings,
):
    bad = _write_lines(settings.incoming_dir / "all_bad.jsonl", [r for _, r in ALL_BAD_ROWS])
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, "raw_events")
        assert not report.failed
        key = _only_batch(instance)
        metadata = _latest(instance, "raw_events", key).metadata
    assert pl.read_parquet(settings.lake.events(key)).height == 0
    assert metadata["dagster/row_count"].value == 0
    warning = metadata["warning"].value
    assert str(bad) in warning and "0 events" in warning and "all 5 rows" in warning
    quarantine = pl.read_parquet(settings.lake.quarantine(key)).sort("source_row")
    assert quarantine.select("source_row", "reason").rows() == [
        (row, reason) for row, (reason, _) in enumerate(ALL_BAD_ROWS)
    ]
    assert quarantine["detail"].is_not_null().all() and set(quarantine["batch_id"]) == {key}


def test_a_file_of_a_foreign_store_only_loads_as_an_empty_batch_naming_the_store(
    settings: Settings,
):
    rows = [_row(sessionId=f"s{i}", ts=T0 + i, storeMode="casino") for i in range(3)]
    foreign = _write_lines(settings.incoming_dir / "casino.jsonl", rows)
    with dg.instance_for_test() as instance:
        assert not run_pipeline(settings, instance, "raw_events").failed
        key = _only_batch(instance)
        warning = _latest(instance, "raw_events", key).metadata["warning"].value
    assert str(foreign) in warning
    assert "storeMode='casino': storeMode must be one of hotel, airline" in warning
    assert pl.read_parquet(settings.lake.events(key)).height == 0
    quarantine = pl.read_parquet(settings.lake.quarantine(key))
    assert quarantine.select("reason", "detail").unique().rows() == [
        ("unknown_store", "storeMode='casino'")
    ]
    assert quarantine.height == 3


def test_a_truncated_parquet_fails_its_batch_with_a_message_naming_the_file(
    settings: Settings, tmp_path: Path
):
    written = simulate_to_incoming(settings, tmp_path / "sim")
    parquet = next(p for p in written if p.suffix == ".parquet").read_bytes()
    truncated = settings.incoming_dir / "truncated.parquet"
    truncated.parent.mkdir(parents=True)
    truncated.write_bytes(parquet[: len(parquet) // 2])
    with dg.instance_for_test() as instance:
        (failed,) = run_pipeline(settings, instance, "raw_events").failed
        cause = "\n".join(failed_lines(instance, failed))
    assert str(truncated) in cause and "not readable as Parquet" in cause


def test_bad_batches_never_hold_back_the_warehouse_or_the_stores_certificates(
    simulated: Settings,
):
    """An all-bad file loads as 0 events and an unreadable one fails alone: the warehouse and
    the store slices build from the other batches, the failed batch (no data used) leaves no
    hole in a store's lineage, and the summary warns about both files."""
    settings = simulated
    _write_lines(settings.incoming_dir / "all_bad.jsonl", [r for _, r in ALL_BAD_ROWS])
    (settings.incoming_dir / "garbage.json").write_bytes(b"\x00\x01not json at all")
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, "*store_warehouse")
        (failed,) = report.failed
        assert failed.stage.startswith("raw_events") and not report.skipped
        records = collect_lineage(
            instance,
            demo_definitions().resolve_asset_graph(),
            dg.AssetKey("store_warehouse"),
            "hotel",
        )
        assert {"hotel", "airline"} <= set(
            instance.get_materialized_partitions(dg.AssetKey("store_warehouse"))
        )
    assert failed_blocking_checks(records) == []
    batches = {r.partition for r in records if r.asset == "raw_events"}
    assert failed.partition not in batches and len(batches) == 6  # 5 simulated + the all-bad
    raw = pl.read_parquet(settings.lake_dir / "raw_events" / "*" / "events.parquet")
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as conn:
        n_sessions = conn.execute("select count(*) from sessions").fetchone()[0]
    assert n_sessions == raw["session_id"].n_unique() > 0
    warnings = collect_summary(settings)["batch_warnings"]
    assert any("garbage.json: not loaded" in w for w in warnings)
    assert any("all_bad.jsonl: 0 events, all 5 rows quarantined" in w for w in warnings)
