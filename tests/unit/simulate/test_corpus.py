"""simulate_events: schema, determinism, session invariants and the human/agent gap."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

from phantom_assets.constants import PRICE_QUOTE_EVENT, VOCABULARY
from phantom_assets.schema.raw_formats import EXPERIMENT_COLUMNS, METADATA_KEYS
from phantom_assets.simulate import (
    EVENT_COLUMNS,
    METADATA_DTYPE,
    SimulatedCorpus,
    SimulationParams,
    simulate_events,
)
from phantom_assets.simulate.behaviour import PRICED_EVENTS
from phantom_assets.simulate.profiles import HUMAN_USER_AGENTS
from phantom_assets.simulate.timing import PRICE_LOG_DELAY_MS

from .conftest import SMALL, session_stats

IDENTICAL = SimulationParams(
    seed=26, humans_per_store=40, agents_per_store=40, separability=0.0, stores=("hotel",)
)


@pytest.fixture(scope="module")
def identical_corpus() -> SimulatedCorpus:
    return simulate_events(IDENTICAL)


def test_simulate_events_returns_the_documented_columns_and_dtypes(small_corpus) -> None:
    schema = small_corpus.events.schema
    assert tuple(schema) == EVENT_COLUMNS
    assert schema["ts"] == pl.Datetime("ms", "UTC")
    assert schema["price"] == pl.Float64 and schema["seq"] == pl.Int64
    assert tuple(small_corpus.experiments.columns) == EXPERIMENT_COLUMNS
    assert set(small_corpus.events["store"].unique()) == {"hotel", "airline"}


def test_simulate_events_is_deterministic_per_seed(small_corpus) -> None:
    again = simulate_events(SMALL)
    assert_frame_equal(again.events, small_corpus.events)
    assert_frame_equal(again.experiments, small_corpus.experiments)
    other = simulate_events(dataclasses.replace(SMALL, seed=SMALL.seed + 1))
    assert not other.events.equals(small_corpus.events)


def test_store_data_does_not_depend_on_the_other_stores_simulated(small_corpus) -> None:
    hotel_only = simulate_events(dataclasses.replace(SMALL, stores=("hotel",)))
    assert_frame_equal(hotel_only.events, small_corpus.events.filter(pl.col("store") == "hotel"))


def test_every_event_is_canonical_or_a_price_quote_on_a_price_log(small_corpus) -> None:
    events = small_corpus.events
    assert set(events["event"].unique()) <= {*VOCABULARY, PRICE_QUOTE_EVENT}
    logs = events.filter(pl.col("record_type") == "price_log")
    assert (logs["event"] == PRICE_QUOTE_EVENT).all()
    assert logs["price"].null_count() == 0 and (logs["price"] > 0).all()
    assert events.filter(pl.col("record_type") == "interaction")["price"].null_count() == (
        events.height - logs.height
    )


def test_sessions_start_with_session_start_and_are_time_ordered(small_corpus) -> None:
    events = small_corpus.events
    first = events.filter(pl.col("seq") == 0)
    assert (first["event"] == "session_start").all()
    assert first.height == events["session_id"].n_unique()
    checks = events.group_by("session_id").agg(
        (pl.col("ts").sort_by("seq").diff().dt.total_milliseconds() > 0).all().alias("increasing"),
        (pl.col("seq").sort() == pl.int_range(pl.len())).all().alias("dense"),
    )
    assert checks["increasing"].all() and checks["dense"].all()


def test_every_priced_interaction_has_one_price_log_right_after_it(small_corpus) -> None:
    events = small_corpus.events.sort("session_id", "seq")
    nxt = events.with_columns(
        pl.col("record_type").shift(-1).over("session_id").alias("next_type"),
        pl.col("product_id").shift(-1).over("session_id").alias("next_product"),
        (pl.col("ts").shift(-1).over("session_id") - pl.col("ts"))
        .dt.total_milliseconds()
        .alias("delay"),
    )
    priced = nxt.filter(pl.col("event").is_in(PRICED_EVENTS))
    assert (priced["next_type"] == "price_log").all()
    assert (priced["next_product"] == priced["product_id"]).all()
    assert priced["delay"].is_between(*PRICE_LOG_DELAY_MS).all()
    assert priced.height == events.filter(pl.col("record_type") == "price_log").height


def test_metadata_is_json_with_known_keys_only(small_corpus) -> None:
    meta = small_corpus.events["metadata"]
    keys = {k for text in meta.sample(200, seed=1) for k in json.loads(text)}
    assert keys <= set(METADATA_KEYS)
    decoded = meta.str.json_decode(METADATA_DTYPE)
    assert decoded.null_count() == 0
    dwell = decoded.struct.field("dwellTime")
    starts = small_corpus.events["event"] == "session_start"
    assert dwell.filter(starts).null_count() == int(starts.sum())


def test_experiments_label_every_session_and_match_the_actor(small_corpus) -> None:
    joined = small_corpus.events.join(
        small_corpus.experiments, left_on="experiment_id", right_on="experimentId", how="left"
    )
    assert joined["xp_human_only"].null_count() == 0
    assert (joined["xp_human_only"] == (joined["actor"] == "human")).all()
    assert (joined["xp_market_mode"] == joined["store"]).all()


def test_agents_use_more_sessions_per_experiment_than_humans(small_corpus) -> None:
    per_xp = small_corpus.events.group_by("experiment_id").agg(
        pl.col("actor").first(), pl.col("session_id").n_unique().alias("sessions")
    )
    human = per_xp.filter(pl.col("actor") == "human")["sessions"]
    agent = per_xp.filter(pl.col("actor") == "agent")["sessions"]
    assert human.max() <= 2 and agent.min() >= 4
    assert agent.mean() > 2 * human.mean()


def test_timing_and_hovering_differ_as_designed_at_full_separability(small_corpus) -> None:
    per_session = session_stats(small_corpus.events)
    human = per_session.filter(pl.col("actor") == "human")
    agent = per_session.filter(pl.col("actor") == "agent")
    assert stats.ks_2samp(human["median_gap"], agent["median_gap"]).pvalue < 1e-6
    assert human["median_gap"].median() > 2 * agent["median_gap"].median()
    assert human["hover_share"].mean() > 5 * agent["hover_share"].mean()
    gaps = (
        small_corpus.events.filter(
            pl.col("record_type") == "interaction", pl.col("actor") == "agent"
        )
        .sort("session_id", "seq")
        .select(pl.col("ts").diff().over("session_id").dt.total_milliseconds())
        .drop_nulls()
        .to_series()
        .to_numpy()
    )
    assert np.quantile(gaps, 0.02) >= 300 and np.quantile(gaps, 0.98) <= 2_000
    human_gaps = (
        small_corpus.events.filter(
            pl.col("record_type") == "interaction", pl.col("actor") == "human"
        )
        .sort("session_id", "seq")
        .select(pl.col("ts").diff().over("session_id").dt.total_milliseconds())
        .drop_nulls()
        .to_series()
        .to_numpy()
    )
    assert np.std(np.log(human_gaps)) > 2 * np.std(np.log(gaps))  # heavy-tailed and bursty


@pytest.mark.parametrize(
    "column", ["median_gap", "n", "hover_share", "filter_share", "navigation_share"]
)
def test_humans_and_agents_match_in_distribution_at_zero_separability(
    identical_corpus, column: str
) -> None:
    per_session = session_stats(identical_corpus.events)
    human = per_session.filter(pl.col("actor") == "human")[column].to_numpy()
    agent = per_session.filter(pl.col("actor") == "agent")[column].to_numpy()
    assert stats.ks_2samp(human, agent).pvalue > 0.01


def test_agents_are_laid_out_like_humans_at_zero_separability(identical_corpus) -> None:
    per_xp = identical_corpus.events.group_by("experiment_id").agg(
        pl.col("actor").first(), pl.col("session_id").n_unique().alias("sessions")
    )
    assert per_xp["sessions"].max() <= 2
    agent_uas = set(identical_corpus.events.filter(pl.col("actor") == "agent")["user_agent"])
    assert agent_uas <= {ua for ua, _ in HUMAN_USER_AGENTS}


def test_half_separability_puts_agents_between_humans_and_default_agents() -> None:
    medians = {}
    for s in (0.0, 0.5, 1.0):
        corpus = simulate_events(dataclasses.replace(SMALL, separability=s, stores=("airline",)))
        per_session = session_stats(corpus.events).filter(pl.col("actor") == "agent")
        medians[s] = per_session["median_gap"].median()
    assert medians[0.0] > medians[0.5] > medians[1.0]
