"""Canonical rows from every raw format: schema, aliases, labels, timestamps, idempotence."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from phantom_assets.constants import CANONICAL_COLUMNS, EVENT_ALIASES, PRICE_QUOTE_EVENT
from phantom_assets.schema import CANONICAL_SCHEMA, QUARANTINE_SCHEMA, IngestResult, parse_batch

from .conftest import (
    ACTORS_BY_EXPERIMENT,
    RECORDS,
    T0,
    flat_row,
    payload,
    write_csv,
    write_jsonl,
    write_kafka,
    write_sidecar,
)

POSITIONAL = ["event_id", "batch_id", "source_row", "label_source"]


def _canonical_oracle(record: dict) -> dict:
    """What the canonical row of a payload must be, computed independently in plain Python."""

    def as_json_value(value: object) -> object:
        try:
            number = float(str(value))
        except ValueError:
            return value
        return int(number) if number.is_integer() else number

    metadata = {k: as_json_value(v) for k, v in record["metadata"].items() if v is not None}
    event = record["eventName"].strip().lower()
    return {
        "session_id": record["sessionId"],
        "experiment_id": record["experimentId"],
        "store": record["storeMode"].lower(),
        "ts": datetime.fromtimestamp(record["ts"] / 1000, tz=UTC),
        "event": EVENT_ALIASES.get(event, event),
        "page": record["page"],
        "product_id": record["productId"],
        "price": record.get("price"),
        "record_type": "price_log" if event == PRICE_QUOTE_EVENT else "interaction",
        "user_agent": record["userAgent"],
        "metadata": json.dumps(metadata, sort_keys=True, separators=(",", ":")),
        "actor": ACTORS_BY_EXPERIMENT[record["experimentId"]],
        "ts_source": "payload",
    }


def test_canonical_schema_follows_the_constants() -> None:
    assert tuple(CANONICAL_SCHEMA) == CANONICAL_COLUMNS
    assert list(QUARANTINE_SCHEMA) == ["source_row", "raw", "reason", "detail", "batch_id"]


@pytest.mark.parametrize("fmt", ["jsonl", "kafka_json", "whoclickedit_csv", "whoclickedit_parquet"])
def test_parse_batch_matches_the_python_oracle(
    batch_files: Callable[[str], Path], fmt: str
) -> None:
    result = parse_batch(batch_files(fmt), "b1")
    assert result.format == fmt
    assert result.events.schema == pl.Schema(CANONICAL_SCHEMA)
    assert result.quarantine.schema == pl.Schema(QUARANTINE_SCHEMA)
    assert result.events["source_row"].to_list() == list(range(len(RECORDS)))
    expected = pl.DataFrame(
        [_canonical_oracle(r) for r in RECORDS], schema_overrides=CANONICAL_SCHEMA
    )
    assert_frame_equal(
        result.events.drop(POSITIONAL), expected.select(result.events.drop(POSITIONAL).columns)
    )


@pytest.mark.parametrize("fmt", ["kafka_json", "whoclickedit_csv", "whoclickedit_parquet"])
def test_parse_batch_gives_identical_rows_in_every_format(
    batch_files: Callable[[str], Path], fmt: str
) -> None:
    reference = parse_batch(batch_files("jsonl"), "b1").events.drop(POSITIONAL)
    assert_frame_equal(parse_batch(batch_files(fmt), "b1").events.drop(POSITIONAL), reference)


@pytest.mark.parametrize(("alias", "canonical"), sorted(EVENT_ALIASES.items()))
def test_parse_batch_maps_legacy_aliases(tmp_path: Path, alias: str, canonical: str) -> None:
    records = [payload(eventName=alias.upper(), price=10.0)]
    result = parse_batch(write_jsonl(tmp_path / "b.jsonl", records), "b1")
    assert result.events["event"].to_list() == [canonical]
    is_price = canonical == PRICE_QUOTE_EVENT
    assert result.events["record_type"].to_list() == ["price_log" if is_price else "interaction"]
    assert result.events["price"].to_list() == [10.0 if is_price else None]


def test_parse_batch_is_idempotent(batch_files: Callable[[str], Path], tmp_path: Path) -> None:
    path = batch_files("whoclickedit_csv")
    copy = tmp_path / "elsewhere" / path.name
    copy.parent.mkdir()
    shutil.copy(path, copy)
    first, second, copied = (parse_batch(p, "b1") for p in (path, path, copy))
    for other in (second, copied):
        assert_frame_equal(first.events, other.events)
        assert_frame_equal(first.quarantine, other.quarantine)
        assert first.counts == other.counts


def test_parse_batch_event_ids_are_short_hex_and_depend_on_the_batch(
    batch_files: Callable[[str], Path],
) -> None:
    path = batch_files("jsonl")
    ids = parse_batch(path, "b1").events["event_id"]
    assert ids.str.contains(r"^[0-9a-f]{16}$").all()
    assert ids.n_unique() == len(RECORDS)
    other = parse_batch(path, "b2").events["event_id"]
    assert set(ids).isdisjoint(other)


def test_parse_batch_prefers_the_sidecar_over_actor_columns(tmp_path: Path) -> None:
    rows = [flat_row(payload(sessionId="s1", experimentId="xp-1"), actor="human")]
    rows.append(flat_row(payload(sessionId="s2", experimentId="xp-2"), actor="human"))
    rows.append(flat_row(payload(sessionId="s3", experimentId="xp-3"), actor=None))
    path = write_csv(tmp_path / "b.csv", rows)
    write_sidecar(tmp_path / "b.experiments.csv", {"xp-1": "agent"})
    events = parse_batch(path, "b1").events
    assert events["actor"].to_list() == ["agent", "human", "unknown"]
    assert events["label_source"].to_list() == ["experiment", "actor_column", "none"]


def test_parse_batch_reads_is_agent_when_actor_type_is_empty(tmp_path: Path) -> None:
    row = flat_row(payload(), actor=None) | {"is_agent": "TRUE"}
    events = parse_batch(write_csv(tmp_path / "b.csv", [row]), "b1").events
    assert events.select("actor", "label_source").row(0) == ("agent", "actor_column")


def test_parse_batch_leaves_conflicting_sidecar_labels_unlabeled(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", [payload(experimentId="xp-1")])
    sidecar = tmp_path / "experiments.csv"
    sidecar.write_text("experimentId,xp_human_only\nxp-1,true\nxp-1,false\n", encoding="utf-8")
    events = parse_batch(path, "b1").events
    assert events.select("actor", "label_source").row(0) == ("unknown", "none")


@pytest.mark.parametrize(
    ("topic", "event", "kept_as"),
    [
        ("price-logs", "price_shown", "price_log"),
        ("user-interactions", "view", "interaction"),
    ],
)
def test_parse_batch_takes_record_type_from_the_kafka_topic(
    tmp_path: Path, topic: str, event: str, kept_as: str
) -> None:
    path = write_kafka(tmp_path / f"export-1.{topic}.json", [payload(eventName=event, price=5)])
    result = parse_batch(path, "b1")
    assert result.events["record_type"].to_list() == [kept_as]


def test_parse_batch_rejects_a_price_quote_on_the_interaction_topic(tmp_path: Path) -> None:
    path = write_kafka(tmp_path / "x.user-interactions.json", [payload(eventName="price_quote")])
    assert parse_batch(path, "b1").quarantine["reason"].to_list() == ["unknown_event"]


@pytest.mark.parametrize(
    "ts",
    [
        "2024-11-30T10:00:00Z",
        "2024-11-30T10:00:00.000+00:00",
        "2024-11-30T12:00:00+02:00",
        "2024-11-30T04:30:00-0530",
        "2024-11-30 10:00:00",
        "2024-11-30T10:00:00",
        str(T0),
        float(T0),
    ],
)
def test_parse_batch_reads_epoch_ms_and_iso_timestamps(tmp_path: Path, ts: object) -> None:
    result = parse_batch(write_jsonl(tmp_path / "b.jsonl", [payload(ts=ts)]), "b1")
    assert result.events["ts"].to_list() == [datetime.fromtimestamp(T0 / 1000, tz=UTC)]


def test_parse_batch_turns_numeric_metadata_text_into_numbers(tmp_path: Path) -> None:
    metadata = {"nights": "3", "dwellTime": "2.50", "referrer": "007x", "total": "1e3", "type": ""}
    row = flat_row(payload(metadata=metadata), actor="human")
    events = parse_batch(write_csv(tmp_path / "b.csv", [row]), "b1").events
    text = events["metadata"].item()
    assert text == '{"dwellTime":2.5,"nights":3,"referrer":"007x","total":1000}'
    assert json.loads(text)["dwellTime"] == pytest.approx(2.5)


def test_parse_batch_keeps_interaction_prices_null(tmp_path: Path) -> None:
    events = parse_batch(write_jsonl(tmp_path / "b.jsonl", [payload(price=3.5)]), "b1").events
    assert events["price"].to_list() == [None]


@pytest.mark.parametrize("batch_id", ["", "has space", "slash/y", "ünïcode"])
def test_parse_batch_rejects_batch_ids_outside_the_key_alphabet(
    batch_files: Callable[[str], Path], batch_id: str
) -> None:
    with pytest.raises(ValueError, match="batch_id"):
        parse_batch(batch_files("jsonl"), batch_id)


def test_ingest_result_counts_balance(batch_files: Callable[[str], Path]) -> None:
    result: IngestResult = parse_batch(batch_files("kafka_json"), "b1")
    counts = result.counts
    assert counts["rows_in"] == counts["rows_kept"] + counts["rows_quarantined"] == len(RECORDS)
    assert counts["rows_kept"] == result.events.height
    assert counts["admin_pages_dropped"] == 0


def test_store_counts_reads_store_values_as_ingest_normalises_them(tmp_path: Path):
    from phantom_assets.schema import store_counts

    records = [payload(storeMode=" Hotel "), payload(storeMode="books"), payload(storeMode="")]
    counts = store_counts(write_jsonl(tmp_path / "a.jsonl", records))
    assert counts == {"hotel": 1, "books": 1, None: 1}
    result = parse_batch(tmp_path / "a.jsonl", "b1")
    assert result.counts["unknown_store"] == 2  # what the pre-flight announces, ingest does
