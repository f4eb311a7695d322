"""Market group: the store's own prices from its price logs (`store_prices`) and the premium each
class was actually quoted above them (`observed_coi`) --
docs/method.md#store-prices-from-the-price-logs and docs/method.md#observed-coi."""

import dagster as dg
import polars as pl

from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.assets.store_slices import read_store_slice
from phantom_assets.config import Settings
from phantom_assets.constants import PRICE_LOG
from phantom_assets.lake import (
    ANCHORS_FILE,
    COI_DIFFERENCE_FILE,
    OBSERVED_COI_FILE,
    OBSERVED_COI_PLOT_FILE,
    PRICE_MODEL_FILE,
    QUOTES_FILE,
)
from phantom_assets.market.prices import (
    PriceFitParams,
    coi_difference,
    fit_price_model,
    observed_coi,
    plot_observed_coi,
    price_model_markdown,
    quote_features,
    read_store_prices,
    write_store_prices,
)
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

PRICES_CODE = code_version_of(
    "phantom_assets.assets.prices", "phantom_assets.market.prices", "phantom_assets.constants"
)
PRICE_READS = (
    "market.engagement_scale_share",
    "market.declared_markup",
    "market.declared_quote_noise",
    "market.declared_anchor_range",
)
NO_LOG_LOST = "every_price_log_is_fitted_or_excluded_with_a_reason"
FROM_LOGS = "prices_come_from_the_logs"
QUOTE_EVENTS_MART = "price_quote_events"
# Every event of the store's quoted sessions, in the canonical names `quote_features` reads.
QUOTE_EVENT_COLUMNS = (
    "event_id",
    "batch_id",
    "source_row",
    "session_id",
    "experiment_id",
    "store",
    pl.col("event_at").alias("ts"),
    pl.col("event_name").alias("event"),
    "record_type",
    "product_id",
    "price",
    pl.col("actor").fill_null("unknown"),
)


def store_prices(context: dg.AssetExecutionContext, storage: StorageResource):
    """The store's prices from its price logs: per-product anchor (the zero-engagement quote),
    the markup curve and quote noise with experiment-clustered CIs, the engagement signal it
    prices on (`anchors.parquet`, `price_model.json`); every price log with its engagement at
    the quote and, when excluded, the reason (`quotes.parquet`: the decisions `store_demand`
    fits are its `decision` rows). Declared defaults when the logs are too few (`source =
    declared`, with why)."""
    store, settings = context.partition_key, storage.settings()
    events = read_store_slice(settings.lake, store, QUOTE_EVENTS_MART).select(QUOTE_EVENT_COLUMNS)
    quotes = quote_features(events)
    market = settings.market
    model = fit_price_model(quotes, PriceFitParams(declared_s0_share=market.engagement_scale_share))
    folder = settings.lake.store_prices_dir(store)
    write_store_prices(model, folder)
    write_parquet_atomic(quotes, folder / QUOTES_FILE)
    names = (ANCHORS_FILE, PRICE_MODEL_FILE, QUOTES_FILE)
    paths = [folder / name for name in names]
    version, artifacts = artifact_version(*paths)
    n_logs = int((events["record_type"] == PRICE_LOG).sum())
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            model.anchors,
            paths[0],
            **artifacts,
            source=model.source,
            reason=model.reason,
            signal=model.signal,
            markup=model.markup,
            quote_noise=model.quote_noise,
            n_price_logs=n_logs,
            n_quotes_fitted=model.n_quotes,
            **model.excluded,
            price_model=dg.MetadataValue.md(price_model_markdown(model)),
        ),
    )
    yield dg.AssetCheckResult(
        check_name=NO_LOG_LOST,
        passed=quotes.height == n_logs,
        metadata={"price_logs": n_logs, "rows": quotes.height},
    )
    yield dg.AssetCheckResult(
        check_name=FROM_LOGS,
        passed=model.source == "logs",
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"source": model.source, "reason": model.reason},
    )


def observed_coi_asset(context: dg.AssetExecutionContext, storage: StorageResource):
    """What each class was actually quoted above the store's anchors (`observed_coi.parquet`:
    class, premium = quote-weighted mean of price/anchor − 1, CI clustered by experiment,
    n_quotes, n_experiments), the human − agent difference with its test
    (`coi_difference.json`) and a plot: the thesis' measurement on the store's own logs."""
    store, settings = context.partition_key, storage.settings()
    prices_dir, folder = (
        settings.lake.store_prices_dir(store),
        settings.lake.observed_coi_dir(store),
    )
    quotes = pl.read_parquet(prices_dir / QUOTES_FILE)
    anchors = read_store_prices(prices_dir).anchors
    coi, difference = observed_coi(quotes, anchors), coi_difference(quotes, anchors)
    write_parquet_atomic(coi, folder / OBSERVED_COI_FILE)
    write_json_atomic(difference.to_dict(), folder / COI_DIFFERENCE_FILE)
    figure = plot_observed_coi(coi, difference, store)
    plot = figure_markdown(figure, folder / OBSERVED_COI_PLOT_FILE, f"observed COI ({store})")
    version, artifacts = artifact_version(folder / OBSERVED_COI_FILE, folder / COI_DIFFERENCE_FILE)
    return dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            coi,
            folder / OBSERVED_COI_FILE,
            **artifacts,
            difference=difference.difference,
            p_value=difference.p_value,
            method=difference.method,
            plot=plot,
        ),
    )


def build_price_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`store_prices` (reads the store's warehouse slice) and `observed_coi` on it, per store."""
    prices = declared_asset(
        settings=settings,
        code=PRICES_CODE,
        reads=PRICE_READS,
        name="store_prices",
        partitions_def=store_partitions,
        deps=[dg.AssetDep("store_warehouse", partition_mapping=dg.IdentityPartitionMapping())],
        group_name="market",
        kinds={"python", "parquet"},
        check_specs=[
            dg.AssetCheckSpec(
                NO_LOG_LOST,
                asset="store_prices",
                blocking=True,
                description="Every price log of the store is in quotes.parquet, fitted or "
                "excluded with a reason (nothing silently lost).",
            ),
            dg.AssetCheckSpec(
                FROM_LOGS,
                asset="store_prices",
                blocking=False,
                description="The anchors, markup and noise were fitted from the store's price "
                "logs (not the declared defaults).",
            ),
        ],
    )
    coi = declared_asset(
        settings=settings,
        code=PRICES_CODE,
        name="observed_coi",
        partitions_def=store_partitions,
        deps=["store_prices"],
        group_name="market",
        kinds={"python", "parquet", "matplotlib"},
    )
    return [prices(store_prices), coi(observed_coi_asset)]
