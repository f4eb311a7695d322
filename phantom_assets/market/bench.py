"""A plausible demo market from two hand-made kernels, and the env throughput benchmark.

`bench_env` is what `phantom bench env` prints: steps per second of the nominal and the robust env
in the standard configuration (10 products, 100 sessions/step, 9 actions, 5 robust candidates).
"""

from __future__ import annotations

import logging
import time
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
from phantom_assets.market.env import make_env
from phantom_assets.market.spec import MarketSpec, alpha_half_width

logger = logging.getLogger(__name__)

# Destination propensities by class: humans dwell (hover) and browse, agents search/filter/view.
_HUMAN_TASTE: dict[str, float] = {
    **dict.fromkeys(NAVIGATION_EVENTS, 2.0),
    **dict.fromkeys(FILTER_EVENTS, 0.3),
    **dict.fromkeys(HOVER_EVENTS, 1.2),
    "session_start": 0.05,
    "add_item_to_cart": 0.8,
    "remove_item": 0.1,
    END_TOKEN: 0.9,
}
_AGENT_TASTE: dict[str, float] = {
    **dict.fromkeys(NAVIGATION_EVENTS, 1.5),
    **dict.fromkeys(FILTER_EVENTS, 1.4),
    **dict.fromkeys(HOVER_EVENTS, 0.08),
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
    """A plausible `MarketSpec` from the demo kernels (agents value less than humans).

    Args:
        seed: seeds the kernel noise and the per-product anchors.
        config: market configuration (defaults to `MarketConfig()`).
        **overrides: any `MarketSpec` field.
    """
    cfg = config or MarketConfig()
    human, agent = demo_kernels(seed)
    rng = np.random.default_rng(seed + 1)
    anchor = np.round(rng.uniform(90.0, 110.0, cfg.n_products), 2)
    levels = tuple(np.linspace(cfg.price_scale_low, cfg.price_scale_high, cfg.n_actions).tolist())
    fields: dict[str, Any] = {
        "kernel_human": human,
        "kernel_agent": agent,
        "anchor": anchor,
        "price_levels": levels,
        "sessions_per_step": cfg.sessions_per_step,
        "ambiguity_radius_w1": cfg.ambiguity_radius_w1,
        "robust_candidates": cfg.robust_candidates,
        "chain_bank_size": cfg.chain_bank_size,
        "episode_steps": cfg.episode_steps,
        # f_leak·N is the expected number of agent-like purchases; each one forgoes the COI
        # premium of an anchor-priced sale (anchor − p_low), so that is what a unit of f_leak costs.
        "info_value": cfg.sessions_per_step * float(anchor.mean() - MarketSpec.p_low),
        "cost_floor": 1.0,
        "eta_ux": 50.0,
        "supra_penalty": 20.0,
    }
    fields.update(overrides)
    return MarketSpec(**fields)


def _throughput(spec: MarketSpec, robust: bool, steps: int, seed: int) -> dict[str, float]:
    env = make_env(spec, 0.5, robust=robust)
    actions = np.random.default_rng(seed).integers(0, spec.n_actions, steps)
    started = time.perf_counter()
    env.reset(seed=seed)
    resets, reset_s = 1, time.perf_counter() - started
    for action in actions:
        _, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            before = time.perf_counter()
            env.reset()
            resets, reset_s = resets + 1, reset_s + time.perf_counter() - before
    total = time.perf_counter() - started
    return {
        "steps_per_s": steps / total,
        "steps_per_s_excl_reset": steps / max(total - reset_s, 1e-12),
        "reset_ms": 1e3 * reset_s / resets,
    }


def bench_env(steps: int = 5000, seed: int = 0) -> dict[str, Any]:
    """Measure env throughput (steps/s, resets included) nominal and robust on one core.

    Returns:
        `{"nominal_steps_per_s", "robust_steps_per_s", "config": {...}}` plus the figures without
        resets and the mean reset cost.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    spec = demo_spec(seed)
    nominal = _throughput(spec, False, steps, seed)
    robust = _throughput(spec, True, steps, seed)
    result = {
        "nominal_steps_per_s": nominal["steps_per_s"],
        "robust_steps_per_s": robust["steps_per_s"],
        "nominal_steps_per_s_excl_reset": nominal["steps_per_s_excl_reset"],
        "robust_steps_per_s_excl_reset": robust["steps_per_s_excl_reset"],
        "reset_ms": robust["reset_ms"],
        "config": {
            "n_products": spec.n_products,
            "sessions_per_step": spec.sessions_per_step,
            "n_actions": spec.n_actions,
            "robust_candidates": spec.robust_candidates,
            "chain_bank_size": spec.chain_bank_size,
            "episode_steps": spec.episode_steps,
            "alpha": 0.5,
            "alpha_half_width": alpha_half_width(spec),
            "steps": steps,
            "seed": seed,
        },
    }
    logger.info("env bench: %s", result)
    return result
