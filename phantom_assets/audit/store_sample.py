"""The gate's tests when each held-out seed is a replicate of the store's sample
(docs/statistics.md#the-stores-sample).

A held-out seed's value is the quantity in one bootstrap replicate of the store plus shopper noise
(`market.world`). `mean_test` asks whether the *replicates' average* exceeds the threshold -- its
interval shrinks as 1/√n however uncertain the store's data are. What the gate certifies is the
store's population value, so each of its three tests also passes the store-sample t test,

    T = (x̄ − θ) / (s·√(1 + 1/n)) ~ t(n − 1)

(`market.intervals`: a prediction for one more replicate), and reports the larger p: the level
holds wherever either test holds (the studentized mean test's calibration; the store-sample
coverage study `calibration.store_sample`). With shopper noise alone (no replicates) the
store-sample test is conservative by a factor √(n + 1) in its interval's width.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy import stats

from phantom_assets.audit.studentized import MeanTestResult, mean_test

__all__ = ["STORE_SAMPLE_METHOD", "store_sample_test"]

STORE_SAMPLE_METHOD = "store-sample t: (mean - threshold) / (sd·√(1 + 1/n)) ~ t(n - 1)"


def _store_t(
    x: np.ndarray, threshold: float, alternative: str, confidence: float
) -> tuple[float, float, float]:
    """(p, ci_low, ci_high) of the store-sample t test."""
    n, mean, sd = x.size, float(x.mean()), float(x.std(ddof=1))
    scale = sd * math.sqrt(1.0 + 1.0 / n)
    half = float(stats.t.ppf(0.5 + confidence / 2.0, n - 1)) * scale
    t_stat = (mean - threshold) / scale
    p = float(stats.t.sf(t_stat, n - 1) if alternative == "greater" else stats.t.cdf(t_stat, n - 1))
    return p, mean - half, mean + half


def store_sample_test(
    values: np.ndarray,
    *,
    rng: np.random.Generator,
    threshold: float = 0.0,
    alternative: Literal["greater", "less"] = "greater",
    confidence: float = 0.95,
) -> MeanTestResult:
    """`mean_test` and the store-sample t test of the same values: the larger p, the union of
    their intervals (so `rejects` holds iff both reject), the method naming both."""
    robust = mean_test(
        values, threshold=threshold, alternative=alternative, rng=rng, confidence=confidence
    )
    x = np.asarray(values, dtype=np.float64)
    if robust.no_spread:
        return robust
    p, low, high = _store_t(x, threshold, alternative, confidence)
    return MeanTestResult(
        n=robust.n,
        mean=robust.mean,
        ci_low=min(low, robust.ci_low),
        ci_high=max(high, robust.ci_high),
        p_value=max(p, robust.p_value),
        threshold=threshold,
        alternative=alternative,
        method=f"larger p of {robust.method}; {STORE_SAMPLE_METHOD}",
        confidence=confidence,
    )
