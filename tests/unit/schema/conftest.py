"""Tiny hand-written raw files in every accepted format (no dependency on the simulator)."""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from phantom_assets.schema import ALL_REASONS, IngestResult
from phantom_assets.schema.raw_formats import (
    EXPERIMENT_COLUMNS,
    METADATA_KEYS,
    WHOCLICKEDIT_COLUMNS,
)

T0 = 1_732_960_800_000  # 2024-11-30T10:00:00Z in epoch ms

# The same six records, as flat event payloads (JSON Lines rows / Kafka value.payload).
RECORDS: tuple[dict[str, Any], ...] = (
    {
        "sessionId": "s1",
        "experimentId": "xp-h",
        "storeMode": "hotel",
        "ts": T0,
        "page": "/",
        "eventName": "session_start",
        "productId": None,
        "metadata": {},
        "userAgent": "Mozilla/5.0",
    },
    {
        "sessionId": "s1",
        "experimentId": "xp-h",
        "storeMode": "Hotel",
        "ts": T0 + 1500,
        "page": "/rooms/7",
        "eventName": "view",
        "productId": "room-7",
        "metadata": {"roomType": "deluxe", "nights": 2, "dwellTime": 1.5},
        "userAgent": "Mozilla/5.0",
    },
    {
        "sessionId": "s1",
        "experimentId": "xp-h",
        "storeMode": "hotel",
        "ts": T0 + 1600,
        "page": "/rooms/7",
        "eventName": "price_quote",
        "productId": "room-7",
        "metadata": {},
        "userAgent": "Mozilla/5.0",
        "price": 120.5,
    },
    {
        "sessionId": "s2",
        "experimentId": "xp-a",
        "storeMode": "airline",
        "ts": T0 + 10,
        "page": "/flights",
        "eventName": " Add_To_Cart ",
        "productId": "fl-1",
        "metadata": {"cabinClass": "economy", "price": 99.9, "itemCount": 1},
        "userAgent": "agent/1.0",
    },
    {
        "sessionId": "s2",
        "experimentId": "xp-a",
        "storeMode": "airline",
        "ts": T0 + 20,
        "page": "/flights",
        "eventName": "hover_over_title",
        "productId": "fl-1",
        "metadata": {"elementText": 'Fly "cheap", now\nor later', "dwellTime": 300},
        "userAgent": "agent/1.0",
    },
    {
        "sessionId": "s2",
        "experimentId": "xp-a",
        "storeMode": "airline",
        "ts": T0 + 30,
        "page": "/checkout",
        "eventName": "checkout",
        "productId": "fl-1",
        "metadata": {"total": "199.80"},
        "userAgent": "agent/1.0",
    },
)
ACTORS_BY_EXPERIMENT = {"xp-h": "human", "xp-a": "agent"}
# How exports found in the wild are encoded: codec + byte-order mark written before the text.
ENCODINGS: dict[str, tuple[str, bytes]] = {
    "utf-8": ("utf-8", b""),
    "utf-8-bom": ("utf-8", codecs.BOM_UTF8),
    "utf-16-le-bom": ("utf-16-le", codecs.BOM_UTF16_LE),
    "utf-16-be-bom": ("utf-16-be", codecs.BOM_UTF16_BE),
}
TEXT_FORMATS = ("jsonl", "kafka_json", "whoclickedit_csv")


def encode(text: str, encoding: str = "utf-8") -> bytes:
    """`text` as the bytes of an export saved in `encoding` (a key of `ENCODINGS`)."""
    codec, bom = ENCODINGS[encoding]
    return bom + text.encode(codec)


def assert_accounted(result: IngestResult) -> None:
    """Every record is in exactly one frame and the counts say so."""
    counts = result.counts
    kept, quarantined = result.events["source_row"], result.quarantine["source_row"]
    assert counts["rows_in"] == counts["rows_kept"] + counts["rows_quarantined"]
    assert (counts["rows_kept"], counts["rows_quarantined"]) == (kept.len(), quarantined.len())
    assert sorted([*kept, *quarantined]) == list(range(counts["rows_in"]))
    assert counts["rows_quarantined"] == sum(counts[r] for r in ALL_REASONS)
    assert counts["admin_pages_dropped"] == counts["admin_page"]
    assert set(result.quarantine["reason"]) <= set(ALL_REASONS)


def payload(**changes: Any) -> dict[str, Any]:
    """A valid interaction payload (hotel page view) with `changes` applied."""
    base = {
        "sessionId": "s9",
        "experimentId": "xp-h",
        "storeMode": "hotel",
        "ts": T0,
        "page": "/",
        "eventName": "page_view",
        "productId": "room-1",
        "metadata": {"referrer": "search"},
        "userAgent": "ua",
    }
    return {**base, **changes}


def jsonl_text(records: Sequence[dict[str, Any]]) -> str:
    """One JSON object per line (non-ASCII written as is)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_jsonl(path: Path, records: Sequence[dict[str, Any]], encoding: str = "utf-8") -> Path:
    """One JSON object per line."""
    path.write_bytes(encode(jsonl_text(records), encoding))
    return path


def write_lines(path: Path, lines: Sequence[str | bytes]) -> Path:
    """Raw lines (text or bytes) joined by newlines, for malformed-input tests."""
    blobs = [line if isinstance(line, bytes) else line.encode() for line in lines]
    path.write_bytes(b"\n".join(blobs) + b"\n")
    return path


def kafka_text(records: Sequence[Any]) -> str:
    """A Kafka console export: a JSON array of envelopes (non-dicts are written as given)."""
    envelopes = [
        {
            "partitionID": 0,
            "offset": i,
            "timestamp": T0 + i,
            "key": r.get("sessionId"),
            "value": {"payload": r},
        }
        if isinstance(r, dict)
        else r
        for i, r in enumerate(records)
    ]
    return json.dumps(envelopes, indent=1, ensure_ascii=False)


def write_kafka(path: Path, records: Sequence[Any], encoding: str = "utf-8") -> Path:
    """A Kafka console export of `records` (see `kafka_text`)."""
    path.write_bytes(encode(kafka_text(records), encoding))
    return path


def flat_row(record: dict[str, Any], actor: str | None) -> dict[str, str]:
    """Flatten a payload into a whoclickedit row (all text, empty when absent)."""
    text = {k: "" if v is None else str(v) for k, v in record.items() if k != "metadata"}
    metadata = record.get("metadata") or {}
    is_price = record.get("eventName") == "price_quote"
    row = {column: "" for column in WHOCLICKEDIT_COLUMNS}
    row.update({k: v for k, v in text.items() if k in row})
    row.update({f"metadata_{k}": str(v) for k, v in metadata.items() if k in METADATA_KEYS})
    row["record_type"] = "price_log" if is_price else "interaction"
    row["actor_type"] = actor or ""
    row["is_agent"] = "" if actor is None else str(actor == "agent").lower()
    return row


def flat_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Flatten the records with their experiment's actor in the actor columns."""
    return [flat_row(r, ACTORS_BY_EXPERIMENT.get(r.get("experimentId"))) for r in records]


def csv_text(rows: Sequence[dict[str, str]], columns: Sequence[str] = WHOCLICKEDIT_COLUMNS) -> str:
    """A whoclickedit CSV (every field quoted: the stdlib leaves a lone CR unquoted)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_csv(path: Path, rows: Sequence[dict[str, str]], encoding: str = "utf-8") -> Path:
    """A whoclickedit CSV with the contract's columns."""
    path.write_bytes(encode(csv_text(rows), encoding))
    return path


def write_parquet(path: Path, rows: Sequence[dict[str, str]]) -> Path:
    """A whoclickedit Parquet table; `ts` as Int64 and `price` as Float64 like a real export."""
    frame = pl.DataFrame(list(rows), schema=dict.fromkeys(WHOCLICKEDIT_COLUMNS, pl.String))
    frame = frame.with_columns(
        pl.col("ts").cast(pl.Int64),
        pl.col("price").replace("", None).cast(pl.Float64),
    )
    frame.write_parquet(path)
    return path


def write_sidecar(path: Path, labels: dict[str, str]) -> Path:
    """An experiments sidecar: experimentId -> 'human' | 'agent'."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(EXPERIMENT_COLUMNS)
    for xp, actor in labels.items():
        writer.writerow([xp, str(actor == "human").lower(), "mixed", "t1", f"subject-{xp}"])
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


@pytest.fixture
def batch_files(tmp_path: Path) -> Callable[[str], Path]:
    """Build the shared `RECORDS` in one format, each in its own folder with its labels."""

    def build(fmt: str) -> Path:
        folder = tmp_path / fmt
        folder.mkdir()
        if fmt == "jsonl":
            write_sidecar(folder / "experiments.csv", ACTORS_BY_EXPERIMENT)
            return write_jsonl(folder / "batch.jsonl", RECORDS)
        if fmt == "kafka_json":
            write_sidecar(folder / "batch.experiments.csv", ACTORS_BY_EXPERIMENT)
            return write_kafka(folder / "batch.json", RECORDS)
        if fmt == "whoclickedit_csv":
            return write_csv(folder / "batch.csv", flat_rows(RECORDS))
        return write_parquet(folder / "batch.parquet", flat_rows(RECORDS))

    return build
