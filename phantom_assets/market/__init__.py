"""The simulated market v4: the store's prices and sessions, quoting, engine, env, compiler,
sensitivity, bench (docs/method.md#the-market)."""

from phantom_assets.market.ambiguity import (
    alpha_half_width,
    alpha_interval,
    engagement_w1,
    robust_candidates,
)
from phantom_assets.market.bank import (
    BankTables,
    ChainBank,
    bank_tables,
    build_chain_bank,
    fold_log_ratios,
    session_bank,
    state_weights,
)
from phantom_assets.market.bench import bench_env
from phantom_assets.market.columns import COLUMN, DETECTOR_MODES, STEP_COLUMNS, Column
from phantom_assets.market.compile import anchor_prices, chain_banks, compile_market_spec
from phantom_assets.market.demo import demo_kernels, demo_spec
from phantom_assets.market.draws import (
    EngagementStrata,
    StepDraws,
    agent_session_share,
    decoy_scores,
    draw_step,
    engagement_strata,
)
from phantom_assets.market.engine import Engine, simulate_step
from phantom_assets.market.env import OBS_EXTRA, PricingMarketEnv, engine_of, make_env
from phantom_assets.market.erosion import (
    EROSION_METRICS,
    EROSION_SCHEMA,
    agent_coi_by_k,
    closed_form_coi_a,
    coi_a_share,
    coi_erosion,
)
from phantom_assets.market.law import EpisodeLaw, training_law
from phantom_assets.market.optimize import (
    ActionBox,
    Optimum,
    action_box,
    best_action,
    cell_objective,
    centre_on_optima,
    centred_grid,
    market_oracle,
    stress_objective,
)
from phantom_assets.market.oracle import (
    ORACLE_SCHEMA,
    episode_draws,
    fixed_action_profits,
    oracle_markdown,
    seed_t_interval,
)
from phantom_assets.market.plots import plot_coi_erosion
from phantom_assets.market.report import spec_markdown
from phantom_assets.market.response import (
    BandProfits,
    Response,
    band_profits,
    best_fixed_responses,
    stress_alphas,
)
from phantom_assets.market.sessions import prefix_auc, store_session_banks
from phantom_assets.market.spec import MarketSpec

__all__ = [
    "COLUMN",
    "DETECTOR_MODES",
    "EROSION_METRICS",
    "EROSION_SCHEMA",
    "OBS_EXTRA",
    "ORACLE_SCHEMA",
    "STEP_COLUMNS",
    "ActionBox",
    "BandProfits",
    "BankTables",
    "ChainBank",
    "Column",
    "EngagementStrata",
    "Engine",
    "EpisodeLaw",
    "MarketSpec",
    "Optimum",
    "PricingMarketEnv",
    "Response",
    "StepDraws",
    "action_box",
    "agent_coi_by_k",
    "agent_session_share",
    "alpha_half_width",
    "alpha_interval",
    "anchor_prices",
    "band_profits",
    "bank_tables",
    "bench_env",
    "best_action",
    "best_fixed_responses",
    "build_chain_bank",
    "cell_objective",
    "centre_on_optima",
    "centred_grid",
    "chain_banks",
    "closed_form_coi_a",
    "coi_a_share",
    "coi_erosion",
    "compile_market_spec",
    "decoy_scores",
    "demo_kernels",
    "demo_spec",
    "draw_step",
    "engagement_strata",
    "engagement_w1",
    "engine_of",
    "episode_draws",
    "fixed_action_profits",
    "fold_log_ratios",
    "make_env",
    "market_oracle",
    "oracle_markdown",
    "plot_coi_erosion",
    "prefix_auc",
    "robust_candidates",
    "seed_t_interval",
    "session_bank",
    "simulate_step",
    "spec_markdown",
    "state_weights",
    "store_session_banks",
    "stress_alphas",
    "stress_objective",
    "training_law",
]
