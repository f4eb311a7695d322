"""The env throughput benchmark.

`bench_env` is what `phantom bench env` prints: steps per second of the nominal and the robust env
on the demo market in the standard configuration (10 products, 100 shoppers/step, 45 actions,
robust: 3 α × 3 K candidates on common random numbers).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from phantom_assets.market.demo import demo_spec
from phantom_assets.market.env import make_env
from phantom_assets.market.spec import MarketSpec, alpha_half_width, robust_candidates

logger = logging.getLogger(__name__)


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
            "shoppers_per_step": spec.shoppers_per_step,
            "n_actions": spec.n_actions,
            "robust_candidates": int(robust_candidates(spec, 0.5)[0].size),
            "agent_sessions": spec.agent_sessions,
            "robust_agent_sessions": list(spec.robust_agent_sessions),
            "chain_bank_size": spec.banks[0].size,
            "episode_steps": spec.episode_steps,
            "alpha": 0.5,
            "alpha_half_width": alpha_half_width(spec),
            "steps": steps,
            "seed": seed,
        },
    }
    logger.info("env bench: %s", result)
    return result
