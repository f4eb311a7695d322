"""Market group: which conclusions about a store's market survive its declared assumptions."""

import dagster as dg
import numpy as np
import polars as pl

from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    table_metadata,
)
from phantom_assets.assets.partitions import GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS
from phantom_assets.evaluation import (
    SensitivityDesign,
    assumption_grid,
    market_sensitivity,
    robust_conclusions,
    sensitivity_markdown,
)
from phantom_assets.lake import QUOTES_FILE, SENSITIVITY_FILE, SENSITIVITY_MD_FILE
from phantom_assets.market import MarketSpec
from phantom_assets.market.demand import read_store_demand
from phantom_assets.market.prices import markup_at_scale, read_store_prices
from phantom_assets.storage import write_bytes_atomic, write_parquet_atomic

SENSITIVITY_CODE = code_version_of(
    "phantom_assets.assets.sensitivity",
    "phantom_assets.evaluation",
    "phantom_assets.market",
    "phantom_assets.audit.gate",
    "phantom_assets.audit.pairs",
    "phantom_assets.audit.studentized",
    "phantom_assets.audit.store_sample",
)
SENSITIVITY_SEED = 31
SENSITIVITY_READS = (
    "market.sensitivity_cost_shares",
    "market.sensitivity_price_caps",
    "market.sensitivity_agent_valuations",
    "market.sensitivity_in_market",
    "market.sensitivity_engagement_scales",
    "market.markup_multiples",
    "evaluation.seed",
    "evaluation.episodes",
    "evaluation.test_seed",
    "evaluation.test_episodes",
    "evaluation.max_human_harm",
    "agents.alpha_grid",
    "agents.nominal_k",
    "agents.stress_radius",
    "agents.evasion_thetas",
    "agents.evasion_band",
)


def sensitivity_design(settings: Settings, spec: MarketSpec) -> SensitivityDesign:
    """The evaluation's α grid, stress band, seeds and harm bound at the market's nominal K."""
    agents, cfg = settings.agents, settings.evaluation
    return SensitivityDesign(
        agents.alpha_grid,
        agents.stress_radius,
        agents.nominal_k,
        cfg.selection_seeds,
        cfg.test_seeds,
        cfg.max_human_harm,
    )


def market_sensitivity_asset(
    context: dg.AssetExecutionContext, storage: StorageResource
) -> dg.MaterializeResult:
    """What the declared assumptions decide (`sensitivity.parquet`, one row per grid point, and
    `sensitivity.md`): each declared term moved alone from the market's own point -- cost share,
    quote cap, what agents' principals pay, the demand's engagement slope at its interval's ends,
    the in-market share and s0 where the logs do not identify them (m refitted to the store's
    quotes at each s0) -- the COI erosion ratio, the value of engagement pricing, and the
    promotion gate on the best defended vs the best undefended fixed action, both refined on the
    continuous action space (profit advantage, detector value beyond engagement, total human
    harm, FPR at α = 0, certified). A conclusion is robust only if it holds at every point."""
    store, settings = context.partition_key, storage.settings()
    spec = MarketSpec.load(settings.lake.market_dir(store), settings.agents)
    prices_dir = settings.lake.store_prices_dir(store)
    prices = read_store_prices(prices_dir)
    quotes = pl.read_parquet(prices_dir / QUOTES_FILE)
    demand = read_store_demand(settings.lake.demand_dir(store))
    human = demand.ci.get(ACTORS[0])
    beta = None if human is None else (float(human[0, 1]), float(human[1, 1]))
    points = assumption_grid(
        spec, settings.market, lambda s0: markup_at_scale(quotes, prices, s0), beta
    )
    table = market_sensitivity(
        points, sensitivity_design(settings, spec), np.random.default_rng(SENSITIVITY_SEED)
    )
    conclusions = robust_conclusions(table)
    markdown = sensitivity_markdown(table, conclusions, store)
    folder = settings.lake.sensitivity_dir(store)
    write_parquet_atomic(table, folder / SENSITIVITY_FILE)
    write_bytes_atomic(markdown.encode(), folder / SENSITIVITY_MD_FILE)
    version, artifacts = artifact_version(folder / SENSITIVITY_FILE, folder / SENSITIVITY_MD_FILE)
    verdicts = dict(conclusions.select("conclusion", "verdict").iter_rows())
    return dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            table,
            folder / SENSITIVITY_FILE,
            **artifacts,
            seed=SENSITIVITY_SEED,
            declared=str(sorted(k for k, v in spec.sources.items() if v == "declared")),
            robust=str([c for c, v in verdicts.items() if v == "robust"]),
            certified_points=int(table["certified"].sum()),
            report=dg.MetadataValue.md(markdown),
        ),
    )


def build_sensitivity_assets(
    settings: Settings, grids: GridPartitions
) -> list[dg.AssetsDefinition]:
    """`market_sensitivity`, versioned with the grids it sweeps and the seeds it runs on."""
    asset = declared_asset(
        settings=settings,
        code=SENSITIVITY_CODE,
        reads=SENSITIVITY_READS,
        name="market_sensitivity",
        partitions_def=store_partitions,
        deps=["market_simulators", "store_prices", "store_demand"],
        group_name="market",
        kinds={"python", "parquet"},
    )
    return [asset(market_sensitivity_asset)]
