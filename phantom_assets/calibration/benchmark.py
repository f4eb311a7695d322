"""Coverage of the benchmark intervals and level of the slope test (DESIGN §5, §5a).

Every study simulates protocol-shaped rows -- 2 policies × 5 α × n episode seeds × T training
seeds -- and calls the real `benchmark_curves`, `paired_difference` and `revenue_regression` on
them. The replications ride along as the optional `k` design key, so one call evaluates all of
them (each k group is an independent replication; `k` is grouped by like any design key).

Layout of a replication (additive; D = the layout's standardized law):
    y[p, α, s, t] = μ_p(α) + 10·u[s] + 3·η[p, α, s] + τ[p, t] + 2·e[p, α, s, t]
with the episode effect u shared by both policies and every α (common random numbers), u, η, e ~ D,
and τ[p, t] ~ N(0, 2²) the training-seed effect, fixed within a replication (the intervals are
conditional on the trained policies, so the target is μ_p(α) + mean_t τ[p, t]).
μ_defended(α) = 105 − 30α, μ_baseline(α) = 100 (a zero slope: the null of the slope test).
D: `normal`; `skewed` = lognormal with log-sd 0.25 (skewness 0.78, an episode reward with a 25%
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
    benchmark_curves,
    paired_difference,
    revenue_regression,
)

__all__ = ["ALPHAS", "LAYOUTS", "SEED_LAYOUTS", "simulate", "studies"]

ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
LAYOUTS = ("normal", "skewed", "heavy")
SEED_LAYOUTS = ((3, 3), (8, 1), (8, 3), (30, 3))
"""(episode seeds, training seeds): small n, demo (8 × 1), and the study profile (30 × 3)."""
REGRESSION_MIN_CLUSTERS = 8
DEFENDED, BASELINE = "ppo-robust-a050", "ppo-baseline-a050"
LEVEL, TEST_LEVEL = 0.95, 0.05
_LOG_SD = 0.25


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


def simulate(
    layout: str, n_seeds: int, n_train: int, n_reps: int, rng: np.random.Generator
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Protocol rows of `n_reps` replications (column `k`) and their targets.

    Returns:
        (rows with `k, policy, alpha, seed, train_seed, revenue`; targets with
        `k, policy, alpha, target` = μ_p(α) + mean_t τ[p, t]).
    """
    if min(n_seeds, n_train, n_reps) < 1:
        raise ValueError(f"need n_seeds, n_train, n_reps >= 1: {n_seeds}, {n_train}, {n_reps}")
    shape = (n_reps, 2, len(ALPHAS), n_seeds, n_train)
    alphas = np.asarray(ALPHAS)
    mu = np.stack([105.0 - 30.0 * alphas, np.full(alphas.size, 100.0)])[None, :, :, None, None]
    tau = 2.0 * rng.standard_normal((n_reps, 2, 1, 1, n_train))
    y = (mu + tau + 10.0 * _draw(layout, rng, (n_reps, 1, 1, n_seeds, 1))
         + 3.0 * _draw(layout, rng, (*shape[:4], 1)) + 2.0 * _draw(layout, rng, shape))  # fmt: skip
    rep, pol, alpha, seed, train = np.indices(shape).reshape(5, -1)
    policies = np.array([DEFENDED, BASELINE])
    rows = pl.DataFrame({"k": rep, "policy": policies[pol], "alpha": alphas[alpha], "seed": seed,
                         "train_seed": train, "revenue": y.ravel()})  # fmt: skip
    target = np.broadcast_to(mu + tau.mean(axis=-1, keepdims=True), (*shape[:3], 1, 1))
    rep, pol, alpha = np.indices(shape[:3]).reshape(3, -1)
    targets = pl.DataFrame({"k": rep, "policy": policies[pol], "alpha": alphas[alpha],
                            "target": target.ravel()})  # fmt: skip
    return rows, targets


def _covered(frame: pl.DataFrame, target: pl.Expr) -> float:
    """Share of rows whose [ci_low, ci_high] holds `target` (NaN bounds count as misses)."""
    hit = (pl.col("ci_low") <= target) & (target <= pl.col("ci_high"))
    return float(frame.select(hit.fill_null(False).mean()).item())


def _study(
    layout: str, n_seeds: int, n_train: int, n_reps: int, rng: np.random.Generator
) -> list[CalibrationResult]:
    """Curve, paired-difference and (n_seeds >= 8) slope results of one layout."""
    rows, targets = simulate(layout, n_seeds, n_train, n_reps, rng)
    name = f"{layout}_seeds{n_seeds}_train{n_train}"
    curves = benchmark_curves(rows, ["revenue"], LEVEL).join(targets, on=["k", "policy", "alpha"])
    paired_target = targets.pivot("policy", index=["k", "alpha"], values="target").select(
        "k", "alpha", target=pl.col(DEFENDED) - pl.col(BASELINE)
    )
    diffs = paired_difference(rows, DEFENDED, BASELINE, ["revenue"], LEVEL)
    diffs = diffs.join(paired_target, on=["k", "alpha"])
    out = [
        CalibrationResult("curve_t_ci", name, LEVEL, n_reps,
                          coverage=_covered(curves, pl.col("target"))),
        CalibrationResult("paired_difference_t_ci", name, LEVEL, n_reps,
                          coverage=_covered(diffs, pl.col("target"))),
    ]  # fmt: skip
    if n_seeds >= REGRESSION_MIN_CLUSTERS:
        fits = revenue_regression(rows, "revenue", by=("policy",), level=LEVEL)
        slope = fits.filter(pl.col("policy") == DEFENDED).rename(
            {"slope_ci_low": "ci_low", "slope_ci_high": "ci_high"}
        )
        null = fits.filter(pl.col("policy") == BASELINE)["slope_p_value"].to_numpy()
        regression = f"{layout}_clusters{n_seeds}_train{n_train}_alphas{len(ALPHAS)}"
        out += [
            CalibrationResult("slope_cr1_t_ci", regression, LEVEL, n_reps,
                              coverage=_covered(slope, pl.lit(-30.0))),
            CalibrationResult("slope_cr1_t_test_zero_slope_null", regression, TEST_LEVEL,
                              n_reps, rejection_rate=float(np.mean(null < TEST_LEVEL))),
        ]  # fmt: skip
    return out


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Coverage of the curve and paired-difference t intervals at n = 3, 8 (× 1 and × 3 training
    seeds) and 30 episode seeds, coverage of the CR1 + t(G − 1) slope interval and the level of
    its test at G = 8 and 30 clusters, for every layout. Coverage averages the 5 α (and both
    policies) of a replication, so the binomial SE at `n_reps` is an upper bound."""
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    return [result for layout in LAYOUTS for n_seeds, n_train in SEED_LAYOUTS
            for result in _study(layout, n_seeds, n_train, n_reps, rng)]  # fmt: skip
