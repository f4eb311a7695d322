"""Write a simulated corpus in the raw export formats of docs/method.md#accepted-inputs
(`schema/raw_formats.py`).

Every format carries the same records. Kafka partition/offset are assigned once on the whole
corpus (per topic, in time order), so the whoclickedit `kafka_*` columns and the Kafka envelopes
agree and offsets stay unique across batch files. Files are written atomically (temp file in the
same folder, then `os.replace`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import polars as pl

from phantom_assets.constants import PRICE_LOG
from phantom_assets.schema.raw_formats import (
    EXPERIMENTS_SIDECAR_SUFFIX,
    KAFKA_INTERACTIONS_TOPIC,
    KAFKA_PRICE_TOPIC,
    METADATA_KEYS,
    WHOCLICKEDIT_COLUMNS,
)
from phantom_assets.simulate.params import SimulatedCorpus
from phantom_assets.simulate.records import METADATA_DTYPE
from phantom_assets.storage import atomic_write

__all__ = ["ALL_FORMATS", "KAFKA_PARTITIONS", "atomic_write", "write_exports"]

logger = logging.getLogger(__name__)

ALL_FORMATS: tuple[str, ...] = ("whoclickedit_csv", "whoclickedit_parquet", "kafka_json", "jsonl")
KAFKA_PARTITIONS = 3
INGEST_FORMAT = "kafka_console"  # whoclickedit `ingest_format`: the rows were collected via Kafka
_TOPICS = (KAFKA_INTERACTIONS_TOPIC, KAFKA_PRICE_TOPIC)


def _with_kafka(events: pl.DataFrame) -> pl.DataFrame:
    """Add topic, Kafka partition/offset and the epoch-ms timestamp to every record."""
    return (
        events.with_columns(
            pl.when(pl.col("record_type") == PRICE_LOG)
            .then(pl.lit(KAFKA_PRICE_TOPIC))
            .otherwise(pl.lit(KAFKA_INTERACTIONS_TOPIC))
            .alias("topic"),
            ((pl.col("session_id").rank("dense") - 1) % KAFKA_PARTITIONS)
            .cast(pl.Int64)
            .alias("kafka_partition"),
            pl.col("ts").dt.epoch("ms").alias("ts_ms"),
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        )
        .sort("ts_ms", "session_id", "seq")
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64)
            .over("topic", "kafka_partition")
            .alias("kafka_offset")
        )
        .sort("_row")
        .drop("_row")
    )


def _json_lines() -> pl.Expr:
    """Flat event payload as JSON text (metadata nested, `price` only on price logs)."""
    fields = [
        pl.col("session_id").alias("sessionId"),
        pl.col("experiment_id").alias("experimentId"),
        pl.col("store").alias("storeMode"),
        pl.col("ts_ms").alias("ts"),
        pl.col("page"),
        pl.col("event").alias("eventName"),
        pl.col("product_id").alias("productId"),
        pl.col("user_agent").alias("userAgent"),
    ]
    with_price = pl.struct(*fields, pl.col("price")).struct.json_encode()
    plain = pl.struct(*fields).struct.json_encode()
    encoded = pl.when(pl.col("record_type") == PRICE_LOG).then(with_price).otherwise(plain)
    return pl.concat_str(
        encoded.str.strip_suffix("}"), pl.lit(',"metadata":'), pl.col("metadata"), pl.lit("}")
    )


def _whoclickedit(frame: pl.DataFrame) -> pl.DataFrame:
    """The flat whoclickedit table of `frame` (columns `WHOCLICKEDIT_COLUMNS`)."""
    meta = pl.col("metadata").str.json_decode(METADATA_DTYPE)
    return (
        frame.sort("store", "session_id", "seq")
        .select(
            pl.col("actor").alias("actor_type"),
            (pl.col("actor") == "agent").alias("is_agent"),
            pl.col("record_type"),
            pl.col("topic"),
            pl.concat_str("store", "experiment_id", "session_id", separator="/").alias(
                "source_session_dir"
            ),
            (pl.col("topic") + ".json").alias("source_file"),
            pl.int_range(pl.len(), dtype=pl.Int64)
            .over("session_id", "topic")
            .alias("source_row_index"),
            pl.lit(INGEST_FORMAT).alias("ingest_format"),
            pl.col("session_id").alias("sessionId"),
            pl.col("experiment_id").alias("experimentId"),
            pl.col("store").alias("storeMode"),
            pl.col("ts_ms").alias("ts"),
            pl.col("event").alias("eventName"),
            pl.col("page"),
            pl.col("product_id").alias("productId"),
            pl.col("price"),
            pl.col("user_agent").alias("userAgent"),
            pl.col("topic").alias("kafka_topic"),
            pl.col("kafka_partition"),
            pl.col("kafka_offset"),
            pl.col("ts_ms").alias("kafka_timestamp"),
            pl.col("session_id").alias("kafka_key"),
            *(meta.struct.field(key).alias(f"metadata_{key}") for key in METADATA_KEYS),
        )
        .select(WHOCLICKEDIT_COLUMNS)
    )


def _write_lines(path: Path, lines: pl.DataFrame, head: bytes = b"", tail: bytes = b"") -> Path:
    """Write a one-column frame of text lines verbatim (no quoting), between `head` and `tail`."""

    def write(handle: BinaryIO) -> None:
        handle.write(head)
        lines.write_csv(handle, include_header=False, quote_style="never")
        handle.write(tail)

    return atomic_write(path, write)


def _write_sidecar(data_path: Path, frame: pl.DataFrame, experiments: pl.DataFrame) -> Path:
    """Write `<stem>.experiments.csv` beside `data_path` with the experiments in `frame`."""
    present = experiments.filter(pl.col("experimentId").is_in(frame["experiment_id"].unique()))
    sidecar = data_path.with_name(data_path.stem + EXPERIMENTS_SIDECAR_SUFFIX)
    return atomic_write(sidecar, lambda handle: present.write_csv(handle))


def _write_format(
    fmt: str, frame: pl.DataFrame, experiments: pl.DataFrame, stem: Path
) -> list[Path]:
    """Write one batch `frame` in format `fmt`; return the files written."""
    if fmt == "whoclickedit_csv":
        table = _whoclickedit(frame)
        return [atomic_write(stem.with_name(f"{stem.name}.csv"), lambda h: table.write_csv(h))]
    if fmt == "whoclickedit_parquet":
        table = _whoclickedit(frame)
        return [
            atomic_write(stem.with_name(f"{stem.name}.parquet"), lambda h: table.write_parquet(h))
        ]
    ordered = frame.sort("ts_ms", "session_id", "seq")
    if fmt == "jsonl":
        path = _write_lines(
            stem.with_name(f"{stem.name}.events.jsonl"), ordered.select(_json_lines())
        )
        return [path, _write_sidecar(path, ordered, experiments)]
    written = []
    for topic in _TOPICS:
        part = ordered.filter(pl.col("topic") == topic)
        envelope = pl.concat_str(
            pl.lit('{"partitionID":'),
            pl.col("kafka_partition").cast(pl.String),
            pl.lit(',"offset":'),
            pl.col("kafka_offset").cast(pl.String),
            pl.lit(',"timestamp":'),
            pl.col("ts_ms").cast(pl.String),
            pl.lit(',"key":"'),
            pl.col("session_id"),
            pl.lit('","value":{"payload":'),
            _json_lines(),
            pl.lit("}}"),
        )
        last = pl.int_range(pl.len()) == pl.len() - 1
        lines = part.select(pl.when(last).then(envelope).otherwise(envelope + ","))
        path = _write_lines(stem.with_name(f"{stem.name}.{topic}.json"), lines, b"[\n", b"]\n")
        written += [path, _write_sidecar(path, part, experiments)]
    return written


def write_exports(
    corpus: SimulatedCorpus,
    out_dir: Path,
    formats: Sequence[str] = ALL_FORMATS,
    batches: int = 1,
    *,
    prefix: str = "sessions",
) -> list[Path]:
    """Write the corpus in each format, split into `batches` files per format by session.

    File names (`<base>` = `<prefix>_<store-or-all>_<k>`): `<base>.csv`, `<base>.parquet`,
    `<base>.events.jsonl` and `<base>.<topic>.json` (one per Kafka topic); JSON Lines and Kafka
    files get a label sidecar `<file stem>.experiments.csv`. No sidecar name matches the stem of a
    whoclickedit file, so those keep their own `actor_type` labels. A session never spans two
    batches.

    Args:
        corpus: The simulated corpus.
        out_dir: Destination folder (created if missing).
        formats: Subset of `ALL_FORMATS`.
        batches: Files per format (>= 1).
        prefix: First part of every file name.

    Returns:
        Every file written (data files and sidecars), in writing order.

    Raises:
        ValueError: for an unknown format, a non-positive batch count or an empty corpus.
    """
    unknown = [f for f in formats if f not in ALL_FORMATS]
    if unknown or not formats:
        raise ValueError(f"unknown or no formats {list(formats)!r}; choose from {ALL_FORMATS}")
    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 1:
        raise ValueError(f"batches must be an int >= 1, got {batches!r}")
    if corpus.events.is_empty():
        raise ValueError("the corpus has no events to write")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stores = corpus.events["store"].unique().to_list()
    label = stores[0] if len(stores) == 1 else "all"
    sessions = corpus.events["session_id"].unique(maintain_order=True)
    n_batches = min(batches, sessions.len())
    batch_of = pl.DataFrame(
        {
            "session_id": sessions,
            "_batch": pl.int_range(sessions.len(), eager=True) * n_batches // sessions.len(),
        }
    )
    events = _with_kafka(corpus.events).join(batch_of, on="session_id", how="left")
    written: list[Path] = []
    for k in range(n_batches):
        frame = events.filter(pl.col("_batch") == k)
        for fmt in formats:
            written += _write_format(
                fmt, frame, corpus.experiments, out_dir / f"{prefix}_{label}_{k}"
            )
    logger.info("wrote %d files to %s", len(written), out_dir)
    return written
