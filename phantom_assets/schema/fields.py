"""Expressions that turn staged text fields into canonical typed values
(docs/method.md#canonical-events).

Each helper returns a polars expression over the staging columns; `validate.py` combines them in
one `with_columns`. Nothing here decides whether a row is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final

import polars as pl

from phantom_assets.constants import EVENT_ALIASES, INTERACTION, PRICE_LOG, PRICE_QUOTE_EVENT
from phantom_assets.schema.raw_formats import METADATA_KEYS

TS_DTYPE: Final = pl.Datetime("ms", "UTC")
# Plausible event times. Anything outside is almost surely a unit error (epoch *seconds* read as
# milliseconds land in January 1970) and is quarantined as an unparseable timestamp.
TS_MIN: Final[datetime] = datetime(2000, 1, 1, tzinfo=UTC)
TS_MAX: Final[datetime] = datetime(2100, 1, 1, tzinfo=UTC)
_EPOCH_MS: Final[str] = r"^-?\d{1,18}(\.0*)?$"
_ISO_FORMATS: Final[tuple[str, ...]] = (
    "%Y-%m-%dT%H:%M:%S%.f%:z",
    "%Y-%m-%dT%H:%M:%S%.f%z",
    "%Y-%m-%dT%H:%M:%S%.f",
)
_JSON_NUMBER: Final[str] = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$"
_MAX_SAFE_INT: Final[float] = 2.0**53


def text(name: str) -> pl.Expr:
    """Column `name` with blank (empty or whitespace-only) text turned into null."""
    column = pl.col(name)
    return pl.when(column.str.strip_chars() != "").then(column)


def token(name: str) -> pl.Expr:
    """Column `name` stripped and lower-cased (store names, event names, record types)."""
    return text(name).str.strip_chars().str.to_lowercase()


def timestamp(name: str) -> pl.Expr:
    """Parse epoch milliseconds or ISO-8601 text (Z/offset; naive = UTC) into UTC ms; else null."""
    raw = text(name).str.strip_chars()
    epoch = (
        pl.when(raw.str.contains(_EPOCH_MS))
        .then(raw.str.replace(r"\.0*$", "").cast(pl.Int64, strict=False))
        .cast(TS_DTYPE)
    )
    iso = raw.str.replace(r"^(\d{4}-\d{2}-\d{2})[ tT]", "${1}T").str.replace(r"[zZ]$", "+00:00")
    parsed = [
        iso.str.to_datetime(fmt, strict=False, time_unit="ms", time_zone="UTC")
        for fmt in _ISO_FORMATS
    ]
    value = pl.coalesce(epoch, *parsed)
    return pl.when(value.is_between(TS_MIN, TS_MAX, closed="left")).then(value)


def event_name(name: str) -> pl.Expr:
    """Canonical event name: lower-cased, stripped, legacy aliases mapped (`EVENT_ALIASES`)."""
    return token(name).replace(EVENT_ALIASES)


def record_type(record_col: str, event: pl.Expr) -> pl.Expr:
    """Given record type, else price_log for a price quote and interaction for anything else."""
    derived = (
        pl.when(event == PRICE_QUOTE_EVENT).then(pl.lit(PRICE_LOG)).otherwise(pl.lit(INTERACTION))
    )
    return pl.coalesce(token(record_col), derived)


def number(name: str) -> pl.Expr:
    """Float value of a numeric text field (null when it is not a finite number)."""
    value = text(name).str.strip_chars().cast(pl.Float64, strict=False)
    return pl.when(value.is_finite()).then(value)


def json_value(column: pl.Expr) -> pl.Expr:
    """JSON text of a metadata value: a number when the text is one, else a JSON string."""
    stripped = column.str.strip_chars()
    as_float = stripped.cast(pl.Float64, strict=False)
    integral = (as_float == as_float.round(0)) & (as_float.abs() < _MAX_SAFE_INT)
    as_number = (
        pl.when(integral)
        .then(as_float.cast(pl.Int64).cast(pl.String))
        .otherwise(as_float.cast(pl.String))
    )
    # struct.json_encode is polars' JSON string escaper: '{"v":"..."}' -> '"..."'.
    encoded = pl.struct(column.alias("v")).struct.json_encode()
    as_string = encoded.str.strip_prefix('{"v":').str.strip_suffix("}")
    return pl.when(stripped.str.contains(_JSON_NUMBER)).then(as_number).otherwise(as_string)


def json_object(columns: Mapping[str, str]) -> pl.Expr:
    """JSON object text of the non-blank text columns (`key -> column`), `{}` when all are blank.

    Values go through `json_value`; keys are written in the order given.
    """
    pieces = [
        pl.when(text(column).is_not_null()).then(
            pl.concat_str(
                pl.lit(json.dumps(key, ensure_ascii=False) + ":"), json_value(pl.col(column))
            )
        )
        for key, column in columns.items()
    ]
    body = pl.concat_str(pieces, separator=",", ignore_nulls=True) if pieces else pl.lit("")
    return pl.concat_str(pl.lit("{"), body, pl.lit("}"))


def metadata_json() -> pl.Expr:
    """`metadata` as JSON object text: the known `md_*` fields, then the `md_extra` entries.

    Known keys come first (sorted, values through `json_value`, blanks dropped), then the entries
    outside `METADATA_KEYS` exactly as `md_extra` holds them (keys sorted); `{}` when none.
    """
    known = json_object({key: f"md_{key}" for key in sorted(METADATA_KEYS)})
    extra = pl.col("md_extra")
    no_extra = extra.is_null() | (extra == "{}")
    return (
        pl.when(no_extra)
        .then(known)
        .when(known == "{}")
        .then(extra)
        .otherwise(
            pl.concat_str(known.str.strip_suffix("}"), pl.lit(","), extra.str.strip_prefix("{"))
        )
    )
