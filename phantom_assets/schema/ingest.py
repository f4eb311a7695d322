"""Parse one raw batch file into canonical events and a quarantine (docs/method.md#data).

`parse_batch` is pure apart from reading the file it is given (and its experiments sidecar):
the same bytes give the same `IngestResult`, rows ordered by `source_row`, whatever the chunk
sizes it reads with (`ReadSizes`). Every rule runs chunk by chunk (the duplicate rule remembers
the first row of each kept key), and only the kept rows' canonical values and the quarantined
rows are held for the whole batch, so memory follows the events, not the raw file.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import polars as pl
import polars.selectors as cs

from phantom_assets.constants import PRICE_LOG, PRICE_QUOTE_EVENT
from phantom_assets.schema import fields
from phantom_assets.schema.detect import detect_format
from phantom_assets.schema.fields import TS_DTYPE
from phantom_assets.schema.labels import label_exprs, read_sidecar
from phantom_assets.schema.readers import READERS
from phantom_assets.schema.streams import DEFAULT_READ_SIZES, ReadSizes
from phantom_assets.schema.validate import ADMIN_PAGE, ALL_REASONS, classify_rows, mark_duplicates

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


def _counts(n_rows: int, quarantine: pl.DataFrame) -> dict[str, int]:
    per_reason = dict(quarantine.group_by("reason").len().iter_rows())
    counts = {reason: int(per_reason.get(reason, 0)) for reason in ALL_REASONS}
    unknown = set(per_reason) - set(ALL_REASONS)
    if unknown:  # a reader or rule produced a reason nobody declared: a bug, not bad input
        raise ValueError(f"undeclared quarantine reasons {sorted(unknown)}")
    return {
        "rows_in": n_rows,
        "rows_kept": n_rows - quarantine.height,
        "rows_quarantined": quarantine.height,
        "admin_pages_dropped": counts[ADMIN_PAGE],
        **counts,
    }


def _classify_chunks(
    chunks: Iterable[pl.DataFrame], batch_id: str, accept_legacy_store: bool
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """(kept rows, quarantined rows, rows in) of a batch's staging chunks, chunk by chunk.

    Kept rows keep the canonical `n_*` values, the label columns and their event id; only
    quarantined rows keep the raw record text, the bulk of a staging chunk.
    """
    kept, quarantined, n_rows, seen = [], [], 0, None
    for staging in chunks:
        rows = classify_rows(staging.lazy(), accept_legacy_store=accept_legacy_store).collect()
        rows, seen = mark_duplicates(rows, seen)
        n_rows += rows.height
        is_kept = pl.col("reason").is_null()
        good = rows.filter(is_kept)
        labels = ("source_row", "actor_type", "is_agent")
        kept.append(good.select(*labels, cs.starts_with("n_"), _event_ids(batch_id, good)))
        quarantined.append(rows.filter(~is_kept).select("source_row", "raw", "reason", "detail"))
    return pl.concat(kept), pl.concat(quarantined), n_rows


def parse_batch(
    path: Path,
    batch_id: str,
    *,
    accept_legacy_store: bool = False,
    sizes: ReadSizes = DEFAULT_READ_SIZES,
) -> IngestResult:
    """Read one raw batch file (any format of docs/method.md#accepted-inputs) into canonical events
    + quarantine.

    Args:
        path: the raw file; its format is detected from the content.
        batch_id: the batch key (`[A-Za-z0-9_.-]+`), stamped on every row and hashed into ids.
        accept_legacy_store: keep the legacy store `shop` instead of quarantining it.
        sizes: how much of the file is read at a time (the result does not depend on it).

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
    kept, quarantined, n_rows = _classify_chunks(
        READERS[fmt](path, sizes), batch_id, accept_legacy_store
    )
    sidecar = read_sidecar(path)
    is_price_log = pl.col("n_record_type") == PRICE_LOG
    events = (
        kept.lazy()
        .join(sidecar.lazy(), left_on="n_experiment_id", right_on="experiment_id", how="left")
        .sort("source_row")
        .with_columns(label_exprs())
        .with_columns(
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
        .collect()
    )
    quarantine = quarantined.select(
        pl.col("source_row").cast(pl.Int64),
        pl.col("raw"),
        pl.col("reason"),
        pl.col("detail"),
        batch_id=pl.lit(batch_id, pl.String),
    )
    counts = _counts(n_rows, quarantine)
    logger.info("ingested %s as %s: %s", path, fmt, counts)
    return IngestResult(events=events, quarantine=quarantine, counts=counts, format=fmt)


def store_counts(path: Path, sizes: ReadSizes = DEFAULT_READ_SIZES) -> dict[str | None, int]:
    """Records per `storeMode` value of a raw file, normalised as ingest does (None: missing).

    Reads the file (a chunk at a time) without validating anything else: what `phantom run`
    checks before it registers a new file, so a file of unsupported stores is refused up front.

    Raises:
        UnreadableFileError: the file cannot be read at all.
    """
    counts: Counter[str | None] = Counter()
    store = fields.token("store").alias("store")
    for staging in READERS[detect_format(Path(path))](Path(path), sizes):
        counts.update(dict(staging.lazy().group_by(store).len().collect().iter_rows()))
    return {store: int(n) for store, n in counts.items()}
