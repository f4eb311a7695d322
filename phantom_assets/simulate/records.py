"""Turn emitted interaction codes into the record columns: event names, pages, metadata JSON.

The event metadata is built as one typed column per key of `raw_formats.METADATA_KEYS` and then
serialised to JSON text holding only the non-null keys (in `METADATA_KEYS` order), with polars
expressions -- no Python per row. `METADATA_DTYPE` decodes that text back into typed fields.
"""

from __future__ import annotations

import polars as pl

from phantom_assets.constants import (
    FILTER_EVENTS,
    HOVER_EVENTS,
    PRICE_QUOTE_EVENT,
    VOCABULARY,
)
from phantom_assets.schema.raw_formats import METADATA_KEYS
from phantom_assets.simulate.behaviour import CART_PAGE, CHECKOUT_PAGE, ITEM_PAGE, PAGES
from phantom_assets.simulate.catalog import Catalog

__all__ = ["EVENT_NAMES", "METADATA_DTYPE", "metadata_json", "record_columns"]

EVENT_NAMES: tuple[str, ...] = (*VOCABULARY, PRICE_QUOTE_EVENT)
_INT_KEYS = ("dateIndex", "dwellTime", "itemCount", "nights")
_FLOAT_KEYS = ("price", "total")
METADATA_DTYPE = pl.Struct(
    {
        key: pl.Int64 if key in _INT_KEYS else pl.Float64 if key in _FLOAT_KEYS else pl.String
        for key in METADATA_KEYS
    }
)
_CLICK_TEXT = {
    "learn_more_about_item": "Learn more",
    "add_item_to_cart": "Add to cart",
    "remove_item": "Remove",
    "checkout_start": "Proceed to checkout",
    "purchase_complete": "Confirm and pay",
    "filter_for_date": "Dates",
    "filter_for_amenities": "Amenities",
    "filter_for_price": "Price range",
    "sort_change": "Sort by",
}
_TYPE = {
    "session_start": "landing",
    "page_view": "navigation",
    "search": "text",
    "filter_for_date": "date",
    "filter_for_amenities": "amenities",
    "filter_for_price": "price_range",
    "sort_change": "price_asc",
    **{e: e.removeprefix("hover_over_") for e in HOVER_EVENTS},
}
_BUTTON_TEXT = {ITEM_PAGE: "Book now", CART_PAGE: "Proceed to checkout", CHECKOUT_PAGE: "Pay now"}


def _element_text(catalog: Catalog) -> pl.Expr:
    """Text of the element an interaction concerns (hover target, clicked button, query)."""
    event, has_product = pl.col("event"), pl.col("product_id").is_not_null()
    noun = "room" if catalog.store == "hotel" else "fare"
    link = "See all photos" if catalog.store == "hotel" else "Baggage allowance"
    return (
        pl.when(pl.col("record_type") != "interaction")
        .then(None)
        .when(event.is_in(["view_item_page", "hover_over_title"]) & has_product)
        .then(pl.col("product_name"))
        .when(event == "hover_over_title")
        .then(pl.lit("Top deals"))
        .when(event == "hover_over_paragraph")
        .then(
            pl.when(has_product)
            .then(pl.lit(f"About this {noun}"))
            .otherwise(pl.lit("Free cancellation on selected offers"))
        )
        .when(event == "hover_over_link")
        .then(pl.when(has_product).then(pl.lit(link)).otherwise(pl.lit("Back to results")))
        .when(event == "hover_over_button")
        .then(
            pl.col("page_code").replace_strict(
                _BUTTON_TEXT, default="Search", return_dtype=pl.String
            )
        )
        .when(event == "search")
        .then(pl.col("query"))
        .otherwise(event.replace_strict(_CLICK_TEXT, default=None, return_dtype=pl.String))
    )


def record_columns(catalog: Catalog) -> list[pl.Expr]:
    """Expressions deriving `page` and the typed metadata columns from the coded columns.

    Expects columns: event (name), page_code, product_id, product_name, record_type, gap_ms,
    quote, referrer, date_index, n_affordable, n_preferred, query, and the product attributes
    roomType, nights, cabinClass, flightType, fareRule.
    """
    store, event = catalog.store, pl.col("event")
    item_path = "room" if store == "hotel" else "flight"
    page = (
        pl.when(pl.col("page_code") == ITEM_PAGE)
        .then(pl.concat_str(pl.lit(f"/{store}/{item_path}/"), pl.col("product_id")))
        .otherwise(
            pl.col("page_code").replace_strict(
                {
                    i: f"/{store}" if name == "landing" else f"/{store}/{name}"
                    for i, name in enumerate(PAGES)
                },
                return_dtype=pl.String,
            )
        )
    )
    interaction = pl.col("record_type") == "interaction"
    n_products = catalog.size
    item_count = (
        pl.when(event.is_in(["search", "sort_change"]))
        .then(pl.lit(n_products))
        .when(event == "filter_for_price")
        .then(pl.col("n_affordable"))
        .when(event == "filter_for_amenities")
        .then(pl.col("n_preferred"))
        .when(event == "filter_for_date")
        .then(n_products - pl.col("date_index") % 4)
        .when(event == "remove_item")
        .then(pl.lit(0))
        .when(event.is_in(["add_item_to_cart", "checkout_start", "purchase_complete"]))
        .then(pl.lit(1))
    )
    return [
        page.alias("page"),
        pl.when(event == "filter_for_date").then(pl.col("date_index")).alias("dateIndex"),
        pl.when(interaction).then(pl.col("gap_ms")).alias("dwellTime"),
        _element_text(catalog).alias("elementText"),
        item_count.cast(pl.Int64).alias("itemCount"),
        pl.when(interaction).then(pl.col("quote")).alias("m_price"),
        pl.when(event == "session_start").then(pl.col("referrer")).alias("referrer"),
        pl.when(event.is_in(["checkout_start", "purchase_complete"]))
        .then(pl.col("quote"))
        .alias("total"),
        event.replace_strict(_TYPE, default=None, return_dtype=pl.String).alias("type"),
    ]


def metadata_json() -> pl.Expr:
    """JSON text of the non-null metadata keys (expects one column per key; `price` as m_price)."""
    parts = []
    for key in METADATA_KEYS:
        col = pl.col("m_price" if key == "price" else key)
        if key in _INT_KEYS or key in _FLOAT_KEYS:
            value = col.cast(pl.String)
        else:
            escaped = col.str.replace_all("\\", "\\\\", literal=True)
            value = pl.concat_str(
                pl.lit('"'), escaped.str.replace_all('"', '\\"', literal=True), pl.lit('"')
            )
        parts.append(pl.concat_str(pl.lit(f'"{key}":'), value))
    body = pl.concat_str(parts, separator=",", ignore_nulls=True)
    return pl.concat_str(pl.lit("{"), body, pl.lit("}")).alias("metadata")


assert set(_CLICK_TEXT) | set(_TYPE) <= set(VOCABULARY) and set(FILTER_EVENTS) <= set(_TYPE)
