"""The end-of-run summary `phantom run` prints: sessions per store and class, quarantine reasons."""

from __future__ import annotations

import duckdb
import polars as pl

from phantom_assets.config import Settings


def session_counts(settings: Settings) -> pl.DataFrame:
    """Sessions per store and label (empty frame if the warehouse is not built yet)."""
    if not settings.warehouse_path.exists():
        return pl.DataFrame()
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as conn:
        tables = {
            row[0]
            for row in conn.execute("select table_name from information_schema.tables").fetchall()
        }
        if not {"sessions", "session_labels"} <= tables:
            return pl.DataFrame()
        return conn.execute(
            "select s.store, l.actor, count(*) as n_sessions, sum(s.n_events) as n_events "
            "from sessions s join session_labels l using (session_id) "
            "group by all order by all"
        ).pl()


def quarantine_counts(settings: Settings) -> pl.DataFrame:
    """Quarantined rows per reason over every batch."""
    files = settings.lake.all_quarantine()
    if not files:
        return pl.DataFrame(
            {"reason": [], "n_rows": []}, schema={"reason": pl.Utf8, "n_rows": pl.UInt32}
        )
    return (
        pl.scan_parquet(files)
        .group_by("reason")
        .agg(n_rows=pl.len())
        .sort("n_rows", descending=True)
        .collect()
    )


def render_summary(settings: Settings) -> str:
    """Plain-text summary for the terminal."""
    lines = ["", "== PHANTOM summary ==", "sessions per store and class:"]
    sessions = session_counts(settings)
    if sessions.height == 0:
        lines.append("  (warehouse not built)")
    for row in sessions.iter_rows(named=True):
        lines.append(
            f"  {row['store']:<8} {row['actor']:<8} {row['n_sessions']:>6} sessions "
            f"{row['n_events']:>8} events"
        )
    quarantine = quarantine_counts(settings)
    lines.append(f"quarantined rows: {int(quarantine['n_rows'].sum())}")
    lines.extend(
        f"  {row['reason']:<24} {row['n_rows']:>6}" for row in quarantine.iter_rows(named=True)
    )
    lines.append(f"lake:      {settings.lake_dir}")
    lines.append(f"warehouse: {settings.warehouse_path}")
    lines.append(f"reports:   {settings.reports_dir}")
    return "\n".join(lines)
