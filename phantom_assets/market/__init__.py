"""The simulated pricing market: compiler, spec, chain banks, Gymnasium env, bench (DESIGN §5)."""

from phantom_assets.market.bank import (
    BankTables,
    ChainBank,
    bank_tables,
    build_chain_bank,
    detector_gaps,
    detector_scores,
    state_weights,
)
from phantom_assets.market.bench import bench_env
from phantom_assets.market.compile import anchor_prices, compile_market_spec, price_levels
from phantom_assets.market.demo import demo_kernels, demo_spec
from phantom_assets.market.env import PricingMarketEnv, make_env
from phantom_assets.market.outcome import StepDraws, StepOutcome, draw_step, evaluate_step
from phantom_assets.market.spec import (
    MarketSpec,
    alpha_half_width,
    alpha_interval,
    candidate_alphas,
    valuation_w1,
)

__all__ = [
    "BankTables",
    "ChainBank",
    "MarketSpec",
    "PricingMarketEnv",
    "StepDraws",
    "StepOutcome",
    "alpha_half_width",
    "alpha_interval",
    "anchor_prices",
    "bank_tables",
    "bench_env",
    "build_chain_bank",
    "candidate_alphas",
    "compile_market_spec",
    "demo_kernels",
    "demo_spec",
    "detector_gaps",
    "detector_scores",
    "draw_step",
    "evaluate_step",
    "make_env",
    "price_levels",
    "state_weights",
    "valuation_w1",
]
