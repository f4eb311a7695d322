"""Turn one raw file of a known format into staging frames (`staging.py`), a chunk at a time.

Readers locate records and pull their fields out as text; they never validate values. A record
that cannot even be split into fields (bad JSON, wrong column count, invalid bytes) gets a
`pre_reason` so it lands in the quarantine. Only a file that cannot be read at all raises.

Readers stream: text is read and decoded `ReadSizes.block_bytes` at a time (Parquet in row
slices) and comes out as staging frames of at most `ReadSizes.rows` records, each with its
file-wide `source_row` -- at least one frame, maybe empty. Memory follows the chunk, not the file
(a 100 MB CSV took 2.3 GB read whole).
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
import sys
from collections.abc import Iterator
from functools import partial
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
from phantom_assets.schema.encoding import iter_decoded
from phantom_assets.schema.payloads import PayloadLocator, add_json_checks, payload_fields
from phantom_assets.schema.raw_formats import (
    KAFKA_INTERACTIONS_TOPIC,
    KAFKA_PRICE_TOPIC,
    PAYLOAD_FIELDS,
)
from phantom_assets.schema.staging import conform, mark_encoding
from phantom_assets.schema.streams import (
    ReadSizes,
    batches,
    json_array_items,
    split_lines,
    universal_lines,
)
from phantom_assets.schema.tables import check_header, parquet_as_text, table_fields

_TOPIC_RECORD_TYPES: Final[dict[str, str]] = {
    KAFKA_INTERACTIONS_TOPIC: "interaction",
    KAFKA_PRICE_TOPIC: "price_log",
}
_SNIPPET: Final[int] = 80
_PANIC_REASON: Final = re.compile(r"assertion failed: [^\"\\]+")


def _text(path: Path, block_bytes: int) -> Iterator[str]:
    """The decoded text of `path`, piece by piece (`encoding.iter_decoded`)."""
    try:
        with path.open("rb") as handle:
            yield from iter_decoded(iter(partial(handle.read, block_bytes), b""))
    except OSError as error:
        raise UnreadableFileError(path, f"cannot read the file ({error.strerror})") from error


def _is_json(text: str) -> bool:
    """Whether `text` is one JSON value (surrounded by JSON whitespace)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


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


def read_jsonl(path: Path, sizes: ReadSizes) -> Iterator[pl.DataFrame]:
    """Staging frames of a JSON Lines file; `source_row` counts non-blank lines from 0."""
    first: str | None = None  # the first non-blank line
    offset = 0
    for lines in batches(split_lines(_text(path, sizes.block_bytes)), sizes.rows):
        raw = pl.DataFrame({"raw": lines}, schema={"raw": pl.String})
        frame = (
            raw.select(pl.col("raw").str.strip_suffix("\r"))
            .filter(pl.col("raw").str.strip_chars() != "")
            .with_row_index("source_row", offset=offset)
        )
        if first is None and frame.height:
            first = frame["raw"][0]
        offset += frame.height
        payload = pl.col("raw").str.json_path_match("$")  # null when the line is not one value
        frame = _with_payload(frame, payload, "line is not a JSON object", _same)
        yield mark_encoding(conform(frame))
    # The whole text is one JSON value only when its first non-blank line is not one on its own
    # (a value spread over lines) or is the only one: just then is the whole file read again.
    if first is not None and (offset == 1 or not _is_json(first)):
        problem = _json_object_problem("".join(_text(path, sizes.block_bytes)))
        if problem is not None:
            raise UnreadableFileError(path, problem)


def _topic_record_type(path: Path) -> str | None:
    """The record type named by the Kafka topic in the file name (`<x>.<topic>.json`), if any."""
    parts = set(path.name.split("."))
    found = [rtype for topic, rtype in _TOPIC_RECORD_TYPES.items() if topic in parts]
    return found[0] if len(found) == 1 else None


def _whole_file_json_error(path: Path, block_bytes: int, streamed: ValueError) -> str:
    """`json.loads`'s message for the whole file, which counts lines and columns from its start
    (the stream's error counts from where it had got to): only a failing file is read whole."""
    try:
        json.loads("".join(_text(path, block_bytes)))
    except ValueError as error:
        return str(error)
    return str(streamed)


def _envelopes(path: Path, block_bytes: int) -> Iterator[Any]:
    """The Kafka envelopes of the file's JSON array, parsed one at a time."""
    try:
        yield from json_array_items(_text(path, block_bytes))
    except UnreadableFileError:
        raise
    except ValueError as error:
        message = f"not valid JSON ({_whole_file_json_error(path, block_bytes, error)})"
        raise UnreadableFileError(path, message) from error


def read_kafka(path: Path, sizes: ReadSizes) -> Iterator[pl.DataFrame]:
    """Staging frames of a Kafka console export; `source_row` is the index in the array."""
    record_type = _topic_record_type(path)
    offset = 0
    for envelopes in batches(_envelopes(path, sizes.block_bytes), sizes.rows):
        # polars cannot split a JSON array into per-element texts, and the raw envelope text is
        # what the quarantine and the event id need: one C-speed json.dumps per element.
        raws = [json.dumps(envelope, ensure_ascii=False) for envelope in envelopes]
        frame = pl.DataFrame({"raw": raws}, schema={"raw": pl.String})
        frame = frame.with_row_index("source_row", offset=offset)
        offset += frame.height
        value = pl.col("raw").str.json_path_match("$.value")  # object text, or JSON-text string
        payload = value.str.json_path_match("$.payload")
        missing = "envelope has no value.payload object"
        frame = _with_payload(frame, payload, missing, _kafka_payload)
        frame = frame.with_columns(
            record_type=pl.lit(record_type, pl.String),
            kafka_ts=pl.col("raw").str.json_path_match("$.timestamp"),  # fallback for a missing ts
        )
        yield mark_encoding(conform(frame))


@contextlib.contextmanager
def _csv_field_limit() -> Iterator[None]:
    """Let the csv module read fields of any size (too-long fields are quarantined later)."""
    previous = csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _csv_records(path: Path, block_bytes: int) -> Iterator[list[str]]:
    """The non-blank records of a CSV file.

    The stdlib csv reader (C) splits records because polars pads short rows silently and cannot
    report a record's field count, which the `malformed_row` rule needs.
    """
    lines = universal_lines(_text(path, block_bytes))
    with _csv_field_limit():
        try:
            yield from (row for row in csv.reader(lines) if row)
        except csv.Error as error:
            raise UnreadableFileError(path, f"not readable as CSV ({error})") from error


def _csv_frame(rows: list[list[str]], header: list[str], offset: int) -> pl.DataFrame:
    """Staging frame of CSV records (`rows`) whose first `source_row` is `offset`."""
    fields = pl.Series("__fields", rows, dtype=pl.List(pl.String))
    frame = pl.DataFrame([fields]).with_row_index("source_row", offset=offset)
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


def read_csv(path: Path, sizes: ReadSizes) -> Iterator[pl.DataFrame]:
    """Staging frames of a whoclickedit CSV; `source_row` counts non-blank records from 0."""
    records = _csv_records(path, sizes.block_bytes)
    first = next(records, None)
    if first is None:
        raise UnreadableFileError(path, "the file is empty (no records, not even a header)")
    header = [name.strip() for name in first]
    check_header(path, header)
    offset = 0
    for rows in batches(records, sizes.rows):
        yield _csv_frame(rows, header, offset)
        offset += len(rows)


def _parquet_rows(path: Path, offset: int, n_rows: int) -> pl.DataFrame:
    """Rows `offset` .. `offset + n_rows` of a Parquet file (only their row groups are read).

    Raises:
        UnreadableFileError: the file is truncated or corrupt. polars raises several types for
            that, and panics (a `BaseException`) when the footer points past the file's end.
    """
    try:
        return pl.scan_parquet(path).slice(offset, n_rows).collect()
    except (Exception, pl.exceptions.PanicException) as error:
        raise UnreadableFileError(
            path, f"not readable as Parquet, the file is truncated or corrupt ({_why(error)})"
        ) from error


def _why(error: BaseException) -> str:
    """The reader's reason, short: a panic's innermost assertion rather than its nesting."""
    text = str(error)
    found = _PANIC_REASON.search(text)
    return f"the reader failed: {found.group(0)}" if found else text.splitlines()[0][:300]


def read_parquet(path: Path, sizes: ReadSizes) -> Iterator[pl.DataFrame]:
    """Staging frames of a whoclickedit Parquet table; `source_row` is the row index."""
    offset = 0
    while True:
        table = _parquet_rows(path, offset, sizes.rows)
        if offset == 0:
            check_header(path, table.columns)
        columns, n_rows = table.columns, table.height
        table = parquet_as_text(path, table)
        frame = table.with_row_index("source_row", offset=offset).with_columns(
            raw=pl.struct(columns).struct.json_encode()
        )
        yield conform(frame.with_columns(table_fields(frame)))
        offset += n_rows
        if n_rows < sizes.rows:
            return


READERS: Final = {
    WHOCLICKEDIT_CSV: read_csv,
    WHOCLICKEDIT_PARQUET: read_parquet,
    KAFKA_JSON: read_kafka,
    JSONL: read_jsonl,
}
