"""Flatten canonical events back into the whoclickedit column layout
(docs/method.md#accepted-inputs, docs/architecture.md#publishing).

The published session table uses the layout of the public `whoclickedit` dataset
(`raw_formats.WHOCLICKEDIT_COLUMNS`, in that order), so anyone who reads that dataset reads ours,
and PHANTOM's own ingest accepts the published CSV as a raw batch. Provenance columns map onto
what the canonical events know: `source_file` is the PHANTOM batch id, `source_row_index` the row
inside that batch; Kafka coordinates are not kept by the ingest, so the `kafka_*` columns are null.
"""

from __future__ import annotations

import logging
from typing import Final

import polars as pl

from phantom_assets.constants import CANONICAL_COLUMNS, PRICE_LOG
from phantom_assets.schema.raw_formats import (
    KAFKA_INTERACTIONS_TOPIC,
    KAFKA_PRICE_TOPIC,
    METADATA_KEYS,
)

__all__ = [
    "EVENT_COLUMNS",
    "INGEST_FORMAT",
    "WHOCLICKEDIT_SCHEMA",
    "uncastable_metadata",
    "whoclickedit_table",
]

logger = logging.getLogger(__name__)

INGEST_FORMAT: Final[str] = "phantom_canonical"
# The canonical columns the flat table is built from: all but the ingest's own bookkeeping.
EVENT_COLUMNS: Final[tuple[str, ...]] = tuple(
    name for name in CANONICAL_COLUMNS if name not in ("event_id", "label_source", "ts_source")
)
# Counters and indices are integers; times and amounts may be fractional (a dwell of 1.5 s).
_INT_METADATA: Final[frozenset[str]] = frozenset({"dateIndex", "itemCount", "nights"})
_FLOAT_METADATA: Final[frozenset[str]] = frozenset({"dwellTime", "price", "total"})
_METADATA_TYPES: Final[dict[str, pl.DataType]] = {
    key: pl.Int64()
    if key in _INT_METADATA
    else pl.Float64()
    if key in _FLOAT_METADATA
    else pl.String()
    for key in METADATA_KEYS
}
WHOCLICKEDIT_SCHEMA: Final[dict[str, pl.DataType]] = {
    "actor_type": pl.String(),
    "is_agent": pl.Boolean(),
    "record_type": pl.String(),
    "topic": pl.String(),
    "source_session_dir": pl.String(),
    "source_file": pl.String(),
    "source_row_index": pl.Int64(),
    "ingest_format": pl.String(),
    "sessionId": pl.String(),
    "experimentId": pl.String(),
    "storeMode": pl.String(),
    "ts": pl.Int64(),
    "eventName": pl.String(),
    "page": pl.String(),
    "productId": pl.String(),
    "price": pl.Float64(),
    "userAgent": pl.String(),
    "kafka_topic": pl.String(),
    "kafka_partition": pl.Int64(),
    "kafka_offset": pl.Int64(),
    "kafka_timestamp": pl.Int64(),
    "kafka_key": pl.String(),
    **{f"metadata_{key}": _METADATA_TYPES[key] for key in METADATA_KEYS},
}


def _check_events(events: pl.LazyFrame) -> None:
    """Raise ValueError when canonical columns the table needs are missing."""
    missing = [name for name in EVENT_COLUMNS if name not in events.collect_schema().names()]
    if missing:
        raise ValueError(
            f"events frame lacks canonical columns {missing}; pass raw_events rows "
            "(phantom_assets.schema.CANONICAL_SCHEMA)"
        )


def _raw_metadata(key: str) -> pl.Expr:
    """Text of metadata field `key` (null when absent or JSON null)."""
    return pl.col("metadata").str.json_path_match(f"$.{key}")


def _typed_metadata(key: str) -> pl.Expr:
    """Metadata field `key` cast to its published dtype; values that do not fit become null."""
    raw = _raw_metadata(key)
    dtype = _METADATA_TYPES[key]
    if dtype == pl.String:
        return raw
    as_float = raw.cast(pl.Float64, strict=False)
    if dtype == pl.Float64:
        return as_float
    integral = as_float.is_finite() & (as_float == as_float.round(0))
    return pl.when(integral).then(as_float).cast(pl.Int64, strict=False)


def _actor_known() -> pl.Expr:
    """True where the canonical actor is a label (human/agent), not `unknown`."""
    return pl.col("actor").is_in(["human", "agent"])


def whoclickedit_table(events: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """The flat session table (`WHOCLICKEDIT_SCHEMA`, `WHOCLICKEDIT_COLUMNS` order) of events.

    Rows are ordered by store, session, time, batch and source row, so the same events always
    give the same bytes. `actor` `unknown` becomes empty `actor_type` / `is_agent`.

    Args:
        events: Canonical events (`phantom_assets.schema.CANONICAL_SCHEMA`; `event_id`,
            `label_source` are not needed).

    Returns:
        The table, columns in `WHOCLICKEDIT_COLUMNS` order with `WHOCLICKEDIT_SCHEMA` dtypes.

    Raises:
        ValueError: a needed canonical column is missing.
    """
    lazy = events.lazy()
    _check_events(lazy)
    null_str, null_int = pl.lit(None, pl.String), pl.lit(None, pl.Int64)
    table = (
        lazy.sort("store", "session_id", "ts", "batch_id", "source_row", nulls_last=True)
        .select(
            pl.when(_actor_known()).then(pl.col("actor")).alias("actor_type"),
            pl.when(_actor_known()).then(pl.col("actor") == "agent").alias("is_agent"),
            pl.col("record_type"),
            pl.when(pl.col("record_type") == PRICE_LOG)
            .then(pl.lit(KAFKA_PRICE_TOPIC))
            .otherwise(pl.lit(KAFKA_INTERACTIONS_TOPIC))
            .alias("topic"),
            pl.concat_str(
                "store", "experiment_id", "session_id", separator="/", ignore_nulls=True
            ).alias("source_session_dir"),
            pl.col("batch_id").alias("source_file"),
            pl.col("source_row").alias("source_row_index"),
            pl.lit(INGEST_FORMAT).alias("ingest_format"),
            pl.col("session_id").alias("sessionId"),
            pl.col("experiment_id").alias("experimentId"),
            pl.col("store").alias("storeMode"),
            pl.col("ts").dt.epoch("ms").alias("ts"),
            pl.col("event").alias("eventName"),
            pl.col("page"),
            pl.col("product_id").alias("productId"),
            pl.col("price"),
            pl.col("user_agent").alias("userAgent"),
            null_str.alias("kafka_topic"),
            null_int.alias("kafka_partition"),
            null_int.alias("kafka_offset"),
            null_int.alias("kafka_timestamp"),
            null_str.alias("kafka_key"),
            *(_typed_metadata(key).alias(f"metadata_{key}") for key in METADATA_KEYS),
        )
        .cast(WHOCLICKEDIT_SCHEMA)  # type: ignore[arg-type]
        .collect()
    )
    return table


def uncastable_metadata(events: pl.DataFrame | pl.LazyFrame) -> dict[str, int]:
    """Per metadata key, how many present values do not fit the published dtype (become null).

    Args:
        events: Canonical events with a `metadata` JSON text column.

    Returns:
        `{key: count}` for every key of `METADATA_KEYS` (zeros included).
    """
    lazy = events.lazy()
    lost = [
        (_raw_metadata(key).is_not_null() & _typed_metadata(key).is_null()).sum().alias(key)
        for key in METADATA_KEYS
    ]
    row = lazy.select(lost).collect().row(0, named=True)
    counts = {key: int(row[key]) for key in METADATA_KEYS}
    if any(counts.values()):
        logger.warning("metadata values that do not fit the published dtype: %s", counts)
    return counts
