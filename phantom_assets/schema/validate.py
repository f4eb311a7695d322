"""Quarantine rules of docs/method.md#bad-input applied to a staging frame: each row is kept or gets
a reason.

A row gets the *first* reason that applies, in the order of `_rules`, from `classify_rows` (row by
row, so a batch is classified in chunks); duplicates are judged last, over the whole batch, among
rows that passed every other rule (`mark_duplicates`): the earliest `source_row` of a group stays.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from phantom_assets.constants import (
    ADMIN_PAGE_PREFIX,
    LEGACY_STORE,
    MAX_FIELD_CHARS,
    PRICE_LOG,
    PRICE_QUOTE_EVENT,
    QUARANTINE_REASONS,
    RECORD_TYPES,
    STORES,
    VOCABULARY,
)
from phantom_assets.schema import fields
from phantom_assets.schema.payloads import NON_SCALAR_VALUE
from phantom_assets.schema.staging import SOURCE_NAMES, STAGING_FIELDS

# Local reasons (not in constants.QUARANTINE_REASONS yet). Pages under ADMIN_PAGE_PREFIX are
# dropped from the events *via* the quarantine, so that rows_in == rows_kept + rows_quarantined.
# A JSON array/object in a scalar field (readers, `payloads.py`, `tables.py`) and a control
# character inside an id are refused rather than kept as odd text.
ADMIN_PAGE: Final[str] = "admin_page"
CONTROL_CHARACTER_IN_ID: Final[str] = "control_character_in_id"
ALL_REASONS: Final[tuple[str, ...]] = (
    *QUARANTINE_REASONS,
    NON_SCALAR_VALUE,
    CONTROL_CHARACTER_IN_ID,
    ADMIN_PAGE,
)
ID_FIELDS: Final[tuple[str, ...]] = ("session_id", "experiment_id", "product_id")
# Unicode category Cc: C0 controls (NUL, tab, newline ...), DEL and the C1 controls.
CONTROL_CHARACTERS: Final[str] = r"[\x00-\x1f\x7f-\x9f]"
# `ts_source` values: the record's own `ts`, or the Kafka record timestamp when `ts` is missing.
TS_FROM_PAYLOAD: Final[str] = "payload"
TS_FROM_KAFKA_RECORD: Final[str] = "kafka_record"
DUPLICATE_KEY: Final[tuple[str, ...]] = (
    "session_id",
    "ts",
    "event",
    "page",
    "product_id",
    "metadata",
    "record_type",
    "price",
)
_SNIPPET: Final[int] = 80


def _show(name: str) -> pl.Expr:
    """Human-readable `sourceField='value'` of a staging column (truncated; `missing` if null)."""
    source = SOURCE_NAMES.get(name, name)
    value = pl.col(name).str.slice(0, _SNIPPET)
    return pl.concat_str(pl.lit(f"{source}='"), value, pl.lit("'")).fill_null(f"{source} missing")


def _escaped(name: str) -> pl.Expr:
    """`sourceField="value"` with control characters JSON-escaped (`\\u0000`), truncated."""
    encoded = pl.struct(pl.col(name).str.slice(0, _SNIPPET).alias("v")).struct.json_encode()
    value = encoded.str.strip_prefix('{"v":').str.strip_suffix("}")
    return pl.concat_str(pl.lit(f"{SOURCE_NAMES.get(name, name)}="), value)


def _id_with_control() -> pl.Expr:
    """Detail naming the first id field holding a control character (null when none does)."""
    return pl.coalesce(
        pl.when(pl.col(name).str.contains(CONTROL_CHARACTERS)).then(
            pl.concat_str(_escaped(name), pl.lit(" holds a control character"))
        )
        for name in ID_FIELDS
    )


def _normalized(accept_legacy_store: bool) -> list[pl.Expr]:
    """Typed canonical values next to the staged text (prefixed `n_`)."""
    event = fields.event_name("event")
    use_record_ts = fields.text("ts").is_null() & fields.timestamp("kafka_ts").is_not_null()
    return [
        pl.col("session_id").alias("n_session_id"),
        fields.text("experiment_id").alias("n_experiment_id"),
        fields.token("store").alias("n_store"),
        pl.when(use_record_ts)
        .then(fields.timestamp("kafka_ts"))
        .otherwise(fields.timestamp("ts"))
        .alias("n_ts"),
        pl.when(use_record_ts)
        .then(pl.lit(TS_FROM_KAFKA_RECORD))
        .otherwise(pl.lit(TS_FROM_PAYLOAD))
        .alias("n_ts_source"),
        event.alias("n_event"),
        fields.record_type("record_type", event).alias("n_record_type"),
        fields.text("page").alias("n_page"),
        fields.text("product_id").alias("n_product_id"),
        fields.number("price").alias("n_price"),
        fields.text("user_agent").alias("n_user_agent"),
        fields.metadata_json().alias("n_metadata"),
        pl.lit(accept_legacy_store).alias("accept_legacy"),
    ]


def _rules() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """(reason, condition, detail) in priority order, over the `n_` columns."""
    lengths = [pl.col(name).str.len_chars() > MAX_FIELD_CHARS for name in STAGING_FIELDS]
    too_long = pl.coalesce(
        pl.when(cond).then(pl.lit(SOURCE_NAMES.get(name, name)))
        for cond, name in zip(lengths, STAGING_FIELDS, strict=True)
    )
    is_price_log = pl.col("n_record_type") == PRICE_LOG
    event_ok = (
        pl.when(is_price_log)
        .then(pl.col("n_event").is_null() | (pl.col("n_event") == PRICE_QUOTE_EVENT))
        .otherwise(pl.col("n_event").is_in(VOCABULARY))
    )
    price = pl.col("n_price")
    page = pl.col("n_page").str.to_lowercase()
    control = _id_with_control()
    ts_detail = (
        pl.when(fields.text("ts").is_null() & pl.col("kafka_ts").is_not_null())
        .then(pl.concat_str(_show("ts"), pl.lit("; "), _show("kafka_ts")))
        .otherwise(_show("ts"))
    )
    return [
        (
            "field_too_long",
            too_long.is_not_null(),
            pl.format(f"field {{}} is longer than {MAX_FIELD_CHARS} characters", too_long),
        ),
        (
            "missing_session_id",
            fields.text("session_id").is_null(),
            _show("session_id"),
        ),
        (CONTROL_CHARACTER_IN_ID, control.is_not_null(), control),
        ("unparseable_timestamp", pl.col("n_ts").is_null(), ts_detail),
        (
            "legacy_store",
            (pl.col("n_store") == LEGACY_STORE) & ~pl.col("accept_legacy"),
            pl.concat_str(_show("store"), pl.lit(" (legacy store not accepted)")),
        ),
        (
            "unknown_store",
            ~pl.col("n_store").is_in([*STORES, LEGACY_STORE]).fill_null(False),
            _show("store"),
        ),
        (
            "malformed_row",
            ~pl.col("n_record_type").is_in(RECORD_TYPES).fill_null(False),
            _show("record_type"),
        ),
        ("unknown_event", ~event_ok.fill_null(False), _show("event")),
        (
            "invalid_price",
            is_price_log & (price.is_null() | (price < 0)),
            _show("price"),
        ),
        (ADMIN_PAGE, page.str.starts_with(ADMIN_PAGE_PREFIX).fill_null(False), _show("page")),
    ]


def _reason_and_detail() -> tuple[pl.Expr, pl.Expr]:
    """One when-chain for the reason and one for its detail; staged reasons come first."""
    rules = _rules()
    reason = pl.when(pl.col("pre_reason").is_not_null()).then(pl.col("pre_reason"))
    detail = pl.when(pl.col("pre_reason").is_not_null()).then(pl.col("pre_detail"))
    for name, condition, text in rules:
        reason = reason.when(condition).then(pl.lit(name))
        detail = detail.when(condition).then(text)
    return reason.otherwise(pl.lit(None, pl.String)), detail.otherwise(pl.lit(None, pl.String))


def classify_rows(staging: pl.LazyFrame, *, accept_legacy_store: bool) -> pl.LazyFrame:
    """Add canonical `n_*` columns (`n_ts_source` included) and the first row-level `reason` and
    its `detail` (null: kept so far); duplicates are judged over the whole batch afterwards.

    Args:
        staging: staging rows (`staging.STAGING_SCHEMA`), any chunk of a batch.
        accept_legacy_store: keep the legacy store value instead of quarantining it.

    Returns:
        The rows with `n_*`, `reason` and `detail` columns added, in their order.
    """
    reason, detail = _reason_and_detail()
    return (
        staging.with_columns(_normalized(accept_legacy_store))
        .with_columns(reason=reason, detail=detail)
        .drop("accept_legacy")
    )


def mark_duplicates(
    rows: pl.DataFrame, seen: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Quarantine as `duplicate_event` each kept row that repeats, on `DUPLICATE_KEY`, a kept row
    before it: one of an earlier chunk of the batch (`seen`) or an earlier one in `rows`.

    Args:
        rows: a chunk after `classify_rows`; its `source_row`s follow those of earlier chunks.
        seen: the first `source_row` (`first_row`) of every key kept in the earlier chunks, as
            this function returned it (None before the first chunk).

    Returns:
        `rows` in their order with `reason`/`detail` set on the duplicates, and `seen` with the
        keys this chunk kept first added.
    """
    keys = [f"n_{name}" for name in DUPLICATE_KEY]
    if seen is None:
        seen = rows.select(keys).clear().with_columns(first_row=pl.lit(None, pl.Int64))
    candidate = pl.col("reason").is_null()
    first_here = pl.when(candidate).then(pl.col("source_row")).min().over(keys)
    first = pl.coalesce(pl.col("first_row"), first_here)
    duplicate = candidate & (pl.col("source_row") != first)
    marked = (
        rows.join(seen, on=keys, how="left", nulls_equal=True, maintain_order="left")
        .with_columns(
            reason=pl.when(duplicate).then(pl.lit("duplicate_event")).otherwise(pl.col("reason")),
            detail=pl.when(duplicate)
            .then(pl.format("same event as source_row {}", first))
            .otherwise(pl.col("detail")),
        )
        .drop("first_row")
    )
    new_keys = marked.filter(pl.col("reason").is_null()).select(
        *keys, first_row=pl.col("source_row").cast(pl.Int64)
    )
    return marked, pl.concat([seen, new_keys])
