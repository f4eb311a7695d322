"""Benchmark statistics against numpy/scipy oracles; duplicated runs must not shrink SEs or CIs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from phantom_assets.evaluation import (
    CURVE_SCHEMA,
    benchmark_curves,
    bootstrap_mean_ci,
    cluster_ols,
    defended_vs_baseline,
    paired_difference,
    revenue_regression,
)
from tests.unit.evaluation.conftest import synthetic_evaluations

METRICS = ("revenue", "leakage")


def test_bootstrap_mean_ci_equals_the_explicit_numpy_resampling():
    values = np.random.default_rng(1).gamma(2.0, 3.0, 25)
    mean, low, high = bootstrap_mean_ci(values, np.random.default_rng(5), draws=2000)
    idx = np.random.default_rng(5).integers(0, values.size, size=(2000, values.size))
    oracle = values[idx].mean(axis=1)
    assert mean == pytest.approx(values.mean())
    assert (low, high) == pytest.approx(tuple(np.quantile(oracle, [0.025, 0.975])), rel=1e-12)


def test_bootstrap_mean_ci_agrees_with_scipy_percentile_bootstrap():
    values = np.random.default_rng(2).normal(10, 3, 40)
    _, low, high = bootstrap_mean_ci(values, np.random.default_rng(0), draws=20_000)
    ref = stats.bootstrap((values,), np.mean, n_resamples=20_000, method="percentile",
                          rng=np.random.default_rng(1)).confidence_interval  # fmt: skip
    assert low == pytest.approx(ref.low, abs=0.05) and high == pytest.approx(ref.high, abs=0.05)


def test_benchmark_curves_follow_the_contract_and_match_group_means(evaluations):
    curves = benchmark_curves(evaluations, np.random.default_rng(0), METRICS, draws=500)
    assert curves.schema == pl.Schema(CURVE_SCHEMA)
    assert curves.height == 2 * 3 * 2 and set(curves["n"].to_list()) == {10}
    assert set(curves["mode"].to_list()) == {"baseline", "robust"}
    row = curves.filter(policy="ppo-robust-a050", alpha=0.5, metric="revenue")
    expected = evaluations.filter(policy="ppo-robust-a050", alpha=0.5)["revenue"].mean()
    assert row["mean"][0] == pytest.approx(expected)
    assert (curves["ci_low"] <= curves["mean"]).all() and (
        curves["mean"] <= curves["ci_high"]
    ).all()


def test_benchmark_curves_of_one_group_equal_bootstrap_mean_ci(evaluations):
    one = evaluations.filter(policy="ppo-baseline-a050", alpha=1.0)
    curves = benchmark_curves(one, np.random.default_rng(3), ["revenue"], draws=800)
    expected = bootstrap_mean_ci(one.sort("seed")["revenue"].to_numpy(),
                                 np.random.default_rng(3), draws=800)  # fmt: skip
    assert tuple(curves.select("mean", "ci_low", "ci_high").row(0)) == pytest.approx(expected)


def test_duplicated_identical_runs_change_neither_curves_nor_regression(evaluations):
    """Regression for pitfall 6: duplicated identical configurations overstated significance."""
    doubled = pl.concat([evaluations, evaluations])
    curves = [benchmark_curves(f, np.random.default_rng(0), METRICS, 300) for f in (evaluations,
              doubled)]  # fmt: skip
    assert curves[0].equals(curves[1])
    fits = [revenue_regression(f) for f in (evaluations, doubled)]
    assert fits[0].equals(fits[1])
    # The guard matters: without de-duplication a non-clustered SE shrinks by about sqrt(2).
    part = evaluations.filter(policy="ppo-baseline-a050")
    raw = pl.concat([part, part])
    naive = [cluster_ols(f["alpha"].to_numpy(), f["revenue"].to_numpy(), np.arange(f.height))
             for f in (part, raw)]  # fmt: skip
    assert naive[1].se_slope < 0.75 * naive[0].se_slope


def test_pooled_regression_counts_one_configuration_stored_under_two_keys_once(evaluations):
    part = evaluations.filter(policy="ppo-baseline-a050").with_columns(config_hash=pl.lit("abc"))
    twin = part.with_columns(policy=pl.lit("ppo-baseline-a030"))
    single = revenue_regression(part, by=["config_hash"])
    pooled = revenue_regression(pl.concat([part, twin]), by=["config_hash"])
    assert single.equals(pooled)


def test_cluster_ols_matches_polyfit_and_an_explicit_sandwich_oracle():
    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(6), 5)
    x = rng.uniform(0, 1, 30)
    y = 2 + 3 * x + rng.normal(0, 1, 6)[clusters] + rng.normal(0, 0.5, 30)
    fit = cluster_ols(x, y, clusters)
    slope, intercept = np.polyfit(x, y, 1)
    assert (fit.intercept, fit.slope) == pytest.approx((intercept, slope))
    design = np.column_stack([np.ones(30), x])
    resid = y - design @ np.array([intercept, slope])
    bread = np.linalg.inv(design.T @ design)
    meat = np.zeros((2, 2))
    for g in range(6):
        score = design[clusters == g].T @ resid[clusters == g]
        meat += np.outer(score, score)
    cov = bread @ meat @ bread * (6 / 5) * (29 / 28)
    assert (fit.se_intercept, fit.se_slope) == pytest.approx(tuple(np.sqrt(np.diag(cov))))
    assert (fit.n_obs, fit.n_clusters) == (30, 6)


def test_cluster_ols_rejects_a_constant_regressor():
    with pytest.raises(ValueError, match="does not vary"):
        cluster_ols(np.ones(5), np.arange(5.0), np.arange(5))


def test_paired_difference_bootstraps_the_per_seed_differences(evaluations):
    diff = paired_difference(evaluations, "ppo-robust-a050", "ppo-baseline-a050",
                             np.random.default_rng(8), ["revenue"], draws=700)  # fmt: skip
    assert diff.height == 3 and set(diff["n"].to_list()) == {10}
    at = evaluations.filter(alpha=0.0).sort("seed")
    per_seed = (at.filter(policy="ppo-robust-a050")["revenue"]
                - at.filter(policy="ppo-baseline-a050")["revenue"]).to_numpy()  # fmt: skip
    first = diff.filter(alpha=0.0).select("mean", "ci_low", "ci_high").row(0)
    # Groups are bootstrapped in (alpha, metric) order with one shared index draw.
    assert first == pytest.approx(bootstrap_mean_ci(per_seed, np.random.default_rng(8), 700))
    # Pairing removes the shared episode effect (sd 10): CIs are narrow around the true +5.
    assert (diff["ci_high"] - diff["ci_low"]).max() < 5
    assert diff["mean"].min() > 3 and diff["mean"].max() < 7


def test_defended_vs_baseline_pairs_every_robust_policy_with_its_twin():
    frame = synthetic_evaluations(("qtable-baseline-a000", "qtable-robust-a000", "static-a000"))
    out = defended_vs_baseline(frame, np.random.default_rng(0), ["revenue"], draws=100)
    assert set(out["defended"].to_list()) == {"qtable-robust-a000"}
    assert set(out["baseline"].to_list()) == {"qtable-baseline-a000"}
