"""Benchmark statistics against numpy/scipy oracles on protocol-shaped rows (policies × α ×
8 episode seeds × 3 training seeds): the episode seed is the unit, duplicates never shrink a CI."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

from phantom_assets.evaluation import (
    CURVE_SCHEMA,
    benchmark_curves,
    cluster_ols,
    defended_vs_baseline,
    episode_seed_means,
    paired_difference,
    revenue_regression,
    t_mean_ci,
)

METRICS = ("revenue", "leakage")
POLICIES = ("ppo-baseline-a050", "ppo-robust-a050", "static-a000")
ALPHAS = (0.0, 0.5, 1.0)
EPISODES, TRAIN_SEEDS = 8, 3


def protocol_rows(policies=POLICIES, alphas=ALPHAS, episodes=EPISODES, train_seeds=TRAIN_SEEDS,
                  seed=0) -> pl.DataFrame:  # fmt: skip
    """revenue = 100 − 30α + 5·(policy index) + episode effect (sd 10, shared by every policy and
    α) + training-seed effect + noise; `leakage` uniform noise."""
    rng = np.random.default_rng(seed)
    shape = (len(policies), len(alphas), episodes, train_seeds)
    pol, alpha, episode, train = np.indices(shape).reshape(4, -1)
    revenue = (100 - 30 * np.asarray(alphas)[alpha] + 5 * pol + rng.normal(0, 10, episodes)[episode]
               + rng.normal(0, 3, (len(policies), train_seeds))[pol, train]
               + rng.normal(0, 2, pol.size))  # fmt: skip
    return pl.DataFrame({
        "policy": np.asarray(policies)[pol], "alpha": np.asarray(alphas, dtype=float)[alpha],
        "seed": episode + 100, "train_seed": train, "revenue": revenue,
        "leakage": rng.uniform(0, 1, pol.size)})  # fmt: skip


@pytest.fixture
def rows() -> pl.DataFrame:
    return protocol_rows()


def seed_means(rows: pl.DataFrame, policy: str, alpha: float, metric: str = "revenue"):
    """Oracle: training seeds averaged per episode seed, in seed order."""
    part = rows.filter(policy=policy, alpha=alpha).sort("seed")
    return part.group_by("seed", maintain_order=True).agg(pl.col(metric).mean())[metric].to_numpy()


def test_t_mean_ci_matches_the_scipy_t_interval():
    values = np.random.default_rng(1).gamma(2.0, 3.0, 8)
    mean, low, high = t_mean_ci(values, level=0.9)
    oracle = stats.t.interval(0.9, values.size - 1, values.mean(), stats.sem(values))
    assert mean == pytest.approx(values.mean()) and (low, high) == pytest.approx(oracle)


def test_t_mean_ci_of_one_value_has_nan_bounds_because_the_interval_is_undefined():
    mean, low, high = t_mean_ci(np.array([3.0]))
    assert mean == 3.0 and np.isnan(low) and np.isnan(high)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5])
def test_benchmark_curves_reject_a_level_outside_zero_one(rows, level):
    with pytest.raises(ValueError, match="level"):
        benchmark_curves(rows, METRICS, level)


def test_benchmark_curves_follow_the_contract_with_n_equal_to_the_episode_seeds(rows):
    curves = benchmark_curves(rows, METRICS)
    assert curves.schema == pl.Schema(CURVE_SCHEMA)
    assert curves.height == len(POLICIES) * len(ALPHAS) * len(METRICS)
    assert set(curves["n"].to_list()) == {EPISODES}  # not 8 × 3 training seeds
    assert set(curves["mode"].to_list()) == {"baseline", "robust", "heuristic"}


@pytest.mark.parametrize(("policy", "alpha"), [("ppo-robust-a050", 0.5), ("static-a000", 1.0)])
def test_benchmark_curves_are_t_intervals_over_training_seed_averaged_episode_means(
    rows, policy, alpha
):
    row = benchmark_curves(rows, ["revenue"]).filter(policy=policy, alpha=alpha)
    means = seed_means(rows, policy, alpha)
    oracle = stats.t.interval(0.95, means.size - 1, means.mean(), stats.sem(means))
    assert row["mean"][0] == pytest.approx(means.mean())
    assert (row["ci_low"][0], row["ci_high"][0]) == pytest.approx(oracle)


def test_duplicated_training_seeds_change_neither_n_nor_the_curve_intervals(rows):
    """Regression: (seed, train_seed) rows were counted as independent (n = 270, not 30)."""
    once = benchmark_curves(rows, METRICS)
    doubled = benchmark_curves(pl.concat([rows, rows]), METRICS)
    relabelled = benchmark_curves(
        pl.concat([rows, rows.with_columns(pl.col("train_seed") + TRAIN_SEEDS)]), METRICS
    )
    assert doubled.equals(once)
    assert (relabelled["n"] == once["n"]).all()
    width = [f["ci_high"] - f["ci_low"] for f in (once, relabelled)]
    assert np.allclose(width[1].to_numpy(), width[0].to_numpy())


def test_one_episode_seed_gives_nan_bounds_not_a_zero_width_interval():
    curves = benchmark_curves(protocol_rows(episodes=1), ["revenue"])
    assert set(curves["n"].to_list()) == {1}
    assert curves["ci_low"].is_nan().all() and curves["ci_high"].is_nan().all()


def test_a_k_column_is_a_design_key_of_curves_differences_and_regression(rows):
    with_k = pl.concat([rows.with_columns(k=pl.lit(k)) for k in (1, 4)])
    curves = benchmark_curves(with_k, ["revenue"])
    assert curves.columns == [*list(CURVE_SCHEMA)[:4], "k", *list(CURVE_SCHEMA)[4:]]
    assert curves.height == 2 * len(POLICIES) * len(ALPHAS) and set(curves["n"]) == {EPISODES}
    diff = paired_difference(with_k, "ppo-robust-a050", "ppo-baseline-a050", ["revenue"])
    assert diff.height == 2 * len(ALPHAS) and set(diff["n"].to_list()) == {EPISODES}
    fits = revenue_regression(with_k)
    assert fits.height == 2 * len(POLICIES) and set(fits["n_clusters"]) == {EPISODES}


def test_paired_difference_pairs_one_to_one_so_n_is_the_number_of_episode_seeds(rows):
    """Regression for pitfall §10.10: a join on seed alone made 8 × 3 × 3 = 72 "pairs" of 8."""
    both = pl.concat([rows, rows])
    diff = paired_difference(both, "ppo-robust-a050", "ppo-baseline-a050", METRICS)
    assert set(diff["n"].to_list()) == {EPISODES}


def test_paired_difference_is_a_paired_t_interval_of_per_seed_mean_differences(rows):
    diff = paired_difference(rows, "ppo-robust-a050", "ppo-baseline-a050", ["revenue"])
    per_seed = seed_means(rows, "ppo-robust-a050", 0.0) - seed_means(rows, "ppo-baseline-a050", 0.0)
    oracle = stats.t.interval(0.95, EPISODES - 1, per_seed.mean(), stats.sem(per_seed))
    first = diff.filter(alpha=0.0)
    assert first["mean"][0] == pytest.approx(per_seed.mean())
    assert (first["ci_low"][0], first["ci_high"][0]) == pytest.approx(oracle)
    # Pairing removes the shared episode effect (sd 10): every CI is far narrower than 10.
    assert (diff["ci_high"] - diff["ci_low"]).max() < 10


def test_defended_vs_baseline_pairs_every_robust_policy_with_its_twin(rows):
    out = defended_vs_baseline(rows, ["revenue"])
    assert set(out["defended"].to_list()) == {"ppo-robust-a050"}
    assert set(out["baseline"].to_list()) == {"ppo-baseline-a050"}


def test_cluster_ols_matches_polyfit_a_sandwich_oracle_and_a_t_interval_with_g_minus_1_df():
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
    se = np.sqrt(np.diag(bread @ meat @ bread * (6 / 5) * (29 / 28)))
    assert (fit.se_intercept, fit.se_slope) == pytest.approx(tuple(se))
    assert (fit.n_obs, fit.n_clusters, fit.df) == (30, 6, 5)
    oracle = stats.t.interval(0.95, 5, slope, se[1])
    assert (fit.slope_ci_low, fit.slope_ci_high) == pytest.approx(oracle)
    assert fit.slope_p_value == pytest.approx(2 * stats.t.sf(abs(slope / se[1]), 5))


def test_cluster_ols_of_one_cluster_has_nan_standard_errors():
    fit = cluster_ols(np.arange(4.0), np.array([1.0, 3.0, 2.0, 5.0]), np.zeros(4))
    assert fit.n_clusters == 1 and np.isnan(fit.se_slope) and np.isnan(fit.slope_ci_low)


def test_cluster_ols_rejects_a_constant_regressor():
    with pytest.raises(ValueError, match="does not vary"):
        cluster_ols(np.ones(5), np.arange(5.0), np.arange(5))


def test_revenue_regression_averages_training_seeds_and_clusters_by_episode_seed(rows):
    fits = revenue_regression(rows)
    part = episode_seed_means(rows.filter(policy="static-a000"), ["revenue"])
    oracle = cluster_ols(part["alpha"].to_numpy(), part["revenue"].to_numpy(), part["seed"])
    row = fits.filter(policy="static-a000").drop("policy").row(0, named=True)
    assert row == pytest.approx(oracle.__dict__)
    assert (row["n_obs"], row["n_clusters"]) == (len(ALPHAS) * EPISODES, EPISODES)


def test_duplicated_or_relabelled_runs_do_not_shrink_the_regression_standard_error(rows):
    """Pitfall §10.6: duplicated identical configurations overstated significance."""
    once = revenue_regression(rows)
    assert_frame_equal(revenue_regression(pl.concat([rows, rows])), once, rel_tol=1e-12)
    relabelled = pl.concat([rows, rows.with_columns(pl.col("train_seed") + TRAIN_SEEDS)])
    assert revenue_regression(relabelled)["se_slope"].to_list() == pytest.approx(
        once["se_slope"].to_list()
    )


def test_pooled_regression_counts_one_configuration_stored_under_two_keys_once(rows):
    part = rows.filter(policy="ppo-baseline-a050").with_columns(config_hash=pl.lit("abc"))
    twin = part.with_columns(policy=pl.lit("ppo-baseline-a030"))
    single = revenue_regression(part, by=["config_hash"])
    pooled = revenue_regression(pl.concat([part, twin]), by=["config_hash"])
    assert_frame_equal(single, pooled, rel_tol=1e-12)
