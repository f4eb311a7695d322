"""Throughput benchmark of kernel fitting and session scoring (``phantom bench fingerprint``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from phantom_assets.constants import DEFAULT_FOLDS, DEFAULT_KAPPA, DEFAULT_TEMPERATURE
from phantom_assets.fingerprint.divergence import score_sessions
from phantom_assets.fingerprint.sessions import fit_class_kernels
from phantom_assets.fingerprint.synthetic import random_chain, synthetic_sessions

logger = logging.getLogger(__name__)

__all__ = ["bench_fingerprint"]

_END_PROB = 0.05  # mean session length ~ 1 / end_prob = 20 events
_REPEATS = 3


def _best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):  # timing repeats
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def bench_fingerprint(n_events: int = 1_000_000, seed: int = 0) -> dict[str, Any]:
    """Time fitting (human + agent kernel sets incl. fold kernels) and scoring on synthetic data.

    Args:
        n_events: Approximate number of events in the synthetic corpus.
        seed: Seed of the corpus generator.

    Returns:
        ``{"fit_events_per_s", "score_sessions_per_s", "n_events", "n_sessions", "config"}``;
        timings are the best of 3 runs (``time.perf_counter``), end to end from the sessions
        frame (validation and encoding included).
    """
    if n_events < 100:
        raise ValueError(f"n_events must be >= 100, got {n_events!r}")
    rng = np.random.default_rng(seed)
    n_sessions = max(4, round(n_events * _END_PROB))
    sessions = synthetic_sessions(
        random_chain(rng, end_prob=_END_PROB),
        random_chain(rng, end_prob=_END_PROB),
        n_sessions // 2,
        n_sessions - n_sessions // 2,
        rng,
        k=DEFAULT_FOLDS,
    )

    def fit() -> tuple[Any, Any]:
        return (
            fit_class_kernels(sessions, "human", kappa=DEFAULT_KAPPA, k=DEFAULT_FOLDS),
            fit_class_kernels(sessions, "agent", kappa=DEFAULT_KAPPA, k=DEFAULT_FOLDS),
        )

    fit_s, (human, agent) = _best_of(fit, _REPEATS)
    score_s, _ = _best_of(
        lambda: score_sessions(sessions, human, agent, DEFAULT_TEMPERATURE), _REPEATS
    )
    total_events = int(sessions["n_events"].sum())
    result = {
        "fit_events_per_s": total_events / fit_s,
        "score_sessions_per_s": sessions.height / score_s,
        "n_events": total_events,
        "n_sessions": sessions.height,
        "config": {
            "seed": seed,
            "requested_events": n_events,
            "kappa": DEFAULT_KAPPA,
            "folds": DEFAULT_FOLDS,
            "temperature": DEFAULT_TEMPERATURE,
            "end_prob": _END_PROB,
            "repeats": _REPEATS,
            "fit_seconds": fit_s,
            "score_seconds": score_s,
        },
    }
    logger.info("fingerprint bench: %s", result)
    return result
