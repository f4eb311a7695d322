"""`phantom bench detector`: how fast a bundle scores live sessions (one core, pure Python)."""

from __future__ import annotations

import platform
import time
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.detector.export import bundle_quote_scores
from phantom_assets.detector.runtime import DetectorBundle

__all__ = ["bench_detector"]


def bench_detector(
    bundle: DetectorBundle, trajectories: pl.Series, offsets_ms: pl.Series, repeats: int = 3
) -> dict[str, Any]:
    """Per-event latency of `SessionScorer.push` (p50, p99, max, in µs: each event timed alone,
    timer overhead included) and whole sessions scored per second (best of `repeats`), over the
    store's sessions (each event with its time)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    sessions = list(zip(trajectories.to_list(), offsets_ms.to_list(), strict=True))
    clock = time.perf_counter_ns
    latencies = []
    for events, times in sessions:
        scorer = bundle.session()
        for event, ts_ms in zip(events, times, strict=True):
            started = clock()
            scorer.push(event, ts_ms)
            latencies.append(clock() - started)
    per_event = np.asarray(latencies, dtype=np.float64) / 1e3
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        bundle_quote_scores(bundle, trajectories, offsets_ms)
        best = min(best, time.perf_counter() - started)
    return {
        "target": "detector",
        "store": bundle.provenance.get("store"),
        "detector": bundle.provenance.get("detector", "kernel"),
        "sessions": len(sessions),
        "events": int(per_event.size),
        "event_us_p50": float(np.percentile(per_event, 50)),
        "event_us_p99": float(np.percentile(per_event, 99)),
        "event_us_max": float(per_event.max(initial=0.0)),
        "sessions_per_s": len(sessions) / best if best > 0 else float("inf"),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
