"""The plain one-sided Student-t bound of a held-out mean harm: the comparator the harm rows of the
calibration study set beside the gate's own test (`audit.studentized.mean_tests`, whose level
holds on the skewed layouts where this one does not; docs/statistics.md). The gate never uses it.

H0: mean ≥ bound vs H1: mean < bound. The upper bound at one-sided confidence (1 + c)/2 is the
inverted test: `upper ≤ bound` iff `p ≤ (1 − c)/2`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from phantom_assets.audit.numbers import readable

HARM_METHOD = "one-sided Student-t upper bound of the held-out mean (H0: mean >= bound)"

__all__ = ["HARM_METHOD", "HarmBound", "harm_bound"]


@dataclass(frozen=True)
class HarmBound:
    """Held-out human harm against the gate's bound.

    Attributes:
        n: Held-out episode seeds with a defined harm share (human spend in some cell).
        mean: Their mean harm share (NaN without any).
        upper: One-sided (1 + confidence)/2 Student-t upper bound of the mean (inf below 2 seeds).
        bound: The configured maximum (`EvaluationConfig.max_human_harm`).
        p_value: One-sided p of H0: mean >= bound.
        confidence: Two-sided confidence the gate's intervals use.
        method: `HARM_METHOD`.
    """

    n: int
    mean: float
    upper: float
    bound: float
    p_value: float
    confidence: float
    method: str = HARM_METHOD

    @property
    def within(self) -> bool:
        """True iff the upper bound is at most the configured bound."""
        return self.upper <= self.bound

    def describe(self) -> str:
        """Mean, upper bound, bound and n in words (for the gate's reasons)."""
        return (
            f"human harm: held-out mean {readable(self.mean)}, one-sided "
            f"{(1 + self.confidence) / 2:.1%} upper bound {readable(self.upper)} vs the bound "
            f"{readable(self.bound)} (n = {self.n} seeds)"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (a non-finite number becomes None) with `within`."""
        payload = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in asdict(self).items()
        }
        return {**payload, "within": self.within}


def harm_bound(values: np.ndarray, *, bound: float, confidence: float) -> HarmBound:
    """Test the mean of per-seed harm `values` against `bound` (NaN seeds are left out).

    Raises:
        ValueError: for a non-1-D `values`, a `bound` outside [0, 1] or `confidence` outside (0, 1).
    """
    h = np.asarray(values, dtype=np.float64)
    if h.ndim != 1:
        raise ValueError(f"harm values must be a 1-D array, got shape {h.shape}")
    if not 0.0 <= bound <= 1.0:
        raise ValueError(f"the human-harm bound is a share in [0, 1], got {bound!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    h = h[np.isfinite(h)]
    mean = float(h.mean()) if h.size else math.nan
    if h.size < 2:  # no spread to bound the mean with: cannot show the harm is small
        return HarmBound(int(h.size), mean, math.inf, bound, 1.0, confidence)
    se = float(h.std(ddof=1)) / math.sqrt(h.size)
    df = h.size - 1
    upper = mean + float(stats.t.ppf((1.0 + confidence) / 2.0, df)) * se
    if se > 0.0:
        p_value = float(stats.t.sf((bound - mean) / se, df))
    else:  # every seed alike (e.g. δ = 0: no harm at all): the bound is the mean itself
        p_value = 0.0 if mean <= bound else 1.0
    return HarmBound(int(h.size), mean, upper, bound, p_value, confidence)
