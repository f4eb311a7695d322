"""A plausible market from two hand-made kernels, for the env benchmark and the tests.

Production markets are compiled from each store's fitted kernels (`compile_market_spec`); this one
needs no data.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from phantom_assets.config import MarketConfig
from phantom_assets.constants import (
    END_TOKEN,
    FILTER_EVENTS,
    HOVER_EVENTS,
    KERNEL_STATES,
    NAVIGATION_EVENTS,
    START_TOKEN,
)
from phantom_assets.market.compile import compile_market_spec
from phantom_assets.market.spec import MarketSpec

# Destination propensities by class, shaped like the demo stores' fitted kernels: humans dwell
# (hover) and browse before they view a product (engagement at the quote ≈ 22), agents search,
# filter and view at once (≈ 6); agent score f ≈ 0.2 for human and ≈ 0.8 for agent chains.
_HUMAN_TASTE: dict[str, float] = {
    **dict.fromkeys(NAVIGATION_EVENTS, 2.0),
    **dict.fromkeys(FILTER_EVENTS, 0.3),
    **dict.fromkeys(HOVER_EVENTS, 5.0),
    "view_item_page": 0.5,
    "session_start": 0.05,
    "add_item_to_cart": 0.8,
    "remove_item": 0.1,
    END_TOKEN: 0.9,
}
_AGENT_TASTE: dict[str, float] = {
    **dict.fromkeys(NAVIGATION_EVENTS, 1.5),
    **dict.fromkeys(FILTER_EVENTS, 1.0),
    **dict.fromkeys(HOVER_EVENTS, 0.08),
    "view_item_page": 4.0,
    "learn_more_about_item": 0.2,
    "session_start": 0.05,
    "add_item_to_cart": 0.4,
    "remove_item": 0.05,
    END_TOKEN: 1.0,
}
# Funnel rows (source -> extra destination mass) shared by both classes.
_FUNNEL: dict[str, dict[str, float]] = {
    "add_item_to_cart": {"checkout_start": 4.0, "remove_item": 0.5},
    "checkout_start": {"purchase_complete": 6.0, END_TOKEN: 1.0},
    "purchase_complete": {END_TOKEN: 12.0},
}


def _kernel(taste: dict[str, float], rng: np.random.Generator) -> np.ndarray:
    """Row-stochastic kernel over KERNEL_STATES from destination propensities, with mild noise."""
    states = KERNEL_STATES
    index = {s: i for i, s in enumerate(states)}
    base = np.zeros(len(states))
    for name, weight in taste.items():
        base[index[name]] = weight
    kernel = np.tile(base, (len(states), 1)) * rng.uniform(0.7, 1.3, (len(states), len(states)))
    for source, extra in _FUNNEL.items():
        for dest, weight in extra.items():
            kernel[index[source], index[dest]] += weight
    kernel[:, index[START_TOKEN]] = 0.0
    kernel[index[START_TOKEN]] = 0.0
    kernel[index[START_TOKEN], index["session_start"]] = 1.0
    kernel[index[END_TOKEN]] = 0.0
    kernel[index[END_TOKEN], index[END_TOKEN]] = 1.0
    return kernel / kernel.sum(axis=1, keepdims=True)


def demo_kernels(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(human, agent) hand-made kernels over `KERNEL_STATES` (rows = sources)."""
    rng = np.random.default_rng(seed)
    return _kernel(_HUMAN_TASTE, rng), _kernel(_AGENT_TASTE, rng)


def demo_spec(seed: int = 0, config: MarketConfig | None = None, **overrides: Any) -> MarketSpec:
    """The market compiled from the demo kernels with a kernel bank (there are no sessions) and
    declared prices (no price logs), scored with the temperature f (T = 1).

    Args:
        seed: seeds the kernel noise, the declared anchors and the chain banks.
        config: market configuration (defaults to `MarketConfig()`; its bank is "kernel" here).
        **overrides: any `MarketSpec` field (or `f_coef`).
    """
    human, agent = demo_kernels(seed)
    kernel_bank = dataclasses.replace(config or MarketConfig(), bank="kernel")
    return compile_market_spec(human, agent, kernel_bank, seed, **overrides)
