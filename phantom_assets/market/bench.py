"""The env throughput benchmark.

`bench_env` is what `phantom bench env` prints: steps per second of the nominal and the robust env
on the demo market in the standard configuration (10 products, 100 shoppers/step, 45 actions,
robust: 3 α × 3 K candidates on common random numbers), medians over repeated passes.
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np

from phantom_assets.market.ambiguity import alpha_half_width, robust_candidates
from phantom_assets.market.demo import demo_spec
from phantom_assets.market.env import make_env

logger = logging.getLogger(__name__)


def _throughput(env: gym.Env, actions: np.ndarray, seed: int) -> dict[str, float]:
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
        "steps_per_s": actions.size / total,
        "steps_per_s_excl_reset": actions.size / max(total - reset_s, 1e-12),
        "reset_ms": 1e3 * reset_s / resets,
    }


def bench_env(steps: int = 5000, seed: int = 0, repeats: int = 5) -> dict[str, Any]:
    """Measure env throughput (steps/s, resets included) nominal and robust on one core.

    Each mode runs `repeats` timed passes of `steps` random actions, the modes interleaved so a
    slow spell of a shared machine hits both; the figures are medians over the passes (`*_best`
    and `*_runs` show the spread). The first pass also pays for the engine's lazily built tables.

    Returns:
        `{"nominal_steps_per_s", "robust_steps_per_s", "config": {...}}` plus the best and every
        pass, the medians without resets and the median reset cost.
    """
    if steps < 1 or repeats < 1:
        raise ValueError(f"steps and repeats must be >= 1, got {steps}, {repeats}")
    spec = demo_spec(seed)
    actions = np.random.default_rng(seed).integers(0, spec.n_actions, steps)
    envs = {mode: make_env(spec, 0.5, robust=mode == "robust") for mode in ("nominal", "robust")}
    passes: dict[str, list[dict[str, float]]] = {mode: [] for mode in envs}
    for _ in range(repeats):
        for mode, env in envs.items():
            passes[mode].append(_throughput(env, actions, seed))
    result: dict[str, Any] = {}
    for mode, runs in passes.items():
        rates = [run["steps_per_s"] for run in runs]
        result[f"{mode}_steps_per_s"] = statistics.median(rates)
        result[f"{mode}_steps_per_s_best"] = max(rates)
        result[f"{mode}_steps_per_s_runs"] = rates
        result[f"{mode}_steps_per_s_excl_reset"] = statistics.median(
            run["steps_per_s_excl_reset"] for run in runs
        )
    result["reset_ms"] = statistics.median(run["reset_ms"] for run in passes["robust"])
    result["config"] = {
        "n_products": spec.n_products,
        "shoppers_per_step": spec.shoppers_per_step,
        "n_actions": spec.n_actions,
        "robust_candidates": int(robust_candidates(spec, 0.5)[0].size),
        "nominal_k": spec.agents.nominal_k,
        "robust_k_set": list(spec.agents.robust_k_set),
        "chain_bank_size": spec.banks[0].size,
        "episode_steps": spec.episode_steps,
        "alpha": 0.5,
        "alpha_half_width": alpha_half_width(spec),
        "steps": steps,
        "repeats": repeats,
        "seed": seed,
    }
    logger.info("env bench: %s", result)
    return result
