"""Builders for the store-price tests: hand-made event tables and re-priced demo corpora."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import polars as pl

from phantom_assets.constants import DEMAND_WEIGHTS, INTERACTION, PRICE_LOG, PRICE_QUOTE_EVENT
from phantom_assets.simulate.corpus import simulate_events
from phantom_assets.simulate.demand import DEMO_DEMAND
from phantom_assets.simulate.params import SimulationParams

T0 = datetime(2025, 6, 2, tzinfo=UTC)
EVENT_SCHEMA = {
    "session_id": pl.String,
    "experiment_id": pl.String,
    "store": pl.String,
    "actor": pl.String,
    "ts": pl.Datetime("ms", "UTC"),
    "event": pl.String,
    "product_id": pl.String,
    "price": pl.Float64,
    "record_type": pl.String,
    "source_row": pl.Int64,
    "batch_id": pl.String,
}


def events_frame(
    rows: list[tuple], store: str = "hotel", actor: str = "human", batch: str = "b1"
) -> pl.DataFrame:
    """Canonical events from `(session, experiment, ms, event, product, price[, source_row[,
    batch]])` tuples; `event == "price_quote"` rows are price logs; source_row defaults to the
    tuple's position."""
    out = []
    for i, row in enumerate(rows):  # a handful of hand-written rows
        session, xp, ms, event, product, price, *rest = row
        source_row = rest[0] if rest else i
        batch_id = rest[1] if len(rest) > 1 else batch
        record = PRICE_LOG if event == PRICE_QUOTE_EVENT else INTERACTION
        out.append(
            (session, xp, store, actor, ms, event, product, price, record, source_row, batch_id)
        )
    schema = {**EVENT_SCHEMA, "ts": pl.Int64}
    frame = pl.DataFrame(out, schema=schema, orient="row")
    ts = (pl.col("ts") + int(T0.timestamp() * 1000)).cast(pl.Datetime("ms"))
    return frame.with_columns(ts.dt.replace_time_zone("UTC"))


@functools.cache
def demo_events(
    seed: int = 11, humans: int = 120, agents: int = 40, arms: tuple[float, ...] | None = None
) -> pl.DataFrame:
    """Both stores of the demo simulator as canonical events (source_row = seq, one batch);
    `arms`: another price test than the demo's ((1.0,): none)."""
    demand = DEMO_DEMAND if arms is None else dataclasses.replace(DEMO_DEMAND, arms=arms)
    corpus = simulate_events(
        SimulationParams(seed=seed, humans_per_store=humans, agents_per_store=agents, demand=demand)
    )
    return corpus.events.with_columns(source_row=pl.col("seq"), batch_id=pl.lit("demo"))


def reprice(
    events: pl.DataFrame,
    base: dict[str, float],
    markup: Callable[[np.ndarray], np.ndarray],
    noise: Callable[[np.random.Generator, int], np.ndarray],
    seed: int = 0,
) -> pl.DataFrame:
    """Rewrite the demo corpus's quotes with another pricing rule.

    A view quote becomes `round(base[product] · markup(dp) · noise, 2)`, `dp` the demand-proxy
    engagement of the session before the view (computed here independently: the demo writes each
    price log right after its interaction); cart / checkout / purchase logs repeat the price of
    the session's latest view of that product, as the storefront does.

    Args:
        events: Demo events (`demo_events`).
        base: New base price per product id.
        markup: Multiplier from the engagement before the view (vectorized).
        noise: (rng, n) -> n multiplicative noise factors, one per view quote.
        seed: Seeds the noise.
    """
    interaction = (pl.col("record_type") == INTERACTION).cast(pl.Float64)
    weight = interaction * pl.col("event").replace_strict(
        DEMAND_WEIGHTS, default=0.0, return_dtype=pl.Float64
    )
    frame = (
        events.sort("store", "session_id", "seq")
        .with_row_index("i")
        .with_columns(dp=(weight.cum_sum() - weight).over("session_id"))
        .with_columns(
            shown=pl.col("event").shift(1).over("session_id"),
            dp_shown=pl.col("dp").shift(1).over("session_id"),
        )
    )
    views = frame.filter(pl.col("record_type") == PRICE_LOG, pl.col("shown") == "view_item_page")
    base_price = views["product_id"].replace_strict(base, return_dtype=pl.Float64).to_numpy()
    factor = markup(views["dp_shown"].to_numpy()) * noise(np.random.default_rng(seed), views.height)
    new = views.select("i", view_price=pl.Series(np.round(base_price * factor, 2)))
    locked = pl.col("view_price").forward_fill().over("session_id", "product_id")
    return (
        frame.join(new, on="i", how="left")
        .with_columns(
            price=pl.when(pl.col("record_type") == PRICE_LOG).then(locked).otherwise("price")
        )
        .drop("i", "dp", "shown", "dp_shown", "view_price")
    )


def log_sd(noise: Callable[[np.random.Generator, int], np.ndarray]) -> float:
    """SD of log(noise) by Monte Carlo (400,000 draws)."""
    return float(np.log(noise(np.random.default_rng(99), 400_000)).std())
