"""The store's own demand from its purchase decisions (docs/method.md#the-stores-demand).

demand = fit_store_demand(store, quotes, anchors, signal, scale)  # both classes, replicates
write_store_demand(demand, lake.demand_dir(store))  # demand.json, conversion, replicates
record = read_store_demand(lake.demand_dir(store))  # what the market reads back
mu, beta, sigma, pi = revealed_preference(g, markup, sigma, cost, conversion, default)
"""

from phantom_assets.market.demand.model import (
    PARAMETERS,
    ClassDemand,
    DemandFitParams,
    conversion_probability,
    fit_class,
    maximum_likelihood,
    within_stratum_sd,
)
from phantom_assets.market.demand.plots import plot_conversion
from phantom_assets.market.demand.revealed import revealed_preference
from phantom_assets.market.demand.store import (
    CONVERSION_SCHEMA,
    ENGAGEMENT_GRID,
    MODEL,
    RATIO_GRID,
    DemandRecord,
    StoreDemand,
    conversion_surface,
    demand_markdown,
    fit_store_demand,
    observed_conversion,
    read_store_demand,
    write_store_demand,
)

__all__ = [
    "CONVERSION_SCHEMA",
    "ENGAGEMENT_GRID",
    "MODEL",
    "PARAMETERS",
    "RATIO_GRID",
    "ClassDemand",
    "DemandFitParams",
    "DemandRecord",
    "StoreDemand",
    "conversion_probability",
    "conversion_surface",
    "demand_markdown",
    "fit_class",
    "fit_store_demand",
    "maximum_likelihood",
    "observed_conversion",
    "plot_conversion",
    "read_store_demand",
    "revealed_preference",
    "within_stratum_sd",
    "write_store_demand",
]
