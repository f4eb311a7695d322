"""Turn one raw file of a known format into the staging frame (`staging.py`).

Readers locate records and pull their fields out as text; they never validate values. A record
that cannot even be split into fields (bad JSON, wrong column count, invalid bytes) gets a
`pre_reason` so it lands in the quarantine. Only a file that cannot be read at all raises.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import polars as pl

from phantom_assets.schema.detect import (
    JSONL,
    KAFKA_JSON,
    WHOCLICKEDIT_CSV,
    WHOCLICKEDIT_PARQUET,
    UnreadableFileError,
)
from phantom_assets.schema.encoding import decode_text
from phantom_assets.schema.payloads import PayloadLocator, add_json_checks, payload_fields
from phantom_assets.schema.raw_formats import (
    KAFKA_INTERACTIONS_TOPIC,
    KAFKA_PRICE_TOPIC,
    PAYLOAD_FIELDS,
)
from phantom_assets.schema.staging import conform, mark_encoding
from phantom_assets.schema.tables import check_header, parquet_as_text, table_fields

_TOPIC_RECORD_TYPES: Final[dict[str, str]] = {
    KAFKA_INTERACTIONS_TOPIC: "interaction",
    KAFKA_PRICE_TOPIC: "price_log",
}
_SNIPPET: Final[int] = 80


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise UnreadableFileError(path, f"cannot read the file ({error.strerror})") from error


def _json_object_problem(text: str) -> str | None:
    """Why `text` (starting with `{`) is one JSON object rather than JSON Lines, else None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None  # several values (or malformed lines): JSON Lines, checked line by line
    if not isinstance(value, dict):
        return None
    if text.strip().count("\n") > 0:
        return "one JSON object spread over several lines, not JSON Lines nor a JSON array"
    if not set(value) & set(PAYLOAD_FIELDS):
        return f"a single JSON object without any event field (expected some of {PAYLOAD_FIELDS})"
    return None


def _kafka_payload(envelope: Any) -> Any:
    """The payload inside a parsed Kafka envelope (`value` may hold JSON text), else None."""
    value = envelope.get("value") if isinstance(envelope, dict) else None
    if isinstance(value, str):
        value = json.loads(value, strict=False)
    return value.get("payload") if isinstance(value, dict) else None


def _same(record: Any) -> Any:
    """A JSON Lines record is the payload itself."""
    return record


def _with_payload(
    frame: pl.DataFrame, payload: pl.Expr, what: str, locate: PayloadLocator
) -> pl.DataFrame:
    """Add the payload fields; flag payloads that are not JSON objects or hold non-scalars."""
    # Materialise the payload once: every field below re-parses it, never the envelope.
    frame = frame.with_columns(payload.alias("__payload")).with_columns(
        pl.col("__payload").str.json_path_match("$.metadata").alias("__metadata")
    )
    payload, metadata = pl.col("__payload"), pl.col("__metadata")
    frame = add_json_checks(frame.with_columns(payload_fields(payload, metadata)), locate)
    bad = payload.is_null() | ~payload.str.starts_with("{")
    bad_metadata = metadata.is_not_null() & ~metadata.str.starts_with("{")
    detail = pl.format(f"{what}: {{}}", pl.col("raw").str.slice(0, _SNIPPET))
    return frame.with_columns(
        pre_reason=pl.when(bad | bad_metadata)
        .then(pl.lit("malformed_json"))
        .otherwise(pl.col("__problem_reason")),
        pre_detail=pl.when(bad)
        .then(detail)
        .when(bad_metadata)
        .then(pl.format("metadata is not a JSON object: {}", metadata.str.slice(0, _SNIPPET)))
        .otherwise(pl.col("__problem_detail")),
    )


def read_jsonl(path: Path) -> pl.DataFrame:
    """Staging frame of a JSON Lines file; `source_row` counts non-blank lines from 0."""
    text = decode_text(_read_bytes(path))
    problem = _json_object_problem(text)
    if problem is not None:
        raise UnreadableFileError(path, problem)
    lines = pl.DataFrame({"raw": text.split("\n")}).select(pl.col("raw").str.strip_suffix("\r"))
    frame = lines.filter(pl.col("raw").str.strip_chars() != "").with_row_index("source_row")
    payload = pl.col("raw").str.json_path_match("$")  # null when the line is not one JSON value
    frame = _with_payload(frame, payload, "line is not a JSON object", _same)
    return mark_encoding(conform(frame))


def _topic_record_type(path: Path) -> str | None:
    """The record type named by the Kafka topic in the file name (`<x>.<topic>.json`), if any."""
    parts = set(path.name.split("."))
    found = [rtype for topic, rtype in _TOPIC_RECORD_TYPES.items() if topic in parts]
    return found[0] if len(found) == 1 else None


def read_kafka(path: Path) -> pl.DataFrame:
    """Staging frame of a Kafka console export; `source_row` is the index in the array."""
    text = decode_text(_read_bytes(path))
    try:
        envelopes = json.loads(text)
    except ValueError as error:
        raise UnreadableFileError(path, f"not valid JSON ({error})") from error
    if not isinstance(envelopes, list):
        raise UnreadableFileError(
            path, f"a JSON {type(envelopes).__name__}, not an array of Kafka envelopes"
        )
    # polars cannot split a JSON array into per-element texts, and the raw envelope text is what
    # the quarantine and the event id need: one C-speed json.dumps per element is the cheapest way.
    raws = [json.dumps(envelope, ensure_ascii=False) for envelope in envelopes]
    frame = pl.DataFrame({"raw": raws}, schema={"raw": pl.String}).with_row_index("source_row")
    value = pl.col("raw").str.json_path_match("$.value")  # object text, or a JSON-text string
    payload = value.str.json_path_match("$.payload")
    frame = _with_payload(frame, payload, "envelope has no value.payload object", _kafka_payload)
    frame = frame.with_columns(
        record_type=pl.lit(_topic_record_type(path), pl.String),
        kafka_ts=pl.col("raw").str.json_path_match("$.timestamp"),  # fallback for a missing ts
    )
    return mark_encoding(conform(frame))


@contextlib.contextmanager
def _csv_field_limit() -> Iterator[None]:
    """Let the csv module read fields of any size (too-long fields are quarantined later)."""
    previous = csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def read_csv(path: Path) -> pl.DataFrame:
    """Staging frame of a whoclickedit CSV; `source_row` counts non-blank records from 0.

    The stdlib csv reader (C) splits records because polars pads short rows silently and cannot
    report a record's field count, which the `malformed_row` rule needs.
    """
    text = decode_text(_read_bytes(path))
    try:
        with _csv_field_limit():
            rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    except csv.Error as error:
        raise UnreadableFileError(path, f"not readable as CSV ({error})") from error
    if not rows:
        raise UnreadableFileError(path, "the file is empty (no records, not even a header)")
    header = [name.strip() for name in rows[0]]
    check_header(path, header)
    fields = pl.Series("__fields", rows[1:], dtype=pl.List(pl.String))
    frame = pl.DataFrame([fields]).with_row_index("source_row")
    frame = frame.with_columns(
        pl.col("__fields").list.get(i, null_on_oob=True).alias(name)
        for i, name in enumerate(header)
    )
    width = pl.col("__fields").list.len()
    malformed = width != len(header)
    frame = frame.with_columns(
        raw=pl.when(malformed)
        .then(pl.struct(pl.col("__fields").alias("_fields")).struct.json_encode())
        .otherwise(pl.struct(header).struct.json_encode()),
        pre_reason=pl.when(malformed).then(pl.lit("malformed_row")),
        pre_detail=pl.when(malformed).then(
            pl.format(f"row has {{}} fields, the header has {len(header)}", width)
        ),
    )
    frame = frame.with_columns(table_fields(frame))
    return mark_encoding(conform(frame))


def read_parquet(path: Path) -> pl.DataFrame:
    """Staging frame of a whoclickedit Parquet table; `source_row` is the row index."""
    try:
        table = pl.read_parquet(path)
    except Exception as error:  # polars raises several types for corrupt/truncated files
        raise UnreadableFileError(path, f"not readable as Parquet ({error})") from error
    check_header(path, table.columns)
    columns = table.columns
    table = parquet_as_text(path, table)
    frame = table.with_row_index("source_row").with_columns(
        raw=pl.struct(columns).struct.json_encode()
    )
    frame = frame.with_columns(table_fields(frame))
    return conform(frame)


READERS: Final = {
    WHOCLICKEDIT_CSV: read_csv,
    WHOCLICKEDIT_PARQUET: read_parquet,
    KAFKA_JSON: read_kafka,
    JSONL: read_jsonl,
}
