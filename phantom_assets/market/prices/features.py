"""Price logs joined to the interaction that showed them, with engagement before it
(docs/method.md#store-prices-from-the-price-logs).

A price log (`record_type == "price_log"`, `event == "price_quote"`) follows, a few ms later and in
the same session, the interaction that showed the price (`constants.PRICED_EVENTS`). Within a
session, rows are ordered by `ts`, then source position (`source_row`, then `batch_id`) -- the
warehouse's trajectory order. The showing interaction of a log is the LAST priced interaction of
the same session and product before the log in that order, at most `MAX_QUOTE_DELAY_MS` earlier.

For every candidate signal of `constants.ENGAGEMENT_SIGNALS`, `s_<signal>` is the engagement the
session accumulated before the showing interaction (interactions only; price logs weigh 0).

Only quotes shown at an item view fit the price model (`QUOTE_EVENT`): cart, checkout and purchase
logs repeat the price locked at the view, so using them would count one quote several times. They
are kept (and counted) with their showing event in `event`.

`decision` marks a session's *quoted view*, the market's unit of a purchase decision
(`market.bank`): the last item view before the session's first add-to-cart, else its last item
view. `store_demand` fits purchases at those quotes.

Nothing is silently lost (docs/method.md#bad-input): every price log comes back, with `reason` null
when it is usable and otherwise one of `constants.PRICE_EXCLUSION_REASONS` (first that applies, in
order).
"""

from __future__ import annotations

import polars as pl

from phantom_assets.constants import (
    ABSURD_PRICE_FACTOR,
    CART_LOCK_EVENT,
    ENGAGEMENT_SIGNALS,
    INTERACTION,
    MAX_QUOTE_DELAY_MS,
    PRICE_EXCLUSION_REASONS,
    PRICE_LOG,
    PRICED_EVENTS,
    QUOTE_EVENT,
)

__all__ = [
    "EVENT_INPUT_COLUMNS",
    "QUOTE_COLUMNS",
    "exclusion_counts",
    "quote_features",
    "signal_column",
    "view_quotes",
]

EVENT_INPUT_COLUMNS: tuple[str, ...] = (
    "session_id",
    "experiment_id",
    "store",
    "actor",
    "ts",
    "event",
    "product_id",
    "price",
    "record_type",
    "source_row",
    "batch_id",
)
"""Canonical event columns `quote_features` reads (a subset of `constants.CANONICAL_COLUMNS`)."""
QUOTE_COLUMNS: tuple[str, ...] = (
    "store",
    "session_id",
    "experiment_id",
    "actor",
    "product_id",
    "price",
    "event",
    "ts",
    "shown_ts",
    *(f"s_{name}" for name in ENGAGEMENT_SIGNALS),
    "bought",
    "decision",
    "batch_id",
    "source_row",
    "reason",
)
"""Columns of `quote_features`' frame, in order."""
_KEY = ["session_id", "product_id"]


def signal_column(signal: str) -> str:
    """Name of the engagement column of `signal` (`s_<signal>`).

    Raises:
        ValueError: if `signal` is not a key of `constants.ENGAGEMENT_SIGNALS`.
    """
    if signal not in ENGAGEMENT_SIGNALS:
        raise ValueError(
            f"unknown engagement signal {signal!r}; choose {tuple(ENGAGEMENT_SIGNALS)}"
        )
    return f"s_{signal}"


def _ordered(events: pl.LazyFrame) -> pl.LazyFrame:
    """Events in trajectory order with a global position `pos` and `s_<signal>` before each row."""
    interaction = pl.col("record_type") == INTERACTION
    weights = {
        signal_column(name): pl.when(interaction)
        .then(pl.col("event").replace_strict(w, default=0.0, return_dtype=pl.Float64))
        .otherwise(0.0)
        .fill_null(0.0)
        for name, w in ENGAGEMENT_SIGNALS.items()
    }
    return (
        events.sort("session_id", "ts", "source_row", "batch_id", nulls_last=True)
        .with_row_index("pos")
        .with_columns(pl.col("pos").cast(pl.Int64), **weights)
        .with_columns((pl.col(c).cum_sum() - pl.col(c)).over("session_id") for c in weights)
    )


def _reason(has_show: pl.Expr) -> pl.Expr:
    """The first exclusion reason of a log before duplicates (null = usable); needs `median`."""
    price = pl.col("price")
    valid_price = price.is_not_null() & price.is_finite() & (price > 0)
    absurd = (price > ABSURD_PRICE_FACTOR * pl.col("median")) | (
        price * ABSURD_PRICE_FACTOR < pl.col("median")
    )
    missing, invalid, absurd_name, unmatched, _ = PRICE_EXCLUSION_REASONS
    return (
        pl.when(pl.col("product_id").is_null())
        .then(pl.lit(missing))
        .when(~valid_price)
        .then(pl.lit(invalid))
        .when(absurd)
        .then(pl.lit(absurd_name))
        .when(~has_show)
        .then(pl.lit(unmatched))
        .otherwise(pl.lit(None, dtype=pl.String))
    )


def _duplicate() -> pl.Expr:
    """`duplicate_quote` for a usable log that is not the first usable log of its interaction."""
    usable = pl.col("reason").is_null()
    first = pl.when(usable).then(pl.col("pos")).min().over("session_id", "shown_pos")
    return (
        pl.when(usable & (pl.col("pos") != first))
        .then(pl.lit(PRICE_EXCLUSION_REASONS[-1]))
        .otherwise(pl.col("reason"))
    )


def quote_features(events: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per price log, joined to its session and the interaction that showed it.

    Args:
        events: Canonical events (`raw_events` rows) with at least `EVENT_INPUT_COLUMNS`;
            interactions and price logs of any number of stores and sessions.

    Returns:
        `QUOTE_COLUMNS`, in trajectory order: the log's `store, session_id, experiment_id, actor,
        product_id, price, ts, batch_id, source_row`; `event` and `shown_ts` of the showing
        interaction; `s_<signal>` (Float64) the session's engagement before it under every
        candidate signal; `bought` (the session completed a purchase of the product after the
        showing interaction and before its next view of that product); `decision` (the
        session's quoted view, module docstring); `reason` (null = usable).

    Raises:
        ValueError: naming the missing columns.
    """
    lf = events.lazy()
    missing = [c for c in EVENT_INPUT_COLUMNS if c not in lf.collect_schema().names()]
    if missing:
        raise ValueError(f"events lack the columns {missing}; expected {EVENT_INPUT_COLUMNS}")
    rows = _ordered(lf)
    signals = [signal_column(name) for name in ENGAGEMENT_SIGNALS]
    interactions = rows.filter(
        pl.col("record_type") == INTERACTION, pl.col("product_id").is_not_null()
    )
    shown = interactions.filter(pl.col("event").is_in(PRICED_EVENTS)).select(
        *_KEY, pl.col("pos").alias("shown_pos"), pl.col("ts").alias("shown_ts"), "event", *signals
    )
    views = interactions.filter(pl.col("event") == QUOTE_EVENT).select(
        *_KEY, pl.col("pos").alias("next_view_pos")
    )
    buys = interactions.filter(pl.col("event") == PRICED_EVENTS[-1]).select(
        *_KEY, pl.col("pos").alias("buy_pos")
    )
    quoted = _quoted_views(rows)
    logs = rows.filter(pl.col("record_type") == PRICE_LOG).select(
        "store",
        "session_id",
        "experiment_id",
        "actor",
        "product_id",
        "price",
        "ts",
        "batch_id",
        "source_row",
        "pos",
    )
    delay_ms = (pl.col("ts") - pl.col("shown_ts")).dt.total_milliseconds()
    has_show = pl.col("shown_pos").is_not_null() & (delay_ms <= MAX_QUOTE_DELAY_MS)
    valid = pl.col("price").is_finite() & (pl.col("price") > 0)
    matched = (
        logs.join_asof(shown, left_on="pos", right_on="shown_pos", by=_KEY, check_sortedness=False)
        .with_columns(
            pl.when(valid)
            .then(pl.col("price"))
            .median()
            .over("store", "product_id")
            .alias("median"),
            pl.when(has_show).then(pl.col("shown_pos")).alias("shown_pos"),
        )
        .with_columns(
            _reason(pl.col("shown_pos").is_not_null()).alias("reason"),
            pl.coalesce("shown_pos", "pos").alias("key"),
        )
        .with_columns(_duplicate().alias("reason"))
        .sort("key")
    )
    after = dict(left_on="key", by=_KEY, strategy="forward", check_sortedness=False)
    return (
        matched.join_asof(
            views.sort("next_view_pos"),
            right_on="next_view_pos",
            allow_exact_matches=False,
            **after,
        )
        .join_asof(buys.sort("buy_pos"), right_on="buy_pos", **after)
        .join(quoted, on="session_id", how="left")
        .with_columns(
            (
                pl.col("reason").is_null()
                & (pl.col("event") == QUOTE_EVENT)
                & (pl.col("shown_pos") == pl.col("quoted_pos"))
            )
            .fill_null(False)
            .alias("decision"),
            pl.when(pl.col("reason").is_null())
            .then(
                pl.col("buy_pos").is_not_null()
                & (
                    pl.col("next_view_pos").is_null()
                    | (pl.col("buy_pos") < pl.col("next_view_pos"))
                )
            )
            .alias("bought"),
            pl.when(pl.col("shown_pos").is_not_null()).then(pl.col("event")).alias("event"),
            pl.when(pl.col("shown_pos").is_not_null()).then(pl.col("shown_ts")).alias("shown_ts"),
            *(pl.when(pl.col("shown_pos").is_not_null()).then(pl.col(c)).alias(c) for c in signals),
        )
        .sort("pos")
        .select(QUOTE_COLUMNS)
        .collect()
    )


def _quoted_views(rows: pl.LazyFrame) -> pl.LazyFrame:
    """`session_id, quoted_pos`: each session's last item view before its first add-to-cart
    (else its last item view), in trajectory position."""
    interaction = pl.col("record_type") == INTERACTION
    first_add = (
        pl.when(interaction & (pl.col("event") == CART_LOCK_EVENT)).then(pl.col("pos")).min()
    )
    return (
        rows.with_columns(first_add.over("session_id").alias("first_add"))
        .filter(
            interaction,
            pl.col("event") == QUOTE_EVENT,
            pl.col("first_add").is_null() | (pl.col("pos") < pl.col("first_add")),
        )
        .group_by("session_id")
        .agg(pl.col("pos").max().alias("quoted_pos"))
    )


def view_quotes(quotes: pl.DataFrame) -> pl.DataFrame:
    """The usable quotes shown at an item view: the rows the price model and observed COI use."""
    return quotes.filter(pl.col("reason").is_null(), pl.col("event") == QUOTE_EVENT)


def exclusion_counts(quotes: pl.DataFrame) -> dict[str, int]:
    """Price logs by outcome: every exclusion reason (zeros included), `view_quotes` (usable view
    quotes) and `repeat_quotes` (usable cart/checkout/purchase logs repeating a locked price)."""
    usable = quotes.filter(pl.col("reason").is_null())
    counted = dict(quotes.group_by("reason").len().drop_nulls("reason").iter_rows())
    n_view = int((usable["event"] == QUOTE_EVENT).sum())
    return {
        **{reason: int(counted.get(reason, 0)) for reason in PRICE_EXCLUSION_REASONS},
        "view_quotes": n_view,
        "repeat_quotes": usable.height - n_view,
    }
