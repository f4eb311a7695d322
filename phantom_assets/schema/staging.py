"""The staging frame every reader produces: one row per raw record, every field as text.

Readers only locate records and pull fields out of them; all validation and typing happens
afterwards on this one layout (`validate.py`), so the four formats share a single rule set.

Staging columns: `source_row` (Int64), `raw` (the record's text), `pre_reason`/`pre_detail`
(a quarantine reason already known while reading: invalid encoding, malformed JSON or row, a
non-scalar value), then `STAGING_FIELDS` as Utf8 (null when absent). `kafka_ts` is the Kafka
record timestamp (envelope `timestamp`, or a table's `kafka_timestamp` column), the fallback for a
missing `ts`; `md_extra` is a JSON object text of metadata entries outside `METADATA_KEYS`.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from phantom_assets.schema.encoding import INVALID_BYTES_MARK
from phantom_assets.schema.raw_formats import METADATA_KEYS

REPLACEMENT_CHAR: Final[str] = "\ufffd"

METADATA_FIELDS: Final[tuple[str, ...]] = tuple(f"md_{key}" for key in METADATA_KEYS)
STAGING_FIELDS: Final[tuple[str, ...]] = (
    "session_id",
    "experiment_id",
    "store",
    "ts",
    "kafka_ts",
    "event",
    "page",
    "product_id",
    "price",
    "record_type",
    "user_agent",
    "actor_type",
    "is_agent",
    *METADATA_FIELDS,
    "md_extra",
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
    "kafka_ts": "kafka_timestamp",
    **{f"md_{key}": f"metadata_{key}" for key in METADATA_KEYS},
}
# Staging field -> the name a quarantine detail shows for it.
SOURCE_NAMES: Final[dict[str, str]] = {**TABLE_COLUMNS, "md_extra": "metadata"}


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
        .then(
            pl.lit(f"bytes that are not text in the file's encoding (shown as {REPLACEMENT_CHAR})")
        )
        .otherwise(pl.col("pre_detail")),
        raw=pl.col("raw").str.replace_all(INVALID_BYTES_MARK, REPLACEMENT_CHAR, literal=True),
    )
