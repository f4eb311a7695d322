"""One-sided test of a held-out mean that holds its level under skewed and zero-inflated values.

The gate tests three per-seed quantities on held-out episode seeds: the paired profit advantage
and the detector value (H0: mean <= 0) and the human-harm share (H0: mean >= bound). Their
per-seed laws can be skewed in the direction that makes a test liberal (a rare large loss, a
rare large harm) or zero-inflated (no harm on most seeds). A sign-flip test tests symmetry, not
the mean, and a Student-t test leans on normality: both are liberal there. A studentized
bootstrap (bootstrap-t) adapts to the skewness the sample *shows* (zero inflation) but not to a
tail too rare to be in it (lognormal-type skewness 2: rejected samples show about a third of
it), and it is liberal under symmetric heavy tails. So this test rejects only when both of

1. the studentized bootstrap: T = (x̄ − θ)/(s/√n); B resamples give
   t*_b = (x̄*_b − x̄)/(s*_b/√n) (a resample without spread gives ±∞, or 0 on x̄ itself);
   p_boot = (1 + #{t*_b ≥ T})/(B + 1);
2. a Student t with a skewness allowance γ0: the Cornish–Fisher critical value of a t
   statistic whose values are skewed by −γ0 (the liberal side), c(q) = q + k(2q² + 1),
   k = γ0/(6√n), q a t(n − 1) quantile; p_cf = P(t(n − 1) ≥ q(T)) with q(T) its inverse
   (γ0 = 0: the Student t test)

reject, so p = max(p_boot, p_cf) and the level holds wherever either holds: the allowance
covers a tail too rare to show (lognormal skewness up to 2) and symmetric heavy tails, the
bootstrap the skewness a sample shows (zero-inflated harm, beyond the allowance). The default
γ0 = 2.3 is skewness 2, the design's most skewed law, as a Cornish–Fisher allowance: under the
lognormal law of skewness 2 the 97.5% quantile of T is where an allowance of 2.28 puts it
(n = 24, 32, 60; the linear correction leaves out the law's kurtosis). At n = 32 the price is
power: a 0.5-SD effect on normal values is found 0.58 of the time (t test: 0.79; 0.8 SD: 0.96
vs 0.99). `phantom_assets.calibration.mean_test` measures the level at n = 24, 32, 60.

`alternative="less"` tests H0: mean >= θ as the mirror (−x against −θ, same resamples). Both
bounds of the two-sided `confidence` interval are the one-sided tests at level
a = (1 − confidence)/2 inverted: with t*_(k) the k-th largest, k = ⌊a(B + 1)⌋,
ci_low = x̄ − max(t*_(k), c_a)·s/√n, so "ci_low > θ" iff "p <= a" (and ci_high mirrors it).
Values that are all equal have no spread to studentize (every resample is the sample itself):
they are no evidence, p = 1 and the interval is (−∞, ∞) -- as the bootstrap already treats one
harmed seed among unharmed ones (the third of the resamples without it: t* = −∞, no upper
bound). Face value (p = 0) would pass harm that is 0 on every seed, which harm at the bound with
80% harm-free seeds shows 0.8^24 = 0.5% of the time at n = 24: five times the 0.001 of a Holm
step over 25 candidates. A structural zero (δ = 0) is the caller's rule to state. No test does
better for every [0, 1] law: a 0/1 harm of mean 0.02 is 0 on all 32 seeds 52% of the time (so
such a test cannot pass all-zero harm below 183 seeds), and an empirical-Bernstein bound's range
term 7·ln(2/δ)/(3(n − 1)) alone is 0.33 at n = 32 (δ = 0.025), against a harm bound of 0.02.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

from phantom_assets.audit.numbers import readable

DEFAULT_RESAMPLES = 9_999
"""a(B + 1) is a whole number for the usual levels (0.025: 250); the p floor is 1e-4."""
DEFAULT_SKEW_ALLOWANCE = 2.3
NO_SPREAD = "no spread"
"""How `method` begins for values that are all equal (no evidence either way)."""
MIN_CALIBRATED_N = 24
"""The smallest number of held-out seeds the calibration study covers."""
ALTERNATIVES = ("greater", "less")
_FLAT = 1e-10  # a resample spread below this share of the sample's largest deviation is none
_CHUNK = 1 << 21  # resample weights drawn at a time (16 MB), whatever n

__all__ = [
    "ALTERNATIVES",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SKEW_ALLOWANCE",
    "MIN_CALIBRATED_N",
    "MeanTestResult",
    "mean_test",
    "mean_tests",
]


@dataclass(frozen=True)
class MeanTestResult:
    """One one-sided test of a mean.

    Attributes:
        n: Number of values (independent units: held-out episode seeds).
        mean: Their mean.
        ci_low: Lower bound of the two-sided `confidence` interval of the mean.
        ci_high: Upper bound.
        p_value: One-sided p of H0: mean <= threshold ("greater") or mean >= threshold ("less").
        threshold: The null boundary θ.
        alternative: "greater" (H1: mean > θ) or "less" (H1: mean < θ).
        method: The procedure in words (names the degenerate case).
        confidence: Two-sided confidence level (each bound is a one-sided (1 − confidence)/2 test).
    """

    n: int
    mean: float
    ci_low: float
    ci_high: float
    p_value: float
    threshold: float
    alternative: str
    method: str
    confidence: float

    @property
    def rejects(self) -> bool:
        """True iff the interval lies on the alternative's side of the threshold (p <= level)."""
        if self.alternative == "greater":
            return self.ci_low > self.threshold
        return self.ci_high < self.threshold

    @property
    def no_spread(self) -> bool:
        """True iff the values were all equal (no evidence either way: p = 1, no bounds)."""
        return self.method.startswith(NO_SPREAD)

    def describe(self) -> str:
        """Mean, n, interval and p in words (for the gate's reasons, after what they test)."""
        if self.no_spread:
            return (
                f"{readable(self.mean)} on each of the {self.n} held-out seeds, and "
                "identical values leave the test no spread to measure: no evidence either "
                "way"
            )
        return (
            f"mean {readable(self.mean)} over {self.n} held-out seeds, {self.confidence:.0%} CI "
            f"[{readable(self.ci_low)}, {readable(self.ci_high)}], one-sided p = "
            f"{self.p_value:.3g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (an infinite bound becomes None)."""
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in asdict(self).items()
        }


def _values(values: np.ndarray) -> np.ndarray:
    """`values` as a finite (m, n) float array with n >= 2, else ValueError naming the problem."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"values must be a 2-D (tests, units) array, got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"values are empty (shape {x.shape}): nothing to test")
    if x.shape[1] < 2:
        raise ValueError(f"a mean test needs at least 2 values per test, got {x.shape[1]}")
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"values must be finite, got {x[row, col]} at test {row}, unit {col}")
    return x


def _options(
    thresholds: float | np.ndarray,
    tests: int,
    alternative: str,
    confidence: float,
    resamples: int,
    skew_allowance: float,
) -> np.ndarray:
    """The (tests,) thresholds, after checking every option (ValueError naming the bad one)."""
    theta = np.asarray(thresholds, dtype=np.float64)
    if theta.ndim > 1 or theta.size not in (1, tests) or not np.isfinite(theta).all():
        raise ValueError(f"thresholds must be one finite number or {tests}, got {thresholds!r}")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    if not (math.isfinite(skew_allowance) and skew_allowance >= 0.0):
        raise ValueError(f"skew_allowance must be a finite number >= 0, got {skew_allowance!r}")
    return np.broadcast_to(theta.reshape(-1), (tests,))


def _resample_weights(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, n) resampling weights: how often each unit is drawn, over n."""
    picks = rng.integers(0, n, size=(resamples, n)) + n * np.arange(resamples)[:, None]
    counts = np.bincount(picks.ravel(), minlength=resamples * n).reshape(resamples, n)
    return counts / n


def _bootstrap_t(dev: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B, m) studentized resample means of the (m, n) deviations from each test's mean."""
    tests, n = dev.shape
    # einsum, not a BLAS matmul: threaded BLAS spins on a busy machine (5-40x the CPU measured on
    # 2 shared cores), and each test's numbers never depend on the other tests of the batch.
    moments = np.einsum("bn,kn->bk", weights, np.concatenate([dev, dev * dev]))
    shift, var = moments[:, :tests], moments[:, tests:]  # x̄* − x̄ and the mean square about x̄
    var -= shift**2
    var /= n - 1.0  # s*²/n = (mean square · n/(n − 1))/n: the resample's squared standard error
    scale = _FLAT * np.abs(dev).max(axis=1)
    flat = var <= (scale * scale) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        studentized = shift / np.sqrt(var)
    if flat.any():  # a resample of equal values: ±∞ off the mean, 0 on it
        off = shift[flat]
        cols = np.nonzero(flat)[1]
        studentized[flat] = np.where(np.abs(off) > scale[cols], np.copysign(np.inf, off), 0.0)
    return studentized


def _cf_k(n: int, allowance: float) -> float:
    return allowance / (6.0 * math.sqrt(n))


def _cf_p(t_stat: np.ndarray, n: int, allowance: float) -> np.ndarray:
    """Upper-tail p of `t_stat` against c(q) = q + k(2q² + 1), the t(n − 1) law skewed by −γ0."""
    k = _cf_k(n, allowance)
    excess = t_stat - k
    # The increasing root of 2kq² + q + k − T = 0, rationalized (k = 0 gives q = T); below the
    # vertex q = −1/(4k) there is no root and the vertex (p near 1) is used.
    q = 2.0 * excess / (1.0 + np.sqrt(np.maximum(1.0 + 8.0 * k * excess, 0.0)))
    return stats.t.sf(q, n - 1)


def _cf_critical(level: float, n: int, allowance: float) -> float:
    q = float(stats.t.isf(level, n - 1))
    return q + _cf_k(n, allowance) * (2.0 * q * q + 1.0)


def mean_tests(
    values: np.ndarray,
    *,
    rng: np.random.Generator,
    thresholds: float | np.ndarray = 0.0,
    alternative: Literal["greater", "less"] = "greater",
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    skew_allowance: float = DEFAULT_SKEW_ALLOWANCE,
) -> list[MeanTestResult]:
    """Test the mean of each row of `values` (module docstring), one set of resamples for all.

    Args:
        values: (tests, units) finite values, at least 2 units (calibrated from 24).
        rng: Draws the resamples (B·n integers, however many rows and whatever the values).
        thresholds: Null boundary θ, one for all rows or one per row.
        alternative: "greater": H0 mean <= θ; "less": H0 mean >= θ.
        confidence: Two-sided confidence of the intervals, in (0, 1).
        resamples: Bootstrap resamples B; below 1/a − 1 the bounds are infinite (no rejection).
        skew_allowance: γ0 >= 0, the skewness on the liberal side the test holds its level
            under even when the sample does not show it (0: bootstrap and Student t only).

    Returns:
        One result per row, in order.

    Raises:
        ValueError: for non-2-D, empty, non-finite or too short `values`, thresholds of the
            wrong shape or non-finite, an unknown `alternative`, `confidence` outside (0, 1),
            `resamples` < 1 or a negative or non-finite `skew_allowance`.
        TypeError: if `rng` is not a `numpy.random.Generator`.
    """
    x = _values(values)
    tests, n = x.shape
    theta = _options(thresholds, tests, alternative, confidence, resamples, skew_allowance)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    anchor = x[:, :1]  # shifting by a value keeps equal values exactly equal (no spread)
    centre = (x - anchor).mean(axis=1)
    dev = x - anchor - centre[:, None]
    mean = anchor[:, 0] + centre
    se = np.sqrt((dev**2).sum(axis=1) / ((n - 1.0) * n))
    rows = max(1, _CHUNK // n)  # rng use depends on n and B only, never on the values
    tstar = np.concatenate(
        [
            _bootstrap_t(dev, _resample_weights(n, min(rows, resamples - i), rng))
            for i in range(0, resamples, rows)
        ]
    )
    level = round((1.0 - confidence) / 2.0, 12)
    k = math.floor(level * (resamples + 1))
    if k >= 1:
        ordered = np.partition(tstar, (k - 1, resamples - k), axis=0)
        low_q, high_q = ordered[k - 1], ordered[resamples - k]
    else:
        low_q, high_q = np.full(tests, -np.inf), np.full(tests, np.inf)
    critical = _cf_critical(level, n, skew_allowance)
    flat = se == 0.0
    sign = 1.0 if alternative == "greater" else -1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t_obs = sign * (mean - theta) / se
        p_boot = (1.0 + np.sum(sign * tstar >= t_obs, axis=0)) / (resamples + 1.0)
        p_value = np.maximum(p_boot, _cf_p(t_obs, n, skew_allowance))
        ci_low = mean - np.maximum(high_q, critical) * se
        ci_high = mean + np.maximum(-low_q, critical) * se
    ci_low, ci_high = np.where(flat, -np.inf, ci_low), np.where(flat, np.inf, ci_high)
    p_value = np.where(flat, 1.0, p_value)
    method = (
        f"max of a studentized-bootstrap p ({resamples} resamples) and a Student-t p with "
        f"a Cornish-Fisher skewness allowance of {skew_allowance:g}"
    )
    labels = [
        f"{NO_SPREAD} (all {n} values equal): no evidence, no rejection" if f else method
        for f in flat
    ]
    return [
        MeanTestResult(
            n, float(m), float(lo), float(hi), float(p), float(t), alternative, label, confidence
        )
        for m, lo, hi, p, t, label in zip(
            mean, ci_low, ci_high, p_value, theta, labels, strict=True
        )
    ]


def mean_test(
    values: np.ndarray,
    *,
    rng: np.random.Generator,
    threshold: float = 0.0,
    alternative: Literal["greater", "less"] = "greater",
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    skew_allowance: float = DEFAULT_SKEW_ALLOWANCE,
) -> MeanTestResult:
    """Test the mean of the 1-D `values` against `threshold` (`mean_tests` of one row).

    Raises:
        ValueError: for a non-1-D `values`, or anything `mean_tests` rejects.
        TypeError: if `rng` is not a `numpy.random.Generator`.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be a 1-D array, got shape {x.shape}")
    return mean_tests(
        x[None, :],
        rng=rng,
        thresholds=threshold,
        alternative=alternative,
        confidence=confidence,
        resamples=resamples,
        skew_allowance=skew_allowance,
    )[0]
