"""Compile one store's market: its class kernels and the market settings -> a `MarketSpec`.

The reward coefficients and valuation laws are `MarketSpec`'s defaults (their one definition);
the compiler adds what is specific to the store (kernels, anchor prices, the detector's f) and
what the settings choose (price grid, sessions per step, robustness, episode length).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from phantom_assets.config import MarketConfig
from phantom_assets.market.spec import MarketSpec

# Anchors are drawn from `default_rng(anchor_seed + ANCHOR_STREAM)`: the offset keeps the stream
# the first compiler used (its kernel noise took `anchor_seed`), so stored specs do not change.
ANCHOR_STREAM = 1
ANCHOR_PRICE_RANGE = (90.0, 110.0)


def price_levels(config: MarketConfig) -> tuple[float, ...]:
    """The action grid: `n_actions` price scales evenly spaced over the configured bounds."""
    grid = np.linspace(config.price_scale_low, config.price_scale_high, config.n_actions)
    return tuple(grid.tolist())


def anchor_prices(n_products: int, anchor_seed: int) -> np.ndarray:
    """Per-product anchor prices, uniform over `ANCHOR_PRICE_RANGE`, rounded to cents."""
    rng = np.random.default_rng(anchor_seed + ANCHOR_STREAM)
    return np.round(rng.uniform(*ANCHOR_PRICE_RANGE, n_products), 2)


def compile_market_spec(
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    config: MarketConfig,
    anchor_seed: int,
    **overrides: Any,
) -> MarketSpec:
    """The market of one store.

    Args:
        kernel_human: (S, S) full human kernel over `KERNEL_STATES` (rows = sources).
        kernel_agent: (S, S) full agent kernel.
        config: the market settings (products, price grid, sessions, robustness, episode).
        anchor_seed: seeds the store's anchor prices (the store's index in production).
        **overrides: any other `MarketSpec` field (e.g. the detector's `f_intercept`/`f_slope`).
    """
    fields: dict[str, Any] = {
        "kernel_human": kernel_human,
        "kernel_agent": kernel_agent,
        "anchor": anchor_prices(config.n_products, anchor_seed),
        "price_levels": price_levels(config),
        "sessions_per_step": config.sessions_per_step,
        "ambiguity_radius_w1": config.ambiguity_radius_w1,
        "robust_candidates": config.robust_candidates,
        "chain_bank_size": config.chain_bank_size,
        "episode_steps": config.episode_steps,
        **overrides,
    }
    return MarketSpec(**fields)
