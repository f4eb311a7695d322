"""Compile one store's market v2: its class kernels, its detector and the market settings ->
a `MarketSpec`.

The valuation law and the volatility cost are `MarketSpec`'s defaults (their one definition); the
compiler adds what is specific to the store: kernels, anchor prices, the chain banks sampled from
the store's kernels and scored with the store's selected f, and the engagement scales derived
from the store's human sessions (s0 and s_ref are multiples of the mean human engagement at the
quote, so a markup means the same on stores whose visitors engage on different scales).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from phantom_assets.config import AgentsConfig, MarketConfig
from phantom_assets.constants import KERNEL_STATES
from phantom_assets.market.bank import ChainBank, bank_tables, build_chain_bank
from phantom_assets.market.spec import BANK_FIELDS, MarketSpec

# Streams of `default_rng(anchor_seed + stream)`: anchors keep the stream the first compiler used.
ANCHOR_STREAM = 1
BANK_STREAM = 2
ANCHOR_PRICE_RANGE = (90.0, 110.0)
MAX_CHAIN_LEN = 64
# s0 and s_ref as multiples of the mean human engagement at the quote: g(mean human) ≈ 0.28 and a
# fully flagged session is quoted at g = 0.63. A large s0 keeps g near-linear over the long tail
# of human engagement, so agents' clean sessions (a quarter of the human mean on the demo
# stores) carry little markup: COI_A(K = 8) ≈ 0.24·COI_H there (README, market v2).
ENGAGEMENT_SCALE_SHARE = 3.0
REFERENCE_ENGAGEMENT_SHARE = 3.0


def anchor_prices(n_products: int, anchor_seed: int) -> np.ndarray:
    """Per-product anchor prices, uniform over `ANCHOR_PRICE_RANGE`, rounded to cents."""
    rng = np.random.default_rng(anchor_seed + ANCHOR_STREAM)
    return np.round(rng.uniform(*ANCHOR_PRICE_RANGE, n_products), 2)


def chain_banks(
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    size: int,
    seed: int,
    f_coef: tuple[float, float],
    states: tuple[str, ...] = KERNEL_STATES,
) -> tuple[ChainBank, ChainBank]:
    """(human, agent) banks of `size` chains each, scored by the fitted pair with f_coef."""
    rng = np.random.default_rng(seed)
    tables = [bank_tables(k, kernel_human, kernel_agent, states)
              for k in (kernel_human, kernel_agent)]  # fmt: skip
    human, agent = (build_chain_bank(t, size, rng, MAX_CHAIN_LEN, f_coef) for t in tables)
    return human, agent


def compile_market_spec(
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    config: MarketConfig,
    anchor_seed: int,
    f_coef: tuple[float, float] = (0.0, 1.0),
    agents: AgentsConfig | None = None,
    **overrides: Any,
) -> MarketSpec:
    """The market of one store.

    Args:
        kernel_human: (S, S) full human kernel over `KERNEL_STATES` (rows = sources).
        kernel_agent: (S, S) full agent kernel.
        config: the market settings (products, action grid, K, robustness, episode).
        anchor_seed: seeds the store's anchor prices and chain banks (the store's index).
        f_coef: (a, b) of the store's selected agent score f = σ(a + b·gap).
        agents: the nominal K and the robust (α, K) ambiguity set (default `AgentsConfig()`).
        **overrides: any other `MarketSpec` field.
    """
    agents = agents or AgentsConfig()
    human, agent = chain_banks(kernel_human, kernel_agent, config.chain_bank_size,
                               anchor_seed + BANK_STREAM, f_coef)  # fmt: skip
    engaged = max(float(human.engagement.mean()), 1e-6)
    banks = {
        f"{actor}_{name}": getattr(bank, name)
        for actor, bank in (("human", human), ("agent", agent))
        for name in BANK_FIELDS
    }
    fields: dict[str, Any] = {
        "kernel_human": kernel_human,
        "kernel_agent": kernel_agent,
        "anchor": anchor_prices(config.n_products, anchor_seed),
        **banks,
        "base_levels": config.base_levels,
        "markups": config.markups,
        "detector_strengths": config.detector_strengths,
        "quote_noise": config.quote_noise,
        "engagement_scale": ENGAGEMENT_SCALE_SHARE * engaged,
        "reference_engagement": REFERENCE_ENGAGEMENT_SHARE * engaged,
        "nominal_k": agents.nominal_k,
        "robust_k_set": agents.robust_k_set,
        "robust_alpha_candidates": agents.robust_alpha_candidates,
        "ambiguity_radius_w1": agents.ambiguity_radius_w1,
        "shoppers_per_step": config.shoppers_per_step,
        "lam": config.lam,
        "episode_steps": config.episode_steps,
        "f_intercept": f_coef[0],
        "f_slope": f_coef[1],
        **overrides,
    }
    return MarketSpec(**fields)
