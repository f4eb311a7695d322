"""Market group: the store's own demand from its purchase decisions at quoted prices
(`store_demand`, docs/method.md#the-stores-demand)."""

import dagster as dg
import numpy as np
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
from phantom_assets.config import Settings
from phantom_assets.lake import CONVERSION_PLOT_FILE, QUOTES_FILE
from phantom_assets.market.demand import (
    DemandFitParams,
    conversion_surface,
    demand_markdown,
    fit_store_demand,
    observed_conversion,
    plot_conversion,
    write_store_demand,
)
from phantom_assets.market.prices import read_store_prices, signal_column

DEMAND_CODE = code_version_of(
    "phantom_assets.assets.demand",
    "phantom_assets.market.demand",
    "phantom_assets.market.replicates",
    "phantom_assets.market.prices",
    "phantom_assets.constants",
)
DEMAND_READS = (
    "market.store_replicates",
    "market.min_price_variation",
    "market.engagement_scale_share",
)
FROM_LOGS = "demand_comes_from_the_logs"


def demand_scale(prices_s0: float | None, human_engagement: np.ndarray, share: float) -> float:
    """s0 of g(s) for the demand: the price model's (the market's), else `share` × the mean
    human engagement at the decisions (the market's rule where the logs do not identify s0)."""
    if prices_s0 is not None:
        return float(prices_s0)
    mean = float(np.mean(human_engagement)) if human_engagement.size else 0.0
    return share * mean if mean > 0 else 1.0


def store_demand(context: dg.AssetExecutionContext, storage: StorageResource):
    """What the store's shoppers will pay, from their purchase decisions at its quotes: per class
    P(buy | price/anchor r, engagement s) = π·Φ((μ + β·g(s) − r)/σ) by maximum likelihood, with
    intervals over replicates of the store's sample (a Poisson bootstrap by experiment) and the
    identification diagnostics -- price variation at equal engagement (a price test), corr(g(s),
    r), the replicates' spread (`demand.json`, `replicates.parquet`); the conversion surface with
    its intervals (`conversion.parquet`, plot). Where the humans' demand is not identified the
    market calibrates it by revealed preference, declared (`source = declared`, with why)."""
    store, settings = context.partition_key, storage.settings()
    market = settings.market
    prices_dir = settings.lake.store_prices_dir(store)
    prices = read_store_prices(prices_dir)
    quotes = pl.read_parquet(prices_dir / QUOTES_FILE)
    humans = quotes.filter(pl.col("decision"), pl.col("actor") == "human")
    engagement = (
        humans[signal_column(prices.signal)].to_numpy() if prices.signal != "none" else np.zeros(0)
    )
    scale = demand_scale(prices.s0, engagement, market.engagement_scale_share)
    params = DemandFitParams(
        replicates=market.store_replicates, min_price_variation=market.min_price_variation
    )
    demand = fit_store_demand(store, quotes, prices.anchors, prices.signal, scale, params)
    folder = settings.lake.demand_dir(store)
    paths = write_store_demand(demand, folder)
    surface = conversion_surface(demand)
    observed = observed_conversion(quotes, prices.anchors, prices.signal)
    unidentified = {
        actor: fit.reason for actor, fit in demand.classes.items() if not fit.identified
    }
    title = f"conversion by price and engagement ({store})"
    figure = plot_conversion(surface, observed, title, unidentified)
    plot = figure_markdown(figure, folder / CONVERSION_PLOT_FILE, f"conversion ({store})")
    version, artifacts = artifact_version(*paths)
    human = demand.human
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            surface,
            paths[1],
            **artifacts,
            source=demand.source,
            reason=demand.reason,
            signal=demand.signal,
            scale=demand.scale,
            replicates=params.replicates,
            n_decisions=0 if human is None else human.diagnostics["n_decisions"],
            price_variation=None if human is None else human.diagnostics["price_variation"],
            demand=dg.MetadataValue.md(demand_markdown(demand)),
            plot=plot,
        ),
    )
    yield dg.AssetCheckResult(
        check_name=FROM_LOGS,
        passed=demand.source == "logs",
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"source": demand.source, "reason": demand.reason},
    )


def build_demand_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`store_demand` per store, on `store_prices` (its quotes and price model)."""
    asset = declared_asset(
        settings=settings,
        code=DEMAND_CODE,
        reads=DEMAND_READS,
        name="store_demand",
        partitions_def=store_partitions,
        deps=["store_prices"],
        group_name="market",
        kinds={"python", "scipy", "parquet"},
        check_specs=[
            dg.AssetCheckSpec(
                FROM_LOGS,
                asset="store_demand",
                blocking=False,
                description="The humans' demand is identified by the store's purchase decisions "
                "(a price test), not declared by revealed preference.",
            ),
        ],
    )
    return [asset(store_demand)]
