"""Integration tests of the dbt-duckdb warehouse project (`dbt_project/`).

Each test builds a tiny hive-style raw_events lake under tmp_path with polars, in the exact
column layout the `raw_events` asset writes, runs dbt in process through `dbtRunner` with every
artifact (target, logs, warehouse) redirected into tmp_path, and queries the DuckDB file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
import yaml
from dbt.cli.main import dbtRunner, dbtRunnerResult

from phantom_assets.constants import VOCABULARY

pytestmark = pytest.mark.integration

DBT_PROJECT_DIR = Path(__file__).resolve().parents[2] / "dbt_project"
RAW_EVENTS_SCHEMA: dict[str, pl.DataType] = {
    "event_id": pl.Utf8(),
    "batch_id": pl.Utf8(),
    "source_row": pl.Int64(),
    "session_id": pl.Utf8(),
    "experiment_id": pl.Utf8(),
    "store": pl.Utf8(),
    "ts": pl.Datetime("ms", "UTC"),
    "event": pl.Utf8(),
    "page": pl.Utf8(),
    "product_id": pl.Utf8(),
    "price": pl.Float64(),
    "record_type": pl.Utf8(),
    "user_agent": pl.Utf8(),
    "metadata": pl.Utf8(),
    "actor": pl.Utf8(),
    "label_source": pl.Utf8(),
    "ts_source": pl.Utf8(),
}
T0 = datetime(2025, 1, 1, 23, 59, 58, tzinfo=UTC)
BATCH_A = "2025-01-01_aaaa1111"
BATCH_B = "2025-01-02_bbbb2222"


def _row(
    event_id: str,
    batch_id: str,
    source_row: int,
    session_id: str,
    seconds: float,
    event: str,
    *,
    store: str = "hotel",
    actor: str = "unknown",
    label_source: str = "none",
    experiment_id: str | None = None,
    product_id: str | None = None,
    price: float | None = None,
) -> dict[str, Any]:
    """One canonical event row; price-log rows are recognised by the event name."""
    return {
        "event_id": event_id,
        "batch_id": batch_id,
        "source_row": source_row,
        "session_id": session_id,
        "experiment_id": experiment_id,
        "store": store,
        "ts": T0 + timedelta(seconds=seconds),
        "event": event,
        "page": "/rooms",
        "product_id": product_id,
        "price": price,
        "record_type": "price_log" if event == "price_quote" else "interaction",
        "user_agent": "pytest",
        "metadata": "{}",
        "actor": actor,
        "label_source": label_source,
        "ts_source": "payload",
    }


def _write_batch(data_dir: Path, batch_id: str, rows: list[dict[str, Any]]) -> None:
    batch_dir = data_dir / "lake" / "raw_events" / f"batch={batch_id}"
    batch_dir.mkdir(parents=True)
    pl.DataFrame(rows, schema=RAW_EVENTS_SCHEMA).write_parquet(batch_dir / "events.parquet")


def _write_two_batch_lake(data_dir: Path) -> None:
    """Sessions: s_span (both batches, human by experiment), s_dup (agent; one event re-ingested
    in batch B), s_unlabeled (no label), s_conflict (2 human rows, 1 agent row)."""
    human = {"actor": "human", "label_source": "experiment", "experiment_id": "x1"}
    agent = {"store": "airline", "actor": "agent", "label_source": "actor_column"}
    _write_batch(
        data_dir,
        BATCH_A,
        [
            _row("span-1", BATCH_A, 0, "s_span", 0, "session_start", **human),
            _row("span-2", BATCH_A, 1, "s_span", 1, "view_item_page", product_id="p1", **human),
            _row("span-q", BATCH_A, 2, "s_span", 1.5, "price_quote", product_id="p1", price=100.0),
            # ties on ts with span-4 of batch B: batch A sorts first despite its larger source_row
            _row("span-3", BATCH_A, 9, "s_span", 3, "hover_over_title", product_id="p1", **human),
            _row("dup-1", BATCH_A, 3, "s_dup", 0, "session_start", **agent),
            _row("dup-2", BATCH_A, 4, "s_dup", 2, "search", **agent),
            _row("none-1", BATCH_A, 5, "s_unlabeled", 0, "session_start"),
            _row(
                "conf-1",
                BATCH_A,
                6,
                "s_conflict",
                0,
                "session_start",
                actor="human",
                label_source="actor_column",
            ),
            _row(
                "conf-2",
                BATCH_A,
                7,
                "s_conflict",
                1,
                "page_view",
                actor="human",
                label_source="actor_column",
            ),
            _row(
                "conf-3",
                BATCH_A,
                8,
                "s_conflict",
                2,
                "page_view",
                actor="agent",
                label_source="actor_column",
            ),
        ],
    )
    _write_batch(
        data_dir,
        BATCH_B,
        [
            _row("span-4", BATCH_B, 0, "s_span", 3, "add_item_to_cart", product_id="p1", **human),
            _row("span-5", BATCH_B, 1, "s_span", 4, "purchase_complete", product_id="p1", **human),
            _row("span-q2", BATCH_B, 2, "s_span", 4, "price_quote", product_id="p1", price=110.0)
            | {"ts_source": "kafka_record"},  # payload without ts: the envelope's time
            # dup-2 ingested again (same event id) at another position
            _row("dup-2", BATCH_B, 3, "s_dup", 2, "search", **agent),
        ],
    )


def _invoke_dbt(command: str, data_dir: Path, work_dir: Path, *extra_args: str) -> dbtRunnerResult:
    """Run one dbt command against dbt_project/ with every output under work_dir."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PHANTOM_DATA_DIR", str(data_dir.resolve()))
        env.setenv("PHANTOM_WAREHOUSE", str((work_dir / "warehouse.duckdb").resolve()))
        return dbtRunner().invoke(
            [
                command,
                "--project-dir",
                str(DBT_PROJECT_DIR),
                "--profiles-dir",
                str(DBT_PROJECT_DIR),
                "--target-path",
                str(work_dir / "target"),
                "--log-path",
                str(work_dir / "logs"),
                "--no-send-anonymous-usage-stats",
                "--no-use-colors",
                *extra_args,
            ]
        )


def _failed_nodes(result: dbtRunnerResult) -> dict[str, str]:
    """unique_id -> message of every node that errored or failed."""
    return {
        r.node.unique_id: str(r.message)
        for r in result.result
        if str(r.status) in {"error", "fail"}
    }


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """The warehouse after one successful `dbt build` on the two-batch lake."""
    root = tmp_path_factory.mktemp("dbt_build")
    _write_two_batch_lake(root / "data")
    result = _invoke_dbt("build", root / "data", root)
    assert result.success, _failed_nodes(result) or result.exception
    # Default configuration: dbt-duckdb keeps its in-process database instance open after the
    # run, and DuckDB refuses a second instance of one file with another configuration.
    con = duckdb.connect(str(root / "warehouse.duckdb"))
    yield con
    con.close()


def _session(con: duckdb.DuckDBPyConnection, session_id: str) -> dict[str, Any]:
    frame = con.execute("select * from sessions where session_id = ?", [session_id]).pl()
    assert frame.height == 1
    return frame.row(0, named=True)


def test_dbt_parse_runs_without_any_data_and_touches_no_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "no_such_data_dir"
    result = _invoke_dbt("parse", data_dir, tmp_path)
    assert result.success, result.exception
    assert not data_dir.exists()
    assert not (tmp_path / "warehouse.duckdb").exists()
    source = result.result.sources["source.phantom.lake.raw_events"]
    assert source.meta["raw_events_glob"] == (
        f"{data_dir.resolve()}/lake/raw_events/batch=*/events.parquet"
    )


def test_dbt_parse_prefers_the_data_dir_var_to_the_environment(tmp_path: Path) -> None:
    """Dagster passes the storage root as `--vars {data_dir: ...}` (assets/dbt.py)."""
    var_dir = tmp_path / "from_vars"
    result = _invoke_dbt(
        "parse", tmp_path / "from_env", tmp_path, "--vars", json.dumps({"data_dir": str(var_dir)})
    )
    assert result.success, result.exception
    source = result.result.sources["source.phantom.lake.raw_events"]
    assert source.meta["raw_events_glob"].startswith(f"{var_dir}/lake/raw_events/")


def test_dbt_project_spells_the_canonical_vocabulary_of_constants() -> None:
    spec = yaml.safe_load((DBT_PROJECT_DIR / "models/staging/stg_events.yml").read_text())
    (event_name,) = [c for c in spec["models"][0]["columns"] if c["name"] == "event_name"]
    (accepted,) = [t["accepted_values"] for t in event_name["data_tests"] if "accepted_values" in t]
    assert tuple(accepted["arguments"]["values"]) == (*VOCABULARY, "price_quote")


def test_sessions_orders_the_trajectory_by_time_then_batch_then_source_row(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    session = _session(warehouse, "s_span")
    assert session["trajectory"] == [
        "session_start",
        "view_item_page",
        "hover_over_title",
        "add_item_to_cart",
        "purchase_complete",
    ]
    assert session["product_ids"] == [None, "p1", "p1", "p1", "p1"]


def test_sessions_spanning_two_batches_counts_both(warehouse: duckdb.DuckDBPyConnection) -> None:
    session = _session(warehouse, "s_span")
    assert (session["n_events"], session["n_price_quotes"], session["n_batches"]) == (5, 2, 2)
    assert session["first_batch_id"] == BATCH_A
    assert session["started_at"] == T0.replace(tzinfo=None)
    assert session["ended_at"] == (T0 + timedelta(seconds=4)).replace(tzinfo=None)
    assert session["duration_s"] == pytest.approx(4.0)
    assert (session["store"], session["experiment_id"]) == ("hotel", "x1")


def test_stg_events_gives_utc_times_whatever_the_session_time_zone(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    """stg_events is a view, evaluated in the reader's session (Dagster's, not dbt's)."""
    cursor = warehouse.cursor()
    cursor.execute("set session TimeZone = 'America/New_York'")
    (event_at,) = cursor.execute(
        "select event_at from stg_events where event_id = 'span-1'"
    ).fetchone()
    assert event_at == T0.replace(tzinfo=None)


def test_stg_events_keeps_where_each_timestamp_came_from(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    rows = warehouse.execute(
        "select ts_source, count(*) from stg_events group by ts_source order by ts_source"
    ).fetchall()
    assert rows == [("kafka_record", 1), ("payload", 13)]


def test_events_reingested_in_a_later_batch_are_counted_once(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    session = _session(warehouse, "s_dup")
    assert session["trajectory"] == ["session_start", "search"]
    assert (session["n_events"], session["n_batches"]) == (2, 1)
    n_raw, n_unique = warehouse.execute(
        "select (select count(*) from stg_events), (select count(*) from int_events_deduplicated)"
    ).fetchone()
    assert (n_raw, n_unique) == (14, 13)


@pytest.mark.parametrize(
    ("session_id", "actor", "label_source", "is_labeled", "n_conflicting"),
    [
        ("s_span", "human", "experiment", True, 0),
        ("s_dup", "agent", "actor_column", True, 0),
        ("s_unlabeled", "unknown", "none", False, 0),
        ("s_conflict", "unknown", "none", False, 1),
    ],
)
def test_session_labels_resolves_each_session_to_one_actor(
    warehouse: duckdb.DuckDBPyConnection,
    session_id: str,
    actor: str,
    label_source: str,
    is_labeled: bool,
    n_conflicting: int,
) -> None:
    row = warehouse.execute(
        "select actor, label_source, is_labeled, n_conflicting_labels"
        " from session_labels where session_id = ?",
        [session_id],
    ).fetchone()
    assert row == (actor, label_source, is_labeled, n_conflicting)
    session = _session(warehouse, session_id)
    assert (session["actor"], session["label_source"]) == (actor, label_source)


def test_store_activity_counts_per_store_actor_and_utc_day(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    rows = warehouse.execute(
        "select store_activity_id, n_sessions, n_events, n_purchases, mean_price_quoted"
        " from store_activity order by store_activity_id"
    ).fetchall()
    assert rows == [
        ("airline|agent|2025-01-01", 1, 1, 0, None),
        ("airline|agent|2025-01-02", 1, 1, 0, None),
        ("hotel|human|2025-01-01", 1, 2, 0, 100.0),
        ("hotel|human|2025-01-02", 1, 3, 1, 110.0),
        ("hotel|unknown|2025-01-01", 2, 3, 0, None),
        ("hotel|unknown|2025-01-02", 1, 1, 0, None),
    ]


def test_dbt_build_fails_on_an_unknown_store_unless_it_is_configured(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _write_batch(
        data_dir, BATCH_A, [_row("shop-1", BATCH_A, 0, "s_shop", 0, "search", store="shop")]
    )
    result = _invoke_dbt("build", data_dir, tmp_path / "default")
    assert not result.success
    failed_tests = [n.split(".")[2] for n in _failed_nodes(result) if n.startswith("test.")]
    assert failed_tests == ["accepted_values_stg_events_store___var_phantom_stores_"]
    configured_vars = {
        "phantom_stores": ["hotel", "airline", "shop"],
        "warehouse_path": str(tmp_path / "configured.duckdb"),
    }
    configured = _invoke_dbt(
        "build", data_dir, tmp_path / "configured", "--vars", json.dumps(configured_vars)
    )
    assert configured.success, _failed_nodes(configured)
    assert (tmp_path / "configured.duckdb").is_file()


def test_dbt_build_on_an_empty_lake_fails_with_a_message_naming_the_missing_batches(
    tmp_path: Path,
) -> None:
    result = _invoke_dbt("build", tmp_path / "data", tmp_path)
    assert not result.success
    messages = _failed_nodes(result)
    assert list(messages) == ["model.phantom.stg_events"]
    assert "No raw_events batch found" in messages["model.phantom.stg_events"]
