"""The demo world's demand (`simulate.demand`): engagement pricing is worth 5-20% over the best
uniform price by the world's own truth, purchases respond to the quote through a price test,
the storefront's own pricing is about the best for its humans, and agents' principals value like
the human population while browsing like agents."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import polars as pl
import pytest

from phantom_assets.constants import FILTER_EVENTS, STORES
from phantom_assets.simulate import SimulationParams, simulate_events
from phantom_assets.simulate.demand import DEMO_DEMAND, world_value

COST_SHARE = 0.5  # the market's declared marginal cost (MarketConfig.cost_share)


@functools.cache
def truth(humans: int = 3_000, agents: int = 300, arms: tuple[float, ...] | None = None):
    demand = DEMO_DEMAND if arms is None else dataclasses.replace(DEMO_DEMAND, arms=arms)
    params = SimulationParams(
        seed=3, humans_per_store=humans, agents_per_store=agents, demand=demand
    )
    return simulate_events(params).decisions


@pytest.mark.parametrize("store", STORES)
def test_engagement_pricing_is_worth_five_to_twenty_percent_in_the_worlds_own_truth(store):
    humans = truth().filter(pl.col("store") == store, pl.col("actor") == "human")
    value = world_value(DEMO_DEMAND, humans["engagement"].drop_nulls().to_numpy(), COST_SHARE)
    assert 0.05 <= value.value <= 0.20, value
    # The storefront prices about as well as it can for its humans (revealed preference).
    assert value.store_profit >= 0.99 * value.profit
    assert value.markup == pytest.approx(DEMO_DEMAND.markup, abs=0.05)


def test_a_world_where_engagement_says_nothing_leaves_engagement_pricing_worth_nothing():
    flat = dataclasses.replace(DEMO_DEMAND, beta=0.0)
    humans = truth().filter(pl.col("actor") == "human")["engagement"].drop_nulls().to_numpy()
    assert world_value(flat, humans, COST_SHARE).value < 0.005


def test_purchases_respond_to_the_quote_at_equal_engagement():
    """The price test moves quotes at equal engagement: higher arms convert less."""
    humans = truth().filter(
        pl.col("actor") == "human", pl.col("decides"), pl.col("engagement") == 2.0
    )
    would = humans.with_columns(buys=pl.col("in_market") & (pl.col("valuation") >= pl.col("quote")))
    by_arm = (
        would.with_columns(arm=(pl.col("price_level") * 10).round(0))
        .group_by("arm")
        .agg(pl.col("buys").mean())
        .sort("arm")
    )
    assert by_arm.height == len(DEMO_DEMAND.arms)
    buys = by_arm["buys"].to_numpy()  # the cheapest arms convert nearly every shopper in market
    assert buys[0] > buys[-1] + 0.3 and np.all(np.diff(buys[1:]) < 0)


def test_without_a_price_test_quotes_vary_only_by_the_sessions_noise():
    sessions = truth(300, 30, arms=(1.0,))
    spread = sessions["price_level"].log().std()
    assert spread == pytest.approx(DEMO_DEMAND.quote_noise, rel=0.15)


def test_agents_principals_value_like_humans_but_agents_engage_little():
    decided = truth().filter(pl.col("decides"))
    humans, agents = (decided.filter(pl.col("actor") == actor) for actor in ("human", "agent"))
    g = lambda s: DEMO_DEMAND.g(s.to_numpy())  # noqa: E731 -- the world's g
    engaged = humans["engagement"].drop_nulls()
    human_mean = float(np.mean(DEMO_DEMAND.mu + DEMO_DEMAND.beta * g(engaged)))
    assert agents["valuation"].mean() == pytest.approx(human_mean, abs=0.03)
    assert agents["engagement"].mean() < 0.5 < humans["engagement"].mean()


@pytest.mark.parametrize("search", [False, True])
def test_an_agent_that_searches_before_buying_shows_itself_but_not_its_engagement(search):
    # The planted world of `agents_search_before_buying`: the buy session is as unengaged at its
    # quote as ever, but its searches and filters come before the quote for a detector to see.
    params = SimulationParams(
        seed=3, humans_per_store=60, agents_per_store=30, agents_search_before_buying=search
    )
    corpus = simulate_events(params)
    buys = corpus.decisions.filter(pl.col("actor") == "agent", pl.col("decides"))
    assert buys.height == 2 * 30 and (buys["engagement"] == 0).all()
    filtering = (
        corpus.events.filter(
            pl.col("session_id").is_in(buys["session_id"].implode()),
            pl.col("event").is_in(FILTER_EVENTS),
        )
        .select("session_id")
        .unique()
        .height
    )
    assert (filtering > 0.8 * buys.height) if search else filtering == 0
