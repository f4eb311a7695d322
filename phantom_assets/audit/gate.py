"""The promotion gate (DESIGN §8): certify only on passed checks and a paired CI above zero.

A policy is certified only if every blocking check passed and it beats the baseline on the stress
metric with a paired bootstrap CI that excludes zero.

Episodes are paired: episode i of the candidate and of the baseline ran with the same seed
(common random numbers, DESIGN §5), so the gate bootstraps the per-episode differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

DEFAULT_DRAWS = 2000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class GateDecision:
    """Verdict of `promotion_gate` with its numbers.

    Attributes:
        certified: True iff checks passed and `ci_low > 0`.
        reasons: Sentences that say exactly why (one per failed condition, or one on success).
        mean_diff: Mean of candidate − baseline over the paired episodes.
        ci_low: Lower percentile-bootstrap bound of the mean difference.
        ci_high: Upper percentile-bootstrap bound.
        n_pairs: Number of paired episodes.
        draws: Bootstrap draws.
        confidence: Confidence level of the interval.
    """

    certified: bool
    reasons: tuple[str, ...]
    mean_diff: float
    ci_low: float
    ci_high: float
    n_pairs: int
    draws: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (for `CertificationReport.gate`)."""
        payload = asdict(self)
        payload["reasons"] = list(self.reasons)
        return payload


def _validated_pairs(candidate: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    cand = np.asarray(candidate, dtype=np.float64)
    base = np.asarray(baseline, dtype=np.float64)
    if cand.ndim != 1 or base.ndim != 1:
        raise ValueError(
            f"candidate and baseline must be 1-D per-episode arrays, got shapes "
            f"{cand.shape} and {base.shape}"
        )
    if cand.shape != base.shape:
        raise ValueError(
            f"candidate and baseline must be paired by episode (same length), got "
            f"{cand.size} and {base.size} episodes"
        )
    if cand.size < 2:
        raise ValueError(f"need at least 2 paired episodes, got {cand.size}")
    if not (np.isfinite(cand).all() and np.isfinite(base).all()):
        raise ValueError("candidate and baseline metrics must be finite (found NaN or inf)")
    return cand - base


def paired_bootstrap_ci(
    diff: np.ndarray, *, rng: np.random.Generator, draws: int, confidence: float
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `diff`, resampling pairs with replacement."""
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    index = rng.integers(0, diff.size, size=(draws, diff.size))
    means = diff[index].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def promotion_gate(
    candidate: np.ndarray,
    baseline: np.ndarray,
    *,
    checks_passed: bool,
    rng: np.random.Generator,
    draws: int = DEFAULT_DRAWS,
    confidence: float = DEFAULT_CONFIDENCE,
    failed_checks: Sequence[str] = (),
) -> GateDecision:
    """Decide whether `candidate` may be promoted over `baseline`.

    Args:
        candidate: Stress metric per episode of the candidate policy (higher is better).
        baseline: Stress metric of the baseline tier on the same episodes (same seeds).
        checks_passed: Whether every blocking asset check in the lineage passed.
        rng: Source of the bootstrap resampling.
        draws: Bootstrap draws.
        confidence: Confidence level of the paired CI.
        failed_checks: Names of the failed blocking checks, quoted in the reasons.

    Returns:
        The decision; certified iff `checks_passed` and the CI's lower bound is above zero.

    Raises:
        ValueError: If the arrays are not paired 1-D finite arrays of >= 2 episodes, or
            `draws`/`confidence` are out of range.
    """
    diff = _validated_pairs(candidate, baseline)
    low, high = paired_bootstrap_ci(diff, rng=rng, draws=draws, confidence=confidence)
    mean = float(diff.mean())
    level = f"{confidence:.0%}"
    interval = f"[{low:.4g}, {high:.4g}]"
    reasons: list[str] = []
    if not checks_passed:
        named = f": {', '.join(failed_checks)}" if failed_checks else ""
        reasons.append(f"not certified: blocking checks failed{named}")
    if low <= 0.0 <= high:
        reasons.append(
            f"not certified: {level} CI of the paired difference {interval} includes zero"
        )
    elif high < 0.0:
        reasons.append(
            f"not certified: the candidate is worse than the baseline, {level} CI of the paired "
            f"difference {interval} lies below zero"
        )
    certified = not reasons
    if certified:
        reasons.append(
            f"certified: all blocking checks passed and the candidate beats the baseline by "
            f"{mean:.4g} per episode, {level} CI {interval} excludes zero "
            f"({diff.size} paired episodes)"
        )
    return GateDecision(
        certified=certified,
        reasons=tuple(reasons),
        mean_diff=mean,
        ci_low=low,
        ci_high=high,
        n_pairs=int(diff.size),
        draws=draws,
        confidence=confidence,
    )
