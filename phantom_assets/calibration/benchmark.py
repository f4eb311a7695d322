"""Coverage of the benchmark intervals and level of the slope test
(docs/statistics.md#benchmark-intervals).

Every study simulates protocol-shaped rows -- 2 policies × 3 α × 2 K × both detectors × n episode
seeds × T training seeds, the shape of `nominal.parquet` -- and calls the real `benchmark_curves`,
`paired_differences` (defended − baseline, and the detector value fitted − permuted) and
`revenue_regression` on them. The replications ride along as the `replicate` design key, so one
call evaluates all of them (each replicate is grouped by like any design key).

Layout of a replication (additive; D = the layout's standardized law):
    y[p, α, K, d, s, t] = μ_p(α, K, d) + 10·u[s] + 3·η[p, α, K, s] + 1.5·ζ[p, α, K, d, s]
                          + τ[p, t] + 2·e[p, α, K, d, s, t]
with the episode effect u shared by both policies, every cell and both detectors, and η shared by
both detectors of a cell (common random numbers); u, η, ζ, e ~ D; τ[p, t] ~ N(0, 2²) the
training-seed effect, fixed within a replication (the intervals are conditional on the trained
policies, so the target is μ_p(α, K, d) + mean_t τ[p, t]).
μ_defended = 105 − 30α + K + 4·[d = fitted] (a detector value of 4), μ_baseline = 100 + K/2 (a
zero slope in α and a zero detector value: the nulls).
D: `normal`; `skewed` = lognormal with log-sd 0.25 (skewness 0.78, an episode profit with a 25%
coefficient of variation); `heavy` = Student t with 3 df.

Known limit (measured with 20,000 reps, not a study here): under strongly skewed episode
effects (lognormal log-sd 0.5, skewness 1.75) the t-interval covers 0.93 / 0.92 / 0.94 at
n = 3 / 8 / 30 episode seeds instead of 0.95.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.evaluation.benchmark import (
    PAIR_COLUMNS,
    benchmark_curves,
    paired_differences,
    revenue_regression,
)
from phantom_assets.market import DETECTOR_MODES

__all__ = ["ALPHAS", "KS", "LAYOUTS", "SEED_LAYOUTS", "simulate", "studies"]

ALPHAS = (0.0, 0.5, 1.0)
KS = (2, 8)
LAYOUTS = ("normal", "skewed", "heavy")
SEED_LAYOUTS = ((3, 3), (8, 1), (8, 3), (30, 3))
"""(episode seeds, training seeds): small n, demo (8 × 1), and the study profile (30 × 3)."""
REGRESSION_MIN_CLUSTERS = 8
DEFENDED, BASELINE = "ppo-robust-a050", "ppo-baseline-a050"
LEVEL, TEST_LEVEL = 0.95, 0.05
DETECTOR_VALUE = 4.0
_LOG_SD = 0.25
_FITTED, _PERMUTED = DETECTOR_MODES
_PAIRS = pl.DataFrame(
    [
        ("defended_vs_baseline", DEFENDED, _FITTED, BASELINE, _FITTED),
        ("defended_vs_baseline", DEFENDED, _PERMUTED, BASELINE, _PERMUTED),
        ("detector_value", DEFENDED, _FITTED, DEFENDED, _PERMUTED),
        ("detector_value", BASELINE, _FITTED, BASELINE, _PERMUTED),
    ],
    schema=list(PAIR_COLUMNS),
    orient="row",
)


def _draw(layout: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Mean-0, variance-1 draws of the layout's law."""
    if layout == "normal":
        return rng.standard_normal(shape)
    if layout == "skewed":
        raw = rng.lognormal(0.0, _LOG_SD, shape)
        var = (np.exp(_LOG_SD**2) - 1.0) * np.exp(_LOG_SD**2)
        return (raw - np.exp(_LOG_SD**2 / 2.0)) / np.sqrt(var)
    if layout == "heavy":
        return rng.standard_t(3, shape) / np.sqrt(3.0)
    raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")


def _means() -> np.ndarray:
    """μ_p(α, K, d) as a (2, α, K, detectors) array (defended first)."""
    alpha = np.asarray(ALPHAS)[:, None, None]
    k = np.asarray(KS, dtype=np.float64)[None, :, None]
    fitted = (np.asarray(DETECTOR_MODES) == _FITTED)[None, None, :]
    defended = 105.0 - 30.0 * alpha + k + DETECTOR_VALUE * fitted
    baseline = np.broadcast_to(100.0 + k / 2.0, defended.shape)
    return np.stack([defended, baseline])


def simulate(
    layout: str, n_seeds: int, n_train: int, n_reps: int, rng: np.random.Generator
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Protocol rows of `n_reps` replications (column `replicate`) and their targets.

    Returns:
        (rows with `replicate, policy, tier, mode, alpha, k, detector, seed, train_seed, profit`;
        targets with `replicate, policy, alpha, k, detector, target` = μ + mean_t τ[p, t]).
    """
    if min(n_seeds, n_train, n_reps) < 1:
        raise ValueError(f"need n_seeds, n_train, n_reps >= 1: {n_seeds}, {n_train}, {n_reps}")
    cells = (2, len(ALPHAS), len(KS), len(DETECTOR_MODES))
    shape = (n_reps, *cells, n_seeds, n_train)
    mu = _means()[None, ..., None, None]
    tau = 2.0 * rng.standard_normal((n_reps, 2, 1, 1, 1, 1, n_train))
    episode = 10.0 * _draw(layout, rng, (n_reps, 1, 1, 1, 1, n_seeds, 1))
    cell = 3.0 * _draw(layout, rng, (n_reps, 2, len(ALPHAS), len(KS), 1, n_seeds, 1))
    detector = 1.5 * _draw(layout, rng, (*shape[:-1], 1))
    y = mu + tau + episode + cell + detector + 2.0 * _draw(layout, rng, shape)
    rep, pol, alpha, k, det, seed, train = np.indices(shape).reshape(len(shape), -1)
    policies, modes = np.array([DEFENDED, BASELINE]), np.array(["robust", "baseline"])
    rows = pl.DataFrame(
        {
            "replicate": rep,
            "policy": policies[pol],
            "tier": "ppo",
            "mode": modes[pol],
            "alpha": np.asarray(ALPHAS)[alpha],
            "k": np.asarray(KS)[k],
            "detector": np.asarray(DETECTOR_MODES)[det],
            "seed": seed,
            "train_seed": train,
            "profit": y.ravel(),
        }
    )
    target = np.broadcast_to(mu + tau.mean(axis=-1, keepdims=True), (n_reps, *cells, 1, 1))
    rep, pol, alpha, k, det = np.indices((n_reps, *cells)).reshape(5, -1)
    targets = pl.DataFrame(
        {
            "replicate": rep,
            "policy": policies[pol],
            "alpha": np.asarray(ALPHAS)[alpha],
            "k": np.asarray(KS)[k],
            "detector": np.asarray(DETECTOR_MODES)[det],
            "target": target.ravel(),
        }
    )
    return rows, targets


def _covered(frame: pl.DataFrame, target: pl.Expr) -> float:
    """Share of rows whose [ci_low, ci_high] holds `target` (NaN bounds count as misses)."""
    hit = (pl.col("ci_low") <= target) & (target <= pl.col("ci_high"))
    return float(frame.select(hit.fill_null(False).mean()).item())


def _pair_targets(targets: pl.DataFrame) -> pl.DataFrame:
    """The target of every `_PAIRS` comparison per replicate and cell."""
    cell = ["replicate", "alpha", "k"]
    arm = targets.select(*cell, "policy", "detector", "target")
    right = arm.rename(
        {"policy": "reference", "detector": "reference_detector", "target": "reference_target"}
    )
    joined = _PAIRS.join(arm, on=["policy", "detector"]).join(
        right, on=[*cell, "reference", "reference_detector"]
    )
    return joined.select(*PAIR_COLUMNS, *cell, target=pl.col("target") - pl.col("reference_target"))


def _study(
    layout: str, n_seeds: int, n_train: int, n_reps: int, rng: np.random.Generator
) -> list[CalibrationResult]:
    """Curve, paired-difference, detector-value and (n_seeds >= 8) slope results of one layout."""
    rows, targets = simulate(layout, n_seeds, n_train, n_reps, rng)
    name = f"{layout}_seeds{n_seeds}_train{n_train}"
    keys = ["replicate", "policy", "alpha", "k", "detector"]
    curves = benchmark_curves(rows, ["profit"], LEVEL).join(targets, on=keys)
    diffs = paired_differences(rows, _PAIRS, ["profit"], LEVEL).join(
        _pair_targets(targets), on=[*PAIR_COLUMNS, "replicate", "alpha", "k"]
    )
    out = [
        CalibrationResult(
            "curve_t_ci", name, LEVEL, n_reps, coverage=_covered(curves, pl.col("target"))
        )
    ]
    for comparison, procedure in (
        ("defended_vs_baseline", "paired_difference_t_ci"),
        ("detector_value", "detector_value_t_ci"),
    ):
        part = diffs.filter(pl.col("comparison") == comparison)
        out.append(
            CalibrationResult(
                procedure, name, LEVEL, n_reps, coverage=_covered(part, pl.col("target"))
            )
        )
    if n_seeds >= REGRESSION_MIN_CLUSTERS:
        fits = revenue_regression(rows, "profit", by=("policy",), level=LEVEL)
        slope = fits.filter(pl.col("policy") == DEFENDED).rename(
            {"slope_ci_low": "ci_low", "slope_ci_high": "ci_high"}
        )
        null = fits.filter(pl.col("policy") == BASELINE)["slope_p_value"].to_numpy()
        regression = f"{layout}_clusters{n_seeds}_train{n_train}_alphas{len(ALPHAS)}"
        out += [
            CalibrationResult(
                "slope_cr1_t_ci", regression, LEVEL, n_reps, coverage=_covered(slope, pl.lit(-30.0))
            ),
            CalibrationResult(
                "slope_cr1_t_test_zero_slope_null",
                regression,
                TEST_LEVEL,
                n_reps,
                rejection_rate=float(np.mean(null < TEST_LEVEL)),
            ),
        ]
    return out


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Coverage of the curve, paired-difference and detector-value t intervals at n = 3, 8 (× 1
    and × 3 training seeds) and 30 episode seeds, coverage of the CR1 + t(G − 1) slope interval
    and the level of its test at G = 8 and 30 clusters, for every layout. Coverage averages the
    cells (α × K × detector, and both policies or pairs) of a replication, so the binomial SE at
    `n_reps` is an upper bound."""
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    return [
        result
        for layout in LAYOUTS
        for n_seeds, n_train in SEED_LAYOUTS
        for result in _study(layout, n_seeds, n_train, n_reps, rng)
    ]
