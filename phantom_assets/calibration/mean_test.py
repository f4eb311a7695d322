"""Level of the gate's mean test under skewed and zero-inflated per-seed values
(docs/statistics.md#certification-gate-tests).

The gate tests one value per held-out episode seed for two uses: a *difference* (the paired
profit advantage, the detector value: H0 mean <= 0) and the *harm* share (H0: mean >= bound,
`HARM_BOUND`). Every layout draws n per-seed values with the mean exactly on the null boundary
and runs the real `mean_tests` on them, `BATCH` tests per call (the gate's candidates share one
set of resamples the same way). Laws (L: lognormal of skewness 1 or 2, standardized):

- difference: `normal`; `right_skew_1/2` = L, `left_skew_1/2` = −L (a rare large loss: the
  side where a symmetric test is liberal); `heavy_tailed` = Student t with 3 df;
  `zero_inflated_right/left` = ±(Z·L − E[Z·L]) standardized, Z = 0 on 70% of seeds: most
  seeds at one value, the rest spread by a skewed positive law, shifted to mean 0.
- harm: `harm_normal` = bound·(1 + 0.25·N(0, 1)) (a share pooled over many shoppers);
  `harm_skew_1/2` = bound·L/E[L]; `harm_zero_inflated_70/80/60`: no harm on 70 / 80 / 60% of
  seeds, harm from a law of skewness 1 / 2 / 2 on the others, scaled to mean bound.

Measured with the real functions (one-sided level 0.025; n = 24 / 32 / 60): the old tests on
4,000 reps -- the sign-flip test rejects left_skew_2 at 0.068 / 0.057 / 0.045 and
zero_inflated_left at 0.060 / 0.054 / 0.037; the Student-t harm bound rejects harm_skew_2 at
0.067 / 0.056 / 0.052 and harm_zero_inflated_80 at 0.111 / 0.100 / 0.077. The new test on
20,000 reps (999 resamples): at most 0.025 everywhere -- left_skew_2 0.024 / 0.024 / 0.025,
harm_skew_2 0.025 / 0.024 / 0.023, harm_zero_inflated_60 0.013 / 0.020 / 0.022, normal
0.006 / 0.006 / 0.009 (the price of the skewness allowance). At 0.001, a Holm step over 25
candidates (20,000 reps, 9,999 resamples): left_skew_2 0.0008 / 0.0006 / 0.0008, harm_skew_2
0.0007 / 0.0008 / 0.0011, harm_zero_inflated_80 0 / 0 / 0 (with all-zero harm passed at face
value it was 0.0046 at n = 24).
Known limits (measured on 20,000 reps, not studies here): beyond the allowance it is liberal --
lognormal skewness 4 on the liberal side 0.045 / 0.042 / 0.038; 70% exact zeros with the rest of
skewness −2 about a zero mean (skewness −3.7 in all) 0.007 / 0.018 / 0.033.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.audit.sign_flip import sign_flip_test
from phantom_assets.audit.studentized import DEFAULT_RESAMPLES, DEFAULT_SKEW_ALLOWANCE, mean_tests
from phantom_assets.calibration.result import CalibrationResult, PowerResult
from phantom_assets.calibration.student_t_bound import harm_bound

CONFIDENCE = 0.95
LEVEL = round((1.0 - CONFIDENCE) / 2.0, 12)
SAMPLE_SIZES = (24, 32, 60)
HARM_BOUND = 0.02
BATCH = 25
LOG_SD = {1: 0.3142639889725942, 2: 0.5513835899408821}
"""Log-scale SD of the lognormal law of skewness 1 and 2: (e^σ² + 2)·√(e^σ² − 1) = skewness."""
OLD_PROCEDURE = {"difference": "sign_flip", "harm": "student_t_bound"}
"""The tests the gate used before, per use: they are liberal in these layouts."""

__all__ = [
    "HARM_BOUND",
    "LAYOUTS",
    "LEVEL",
    "POWER_LAYOUTS",
    "SAMPLE_SIZES",
    "Layout",
    "draw",
    "power_studies",
    "rejection_rate",
    "studies",
]


@dataclass(frozen=True)
class Layout:
    """A law of per-seed values for one use of the test.

    Attributes:
        name: Layout name in the calibration output.
        use: "difference" (H0: mean <= 0) or "harm" (H0: mean >= `HARM_BOUND`).
        law: "normal" | "t3" | "lognormal" | "zero_inflated".
        skew: Skewness (1 or 2) of the lognormal part.
        side: +1 skewed to the right, −1 mirrored (differences only).
        zeros: Share of seeds with the zero-inflated law's point mass.
        effect: Off the null: differences shifted by `effect` SDs; harm scaled to mean
            (1 − effect)·bound. 0 is the null boundary.
    """

    name: str
    use: str
    law: str
    skew: int = 1
    side: int = 1
    zeros: float = 0.0
    effect: float = 0.0


LAYOUTS: tuple[Layout, ...] = (
    Layout("normal", "difference", "normal"),
    Layout("right_skew_1", "difference", "lognormal", skew=1),
    Layout("right_skew_2", "difference", "lognormal", skew=2),
    Layout("left_skew_1", "difference", "lognormal", skew=1, side=-1),
    Layout("left_skew_2", "difference", "lognormal", skew=2, side=-1),
    Layout("heavy_tailed", "difference", "t3"),
    Layout("zero_inflated_right", "difference", "zero_inflated", zeros=0.7),
    Layout("zero_inflated_left", "difference", "zero_inflated", side=-1, zeros=0.7),
    Layout("harm_normal", "harm", "normal"),
    Layout("harm_skew_1", "harm", "lognormal", skew=1),
    Layout("harm_skew_2", "harm", "lognormal", skew=2),
    Layout("harm_zero_inflated_70", "harm", "zero_inflated", skew=1, zeros=0.7),
    Layout("harm_zero_inflated_80", "harm", "zero_inflated", skew=2, zeros=0.8),
    Layout("harm_zero_inflated_60", "harm", "zero_inflated", skew=2, zeros=0.6),
)
POWER_LAYOUTS: tuple[tuple[Layout, int], ...] = (
    (Layout("normal_effect_0.8sd", "difference", "normal", effect=0.8), 32),
    (Layout("left_skew_2_effect_0.8sd", "difference", "lognormal", 2, -1, effect=0.8), 32),
    (
        Layout(
            "harm_zero_inflated_70_at_quarter_bound",
            "harm",
            "zero_inflated",
            zeros=0.7,
            effect=0.75,
        ),
        32,
    ),
)
"""(layout, n): effects the gate must find; 0.8 per-seed SD at the default 32 seeds."""


def _lognormal(skew: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Lognormal draws of skewness `skew` with mean 1."""
    sigma = LOG_SD[skew]
    return rng.lognormal(-(sigma**2) / 2.0, sigma, shape)


def _positive(layout: Layout, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Mean-1 draws of the layout's non-negative law (lognormal, or zero-inflated lognormal)."""
    values = _lognormal(layout.skew, shape, rng)
    if layout.law == "zero_inflated":
        values = np.where(rng.random(shape) < layout.zeros, 0.0, values / (1.0 - layout.zeros))
    return values


def _standardized(layout: Layout, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Mean-0, variance-1 draws of the layout's law, mirrored when `side` is −1."""
    if layout.law == "normal":
        return rng.standard_normal(shape)
    if layout.law == "t3":
        return rng.standard_t(3.0, shape) / np.sqrt(3.0)
    var = np.exp(LOG_SD[layout.skew] ** 2) - 1.0  # of a mean-1 lognormal
    if layout.law == "zero_inflated":
        var = (1.0 + var) / (1.0 - layout.zeros) - 1.0
    return layout.side * (_positive(layout, shape, rng) - 1.0) / np.sqrt(var)


def draw(layout: Layout, n: int, n_reps: int, rng: np.random.Generator) -> np.ndarray:
    """(n_reps, n) per-seed values of `layout` (module docstring)."""
    shape = (n_reps, n)
    if layout.use == "difference":
        return _standardized(layout, shape, rng) + layout.effect
    if layout.use != "harm":
        raise ValueError(f"unknown use {layout.use!r}; choose difference or harm")
    share = HARM_BOUND * (1.0 - layout.effect)
    if layout.law == "normal":
        return share * (1.0 + 0.25 * rng.standard_normal(shape))
    return share * _positive(layout, shape, rng)


def _rejections(
    procedure: str,
    values: np.ndarray,
    use: str,
    rng: np.random.Generator,
    resamples: int,
    allowance: float,
    level: float,
) -> int:
    """How many rows of `values` `procedure` rejects at `level`."""
    threshold, alternative = (0.0, "greater") if use == "difference" else (HARM_BOUND, "less")
    if procedure == "mean_test":
        return sum(
            r.p_value <= level
            for start in range(0, len(values), BATCH)
            for r in mean_tests(
                values[start : start + BATCH],
                rng=rng,
                thresholds=threshold,
                alternative=alternative,
                confidence=CONFIDENCE,
                resamples=resamples,
                skew_allowance=allowance,
            )
        )
    if procedure == "sign_flip" and use == "difference":
        return sum(
            sign_flip_test(row, confidence=CONFIDENCE, rng=rng).p_value <= level for row in values
        )
    if procedure == "student_t_bound" and use == "harm":
        return sum(
            harm_bound(row, bound=HARM_BOUND, confidence=CONFIDENCE).p_value <= level
            for row in values
        )
    raise ValueError(f"unknown procedure {procedure!r} for the {use} use")


def rejection_rate(
    layout: Layout,
    n: int,
    n_reps: int,
    rng: np.random.Generator,
    procedure: str = "mean_test",
    resamples: int = DEFAULT_RESAMPLES,
    skew_allowance: float = DEFAULT_SKEW_ALLOWANCE,
    level: float = LEVEL,
) -> float:
    """Share of `n_reps` samples of n seeds on which `procedure` rejects at `level`.

    Args:
        layout: The law of the per-seed values.
        n: Held-out seeds per sample.
        n_reps: Samples.
        rng: Draws the values and the tests' resamples.
        procedure: "mean_test", or the old test of the layout's use (`OLD_PROCEDURE`).
        resamples: The mean test's bootstrap resamples.
        skew_allowance: The mean test's skewness allowance (0: bootstrap-t and Student t only).
        level: One-sided level (`LEVEL`; 0.001 is a Holm step over 25 candidates).

    Raises:
        ValueError: for `n_reps` < 1 or a procedure that does not fit the use.
    """
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps!r}")
    values = draw(layout, n, n_reps, rng)
    rejected = _rejections(procedure, values, layout.use, rng, resamples, skew_allowance, level)
    return rejected / n_reps


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Rejection rate of the mean test under every null layout at every sample size."""
    return [
        CalibrationResult(
            procedure=f"mean_test_{layout.use}",
            layout=f"{layout.name}_n{n}",
            level=LEVEL,
            n_reps=n_reps,
            rejection_rate=rejection_rate(layout, n, n_reps, rng),
        )
        for layout in LAYOUTS
        for n in SAMPLE_SIZES
    ]


def power_studies(n_reps: int, rng: np.random.Generator) -> list[PowerResult]:
    """Rejection rate of the mean test off the null (reported, not a level)."""
    return [
        PowerResult(
            f"mean_test_{layout.use}",
            f"{layout.name}_n{n}",
            LEVEL,
            n_reps,
            rejection_rate(layout, n, n_reps, rng),
        )
        for layout, n in POWER_LAYOUTS
    ]
