"""The session table follows the whoclickedit layout and re-ingests to the same events."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from phantom_assets.publish import (
    SESSIONS_CSV,
    WHOCLICKEDIT_SCHEMA,
    PublishInputs,
    stage_dataset,
    uncastable_metadata,
    whoclickedit_table,
)
from phantom_assets.schema import parse_batch
from phantom_assets.schema.raw_formats import WHOCLICKEDIT_COLUMNS
from tests.unit.publish.builders import T0

T0_MS = int(T0.timestamp() * 1000)


def _row(table: pl.DataFrame, session: str, event: str) -> dict:
    return table.filter(sessionId=session, eventName=event).row(0, named=True)


def test_whoclickedit_schema_follows_the_raw_layout() -> None:
    assert tuple(WHOCLICKEDIT_SCHEMA) == WHOCLICKEDIT_COLUMNS


def test_whoclickedit_table_has_the_raw_columns_in_order_with_published_dtypes(
    events: pl.DataFrame,
) -> None:
    table = whoclickedit_table(events)

    assert tuple(table.columns) == WHOCLICKEDIT_COLUMNS
    assert table.schema == pl.Schema(WHOCLICKEDIT_SCHEMA)
    assert table.height == events.height


def test_whoclickedit_table_renames_canonical_fields(events: pl.DataFrame) -> None:
    row = _row(whoclickedit_table(events), "h1", "price_quote")

    assert row["storeMode"] == "hotel"
    assert row["experimentId"] == "xp-h"
    assert row["ts"] == T0_MS + 1600
    assert row["productId"] == "room-7"
    assert row["price"] == 120.5
    assert row["record_type"] == "price_log"
    assert row["topic"] == "price-logs"
    assert row["actor_type"] == "human"
    assert row["is_agent"] is False
    assert row["source_file"] == "2024-11-30_abc123"
    assert row["source_session_dir"] == "hotel/xp-h/h1"
    assert row["ingest_format"] == "phantom_canonical"


def test_whoclickedit_table_leaves_unknown_actors_empty(events: pl.DataFrame) -> None:
    row = _row(whoclickedit_table(events), "u1", "page_view")

    assert row["actor_type"] is None
    assert row["is_agent"] is None
    assert row["topic"] == "user-interactions"
    assert row["source_session_dir"] == "airline/u1"


def test_whoclickedit_table_types_metadata_values(events: pl.DataFrame) -> None:
    table = whoclickedit_table(events)
    hover = _row(table, "h1", "hover_over_title")
    view = _row(table, "h1", "view_item_page")
    search = _row(table, "a2", "search")

    assert hover["metadata_dwellTime"] == 1.5
    assert hover["metadata_elementText"] == 'Say "hi"'
    assert (view["metadata_nights"], view["metadata_roomType"]) == (2, "deluxe")
    assert search["metadata_dateIndex"] == 3
    assert _row(table, "a2", "checkout_start")["metadata_dwellTime"] is None


def test_uncastable_metadata_counts_values_that_do_not_fit(events: pl.DataFrame) -> None:
    counts = uncastable_metadata(events)

    assert counts.pop("dwellTime") == 1
    assert set(counts.values()) == {0}


def test_whoclickedit_table_does_not_depend_on_input_order(events: pl.DataFrame) -> None:
    order = np.random.default_rng(7).permutation(events.height)

    shuffled = whoclickedit_table(events[order])

    assert shuffled.equals(whoclickedit_table(events))
    keys = shuffled.select("storeMode", "sessionId", "ts").rows()
    assert keys == sorted(keys)


def test_whoclickedit_table_rejects_frames_without_canonical_columns(
    events: pl.DataFrame,
) -> None:
    with pytest.raises(ValueError, match="session_id"):
        whoclickedit_table(events.drop("session_id"))


def _comparable(frame: pl.DataFrame) -> list[tuple]:
    """Events as sortable tuples, metadata decoded (99.0 == 99 after a round trip)."""
    columns = [
        "session_id",
        "experiment_id",
        "store",
        "ts",
        "event",
        "product_id",
        "price",
        "record_type",
        "actor",
    ]
    rows = frame.select(*columns, "metadata").rows()
    return sorted((*row[:-1], tuple(sorted(json.loads(row[-1]).items()))) for row in rows)


@pytest.mark.parametrize("name", [SESSIONS_CSV, "data/sessions/sessions.parquet"])
def test_published_table_reingests_to_the_same_events(
    events: pl.DataFrame, tmp_path: Path, name: str
) -> None:
    staged = stage_dataset(PublishInputs(events), tmp_path / "out")

    result = parse_batch(staged.path / name, "republished")

    assert result.counts["rows_quarantined"] == 0
    # The one metadata value that does not fit its dtype is published empty, nothing else moves.
    expected = events.with_columns(
        pl.when(pl.col("metadata") == '{"dwellTime":"slow"}')
        .then(pl.lit("{}"))
        .otherwise(pl.col("metadata"))
        .alias("metadata")
    )
    assert _comparable(result.events) == _comparable(expected)
