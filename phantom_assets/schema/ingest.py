"""Parse one raw batch file into canonical events and a quarantine (docs/method.md#data).

`parse_batch` is pure apart from reading the file it is given (and its experiments sidecar):
the same bytes give the same `IngestResult`, rows ordered by `source_row`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import polars as pl

from phantom_assets.constants import PRICE_LOG, PRICE_QUOTE_EVENT
from phantom_assets.schema import fields
from phantom_assets.schema.detect import detect_format
from phantom_assets.schema.fields import TS_DTYPE
from phantom_assets.schema.labels import label_exprs, read_sidecar
from phantom_assets.schema.readers import READERS
from phantom_assets.schema.validate import ADMIN_PAGE, ALL_REASONS, classify

logger = logging.getLogger(__name__)

CANONICAL_SCHEMA: Final[dict[str, pl.DataType]] = {
    "event_id": pl.String(),
    "batch_id": pl.String(),
    "source_row": pl.Int64(),
    "session_id": pl.String(),
    "experiment_id": pl.String(),
    "store": pl.String(),
    "ts": TS_DTYPE,
    "event": pl.String(),
    "page": pl.String(),
    "product_id": pl.String(),
    "price": pl.Float64(),
    "record_type": pl.String(),
    "user_agent": pl.String(),
    "metadata": pl.String(),
    "actor": pl.String(),
    "label_source": pl.String(),
    "ts_source": pl.String(),  # validate.TS_FROM_PAYLOAD | validate.TS_FROM_KAFKA_RECORD
}
QUARANTINE_SCHEMA: Final[dict[str, pl.DataType]] = {
    "source_row": pl.Int64(),
    "raw": pl.String(),
    "reason": pl.String(),
    "detail": pl.String(),
    "batch_id": pl.String(),
}
BATCH_ID_PATTERN: Final[re.Pattern[str]] = re.compile(r"^[A-Za-z0-9_.-]+$")
EVENT_ID_CHARS: Final[int] = 16


@dataclass(frozen=True)
class IngestResult:
    """The outcome of one batch.

    Attributes:
        events: canonical events (`CANONICAL_SCHEMA`), ordered by `source_row`.
        quarantine: every other record (`QUARANTINE_SCHEMA`), ordered by `source_row`.
        counts: `rows_in`, `rows_kept`, `rows_quarantined`, `admin_pages_dropped` and one entry
            per reason (`validate.ALL_REASONS`, zeros included). Admin pages are quarantined with
            reason `admin_page`, so `rows_in == rows_kept + rows_quarantined` and
            `admin_pages_dropped == counts["admin_page"]` is a subset of `rows_quarantined`.
        format: the detected raw format (`detect.FORMATS`).
    """

    events: pl.DataFrame
    quarantine: pl.DataFrame
    counts: dict[str, int]
    format: str


def _event_ids(batch_id: str, rows: pl.DataFrame) -> pl.Series:
    """16-hex-char SHA-256 of batch id, source row and raw record text, one per row.

    polars has no SHA-256 expression; hashlib in one comprehension runs at C speed per row.
    """
    ids = [
        hashlib.sha256(f"{batch_id}\x1f{row}\x1f{raw}".encode()).hexdigest()[:EVENT_ID_CHARS]
        for row, raw in zip(rows["source_row"].to_list(), rows["raw"].to_list(), strict=True)
    ]
    return pl.Series("event_id", ids, dtype=pl.String)


def _counts(classified: pl.DataFrame) -> dict[str, int]:
    per_reason = dict(classified.group_by("reason").len().drop_nulls("reason").iter_rows())
    counts = {reason: int(per_reason.get(reason, 0)) for reason in ALL_REASONS}
    unknown = set(per_reason) - set(ALL_REASONS)
    if unknown:  # a reader or rule produced a reason nobody declared: a bug, not bad input
        raise ValueError(f"undeclared quarantine reasons {sorted(unknown)}")
    rows_quarantined = sum(counts.values())
    return {
        "rows_in": classified.height,
        "rows_kept": classified.height - rows_quarantined,
        "rows_quarantined": rows_quarantined,
        "admin_pages_dropped": counts[ADMIN_PAGE],
        **counts,
    }


def parse_batch(path: Path, batch_id: str, *, accept_legacy_store: bool = False) -> IngestResult:
    """Read one raw batch file (any format of docs/method.md#accepted-inputs) into canonical events
    + quarantine.

    Args:
        path: the raw file; its format is detected from the content.
        batch_id: the batch key (`[A-Za-z0-9_.-]+`), stamped on every row and hashed into ids.
        accept_legacy_store: keep the legacy store `shop` instead of quarantining it.

    Returns:
        The `IngestResult`; every input record is in exactly one of its two frames.

    Raises:
        ValueError: `batch_id` is empty or has characters outside `[A-Za-z0-9_.-]`.
        UnreadableFileError: the file (or its experiments sidecar) cannot be read at all.
    """
    if not BATCH_ID_PATTERN.match(batch_id):
        raise ValueError(f"batch_id {batch_id!r} must be non-empty and match [A-Za-z0-9_.-]+")
    path = Path(path)
    fmt = detect_format(path)
    staging = READERS[fmt](path)
    sidecar = read_sidecar(path)
    classified = classify(staging.lazy(), accept_legacy_store=accept_legacy_store).collect()
    counts = _counts(classified)
    kept = (
        classified.filter(pl.col("reason").is_null())
        .join(sidecar, left_on="n_experiment_id", right_on="experiment_id", how="left")
        .sort("source_row")
    )
    is_price_log = pl.col("n_record_type") == PRICE_LOG
    events = (
        kept.with_columns(label_exprs())
        .with_columns(
            _event_ids(batch_id, kept),
            batch_id=pl.lit(batch_id),
            price=pl.when(is_price_log).then(pl.col("n_price")),
            n_event=pl.when(is_price_log).then(pl.lit(PRICE_QUOTE_EVENT)).otherwise("n_event"),
        )
        .select(
            pl.col(name).cast(dtype)
            if name in ("event_id", "batch_id", "source_row", "price", "actor", "label_source")
            else pl.col(f"n_{name}").cast(dtype).alias(name)
            for name, dtype in CANONICAL_SCHEMA.items()
        )
    )
    quarantine = classified.filter(pl.col("reason").is_not_null()).select(
        pl.col("source_row").cast(pl.Int64),
        pl.col("raw"),
        pl.col("reason"),
        pl.col("detail"),
        batch_id=pl.lit(batch_id, pl.String),
    )
    logger.info("ingested %s as %s: %s", path, fmt, counts)
    return IngestResult(events=events, quarantine=quarantine, counts=counts, format=fmt)


def store_counts(path: Path) -> dict[str | None, int]:
    """Records per `storeMode` value of a raw file, normalised as ingest does (None: missing).

    Reads the file without validating anything else: what `phantom run` checks before it
    registers a new file, so a file of unsupported stores is refused up front.

    Raises:
        UnreadableFileError: the file cannot be read at all.
    """
    staging = READERS[detect_format(Path(path))](Path(path))
    counted = staging.lazy().group_by(fields.token("store").alias("store")).len().collect()
    return {store: int(n) for store, n in counted.iter_rows()}
