"""Store prices from the price logs (DESIGN §5 "Market v3", §12 `store_prices`, `observed_coi`).

    quotes = quote_features(raw_events)                 # one row per price log (+ `reason`)
    model = fit_price_model(quotes.filter(store == s))  # anchors, markup curve, quote noise
    write_store_prices(model, lake / "store_prices" / f"store={s}")

`exclusion_counts` counts the price logs by outcome; `view_quotes` keeps the usable item-view
quotes, the only ones the price model and the observed COI use (cart and checkout logs repeat the
price locked at the view).
"""

from phantom_assets.market.prices.features import (
    QUOTE_COLUMNS,
    exclusion_counts,
    quote_features,
    signal_column,
    view_quotes,
)
from phantom_assets.market.prices.model import PriceFitParams, fit_price_model
from phantom_assets.market.prices.result import ANCHOR_SCHEMA, PriceModel, declared_price_model
from phantom_assets.market.prices.store import read_store_prices, write_store_prices

__all__ = [
    "ANCHOR_SCHEMA",
    "QUOTE_COLUMNS",
    "PriceFitParams",
    "PriceModel",
    "declared_price_model",
    "exclusion_counts",
    "fit_price_model",
    "quote_features",
    "read_store_prices",
    "signal_column",
    "view_quotes",
    "write_store_prices",
]
