"""Store prices from the price logs
(docs/method.md#store-prices-from-the-price-logs, docs/method.md#observed-coi).

    quotes = quote_features(raw_events)                 # one row per price log (+ `reason`)
    store_quotes = quotes.filter(pl.col("store") == s)
    model = fit_price_model(store_quotes)               # anchors, markup curve, quote noise
    write_store_prices(model, lake / "store_prices" / f"store={s}")
    coi = observed_coi(store_quotes, model.anchors)     # premium by class, clustered CIs
    diff = coi_difference(store_quotes, model.anchors)  # human - agent, Welch cluster t
    figure = plot_observed_coi(coi, diff, s)

`exclusion_counts` counts the price logs by outcome; `view_quotes` keeps the usable item-view
quotes, the only ones the price model and the observed COI use (cart and checkout logs repeat the
price locked at the view).
"""

from phantom_assets.market.prices.coi import (
    COI_SCHEMA,
    DIFFERENCE_METHOD,
    CoiDifference,
    coi_difference,
    observed_coi,
)
from phantom_assets.market.prices.features import (
    QUOTE_COLUMNS,
    exclusion_counts,
    quote_features,
    signal_column,
    view_quotes,
)
from phantom_assets.market.prices.model import PriceFitParams, fit_price_model, markup_at_scale
from phantom_assets.market.prices.plots import plot_observed_coi
from phantom_assets.market.prices.result import (
    ANCHOR_SCHEMA,
    PriceModel,
    declared_price_model,
    price_model_markdown,
)
from phantom_assets.market.prices.store import read_store_prices, write_store_prices

__all__ = [
    "ANCHOR_SCHEMA",
    "COI_SCHEMA",
    "DIFFERENCE_METHOD",
    "QUOTE_COLUMNS",
    "CoiDifference",
    "PriceFitParams",
    "PriceModel",
    "coi_difference",
    "declared_price_model",
    "exclusion_counts",
    "fit_price_model",
    "markup_at_scale",
    "observed_coi",
    "plot_observed_coi",
    "price_model_markdown",
    "quote_features",
    "read_store_prices",
    "signal_column",
    "view_quotes",
    "write_store_prices",
]
