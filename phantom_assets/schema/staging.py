"""The staging frame every reader produces: one row per raw record, every field as text.

Readers only locate records and pull fields out of them; all validation and typing happens
afterwards on this one layout (`validate.py`), so the four formats share a single rule set.

Staging columns: `source_row` (Int64), `raw` (the record's text), `pre_reason`/`pre_detail`
(a quarantine reason already known while reading: invalid encoding, malformed JSON or row), then
`STAGING_FIELDS` as Utf8 (null when absent).
"""

from __future__ import annotations

import re
from typing import Final

import polars as pl

from phantom_assets.schema.raw_formats import METADATA_KEYS

# Invalid UTF-8 byte runs are replaced by this non-character while decoding, so the record that
# held them can be quarantined as `invalid_encoding` instead of failing the whole file.
INVALID_BYTES_MARK: Final[str] = "\U0010fffe"
REPLACEMENT_CHAR: Final[str] = "\ufffd"
_SURROGATES: Final[re.Pattern[str]] = re.compile("[\udc80-\udcff]+")

METADATA_FIELDS: Final[tuple[str, ...]] = tuple(f"md_{key}" for key in METADATA_KEYS)
STAGING_FIELDS: Final[tuple[str, ...]] = (
    "session_id",
    "experiment_id",
    "store",
    "ts",
    "event",
    "page",
    "product_id",
    "price",
    "record_type",
    "user_agent",
    "actor_type",
    "is_agent",
    *METADATA_FIELDS,
)
STAGING_SCHEMA: Final[dict[str, pl.DataType]] = {
    "source_row": pl.Int64(),
    "raw": pl.String(),
    "pre_reason": pl.String(),
    "pre_detail": pl.String(),
    **{name: pl.String() for name in STAGING_FIELDS},
}
# Flat event payload key (JSON Lines row / Kafka value.payload) -> staging field.
PAYLOAD_KEYS: Final[dict[str, str]] = {
    "session_id": "sessionId",
    "experiment_id": "experimentId",
    "store": "storeMode",
    "ts": "ts",
    "event": "eventName",
    "page": "page",
    "product_id": "productId",
    "price": "price",
    "user_agent": "userAgent",
}
# whoclickedit column -> staging field.
TABLE_COLUMNS: Final[dict[str, str]] = {
    **PAYLOAD_KEYS,
    "record_type": "record_type",
    "actor_type": "actor_type",
    "is_agent": "is_agent",
    **{f"md_{key}": f"metadata_{key}" for key in METADATA_KEYS},
}


def decode_text(data: bytes) -> str:
    """Decode UTF-8 (BOM tolerated), marking each run of invalid bytes with `INVALID_BYTES_MARK`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = _SURROGATES.sub(INVALID_BYTES_MARK, data.decode("utf-8", errors="surrogateescape"))
    return text.removeprefix("\ufeff")


def payload_fields(payload: pl.Expr, metadata: pl.Expr) -> list[pl.Expr]:
    """Expressions pulling every staging field out of a JSON payload text column.

    Args:
        payload: a Utf8 expression holding one flat event payload object per row as JSON text.
        metadata: the payload's `metadata` object as JSON text (extracted once by the caller).

    Returns:
        One aliased Utf8 expression per `STAGING_FIELDS` entry (record/actor fields are null:
        a payload does not carry them). Non-string JSON scalars come back as their JSON text.
    """
    exprs = [
        payload.str.json_path_match(f"$.{key}").alias(name) for name, key in PAYLOAD_KEYS.items()
    ]
    exprs += [metadata.str.json_path_match(f"$.{key}").alias(f"md_{key}") for key in METADATA_KEYS]
    exprs += [
        pl.lit(None, pl.String).alias(name) for name in ("record_type", "actor_type", "is_agent")
    ]
    return exprs


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    """Return `frame` with exactly `STAGING_SCHEMA` (missing columns null, order fixed)."""
    return frame.select(
        pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in STAGING_SCHEMA.items()
    )


def mark_encoding(frame: pl.DataFrame) -> pl.DataFrame:
    """Set `pre_reason = invalid_encoding` on rows whose raw text holds invalid bytes."""
    bad = pl.col("raw").str.contains(INVALID_BYTES_MARK, literal=True)
    return frame.with_columns(
        pre_reason=pl.when(bad).then(pl.lit("invalid_encoding")).otherwise(pl.col("pre_reason")),
        pre_detail=pl.when(bad)
        .then(pl.lit(f"bytes that are not UTF-8 (shown as {REPLACEMENT_CHAR})"))
        .otherwise(pl.col("pre_detail")),
        raw=pl.col("raw").str.replace_all(INVALID_BYTES_MARK, REPLACEMENT_CHAR, literal=True),
    )
