"""Small simulated corpora shared by the simulator tests (a few dozen sessions each)."""

from __future__ import annotations

import polars as pl
import pytest

from phantom_assets.simulate import SimulatedCorpus, SimulationParams, simulate_events

SMALL = SimulationParams(seed=7, humans_per_store=12, agents_per_store=6)


@pytest.fixture(scope="session")
def small_corpus() -> SimulatedCorpus:
    """Both stores at the default separability."""
    return simulate_events(SMALL)


def session_stats(events: pl.DataFrame) -> pl.DataFrame:
    """Per session: actor, number of interactions, median gap (ms) and event-category shares."""
    interactions = events.filter(pl.col("record_type") == "interaction").sort("session_id", "seq")
    return (
        interactions.with_columns(
            pl.col("ts").diff().over("session_id").dt.total_milliseconds().alias("gap")
        )
        .group_by("session_id", maintain_order=True)
        .agg(
            pl.col("actor").first(),
            pl.col("experiment_id").first(),
            pl.len().alias("n"),
            pl.col("gap").median().alias("median_gap"),
            pl.col("event").str.starts_with("hover_").mean().alias("hover_share"),
            pl.col("event")
            .is_in(
                [
                    "search",
                    "filter_for_date",
                    "filter_for_amenities",
                    "filter_for_price",
                    "sort_change",
                ]
            )
            .mean()
            .alias("filter_share"),
            pl.col("event")
            .is_in(["page_view", "view_item_page", "learn_more_about_item"])
            .mean()
            .alias("navigation_share"),
        )
    )
