"""Benchmark statistics against numpy/scipy oracles on protocol-shaped rows (policies × α × K ×
both detectors × 8 episode seeds × 3 training seeds): the episode seed is the unit, duplicates
never shrink a CI, paired comparisons join one-to-one."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

from phantom_assets.evaluation import (
    CURVE_SCHEMA,
    DIFFERENCE_SCHEMA,
    PAIR_COLUMNS,
    benchmark_curves,
    cluster_ols,
    episode_seed_means,
    paired_differences,
    revenue_regression,
    t_intervals,
)
from tests.unit.evaluation.conftest import protocol_rows

METRICS = ("profit", "leak")
POLICIES = {
    "dqn-baseline-a050": ("dqn", "baseline", 0.5),
    "dqn-robust-a050": ("dqn", "robust", 0.5),
    "static-a000": ("static", "heuristic", 0.0),
}
ALPHAS, KS, EPISODES, TRAIN_SEEDS = (0.0, 0.5, 1.0), (2, 8), 8, 3


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    return protocol_rows(POLICIES, ALPHAS, KS, EPISODES, TRAIN_SEEDS)


def seed_means(rows, policy, alpha, k=2, detector="fitted", metric="profit") -> np.ndarray:
    """Oracle: training seeds averaged per episode seed, in seed order."""
    part = rows.filter(policy=policy, alpha=alpha, k=k, detector=detector).sort("seed")
    return part.group_by("seed", maintain_order=True).agg(pl.col(metric).mean())[metric].to_numpy()


def pairs(*rows: tuple[str, str, str, str, str]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=list(PAIR_COLUMNS), orient="row")


def test_t_intervals_match_the_scipy_t_interval_per_group():
    values = np.random.default_rng(1).gamma(2.0, 3.0, 16)
    long = pl.DataFrame({"g": np.repeat([0, 1], 8), "value": values})
    out = t_intervals(long, ["g"], level=0.9).sort("g")
    for g, part in enumerate((values[:8], values[8:])):
        oracle = stats.t.interval(0.9, 7, part.mean(), stats.sem(part))
        assert out["mean"][g] == pytest.approx(part.mean()) and out["n"][g] == 8
        assert (out["ci_low"][g], out["ci_high"][g]) == pytest.approx(oracle)


def test_t_intervals_of_one_value_have_nan_bounds_because_the_interval_is_undefined():
    out = t_intervals(pl.DataFrame({"g": [0], "value": [3.0]}), ["g"], level=0.95)
    assert out["mean"][0] == 3.0 and np.isnan(out["ci_low"][0]) and np.isnan(out["ci_high"][0])


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5])
def test_benchmark_curves_reject_a_level_outside_zero_one(rows, level):
    with pytest.raises(ValueError, match="level"):
        benchmark_curves(rows, METRICS, level)


def test_curves_follow_the_contract_per_alpha_k_and_detector_with_n_episode_seeds(rows):
    curves = benchmark_curves(rows, METRICS)
    assert curves.schema == pl.Schema(CURVE_SCHEMA)
    assert curves.height == len(POLICIES) * len(ALPHAS) * len(KS) * 2 * len(METRICS)
    assert set(curves["n"].to_list()) == {EPISODES}  # not 8 × 3 training seeds
    assert set(curves["mode"].to_list()) == {"baseline", "robust", "heuristic"}


@pytest.mark.parametrize(
    ("policy", "alpha", "k", "detector"),
    [("dqn-robust-a050", 0.5, 8, "fitted"), ("static-a000", 1.0, 2, "permuted")],
)
def test_curves_are_t_intervals_over_training_seed_averaged_episode_means(
    rows, policy, alpha, k, detector
):
    row = benchmark_curves(rows, ["profit"]).filter(
        policy=policy, alpha=alpha, k=k, detector=detector
    )
    means = seed_means(rows, policy, alpha, k, detector)
    oracle = stats.t.interval(0.95, means.size - 1, means.mean(), stats.sem(means))
    assert row["mean"][0] == pytest.approx(means.mean())
    assert (row["ci_low"][0], row["ci_high"][0]) == pytest.approx(oracle)


def test_duplicated_training_seeds_change_neither_n_nor_the_curve_intervals(rows):
    """Regression: (seed, train_seed) rows were counted as independent (n = 270, not 30)."""
    once = benchmark_curves(rows, METRICS)
    assert benchmark_curves(pl.concat([rows, rows]), METRICS).equals(once)
    relabelled = benchmark_curves(
        pl.concat([rows, rows.with_columns(pl.col("train_seed") + TRAIN_SEEDS)]), METRICS
    )
    assert (relabelled["n"] == once["n"]).all()
    width = [f["ci_high"] - f["ci_low"] for f in (once, relabelled)]
    assert np.allclose(width[1].to_numpy(), width[0].to_numpy())


def test_one_episode_seed_gives_nan_bounds_not_a_zero_width_interval():
    curves = benchmark_curves(protocol_rows(POLICIES, episodes=1), ["profit"])
    assert set(curves["n"].to_list()) == {1}
    assert curves["ci_low"].is_nan().all() and curves["ci_high"].is_nan().all()


def test_detector_value_pairs_fitted_and_permuted_one_to_one_on_alpha_k_and_seed(rows):
    """Regression for pitfall §10.10: duplicated rows must not multiply the pairs."""
    value = pairs(("detector_value", "dqn-robust-a050", "fitted", "dqn-robust-a050", "permuted"))
    out = paired_differences(pl.concat([rows, rows]), value, ["profit"])
    assert out.schema == pl.Schema(DIFFERENCE_SCHEMA)
    assert out.height == len(ALPHAS) * len(KS) and set(out["n"]) == {EPISODES}
    per_seed = seed_means(rows, "dqn-robust-a050", 0.5, 8, "fitted") - seed_means(
        rows, "dqn-robust-a050", 0.5, 8, "permuted"
    )
    row = out.filter(alpha=0.5, k=8)
    oracle = stats.t.interval(0.95, EPISODES - 1, per_seed.mean(), stats.sem(per_seed))
    assert row["mean"][0] == pytest.approx(per_seed.mean()) == pytest.approx(4.0, abs=2.0)
    assert (row["ci_low"][0], row["ci_high"][0]) == pytest.approx(oracle)


def test_paired_differences_remove_the_shared_episode_effect(rows):
    twin = pairs(
        ("defended_vs_baseline", "dqn-robust-a050", "fitted", "dqn-baseline-a050", "fitted")
    )
    out = paired_differences(rows, twin, ["profit"])
    assert (out["ci_high"] - out["ci_low"]).max() < 10  # the episode effect has sd 10


def test_paired_differences_cover_every_pair_of_the_pair_table_at_once(rows):
    table = pairs(
        ("detector_value", "static-a000", "fitted", "static-a000", "permuted"),
        ("vs_static", "dqn-robust-a050", "fitted", "static-a000", "fitted"),
        ("vs_static", "dqn-baseline-a050", "fitted", "static-a000", "fitted"),
    )
    out = paired_differences(rows, table, METRICS)
    assert out.height == 3 * len(ALPHAS) * len(KS) * len(METRICS)
    one = paired_differences(rows, table[1:2], METRICS)
    assert_frame_equal(out.filter(policy="dqn-robust-a050"), one)


def test_paired_differences_need_a_detector_column(rows):
    table = pairs(("vs_static", "dqn-robust-a050", "fitted", "static-a000", "fitted"))
    with pytest.raises(ValueError, match="detector"):
        paired_differences(rows.drop("detector"), table, ["profit"])


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


def test_revenue_regression_is_per_k_averages_training_seeds_and_clusters_by_episode_seed(rows):
    fitted = rows.filter(detector="fitted").drop("detector")
    fits = revenue_regression(fitted)
    assert fits.height == len(POLICIES) * len(KS)
    part = episode_seed_means(fitted.filter(policy="static-a000", k=8), ["revenue"])
    oracle = cluster_ols(part["alpha"].to_numpy(), part["revenue"].to_numpy(), part["seed"])
    row = fits.filter(policy="static-a000", k=8).drop("policy", "k").row(0, named=True)
    assert row == pytest.approx(oracle.__dict__)
    assert (row["n_obs"], row["n_clusters"]) == (len(ALPHAS) * EPISODES, EPISODES)
    assert row["slope"] == pytest.approx(-30, abs=3)


def test_duplicated_or_relabelled_runs_do_not_shrink_the_regression_standard_error(rows):
    """Pitfall §10.6: duplicated identical configurations overstated significance."""
    once = revenue_regression(rows)
    assert_frame_equal(revenue_regression(pl.concat([rows, rows])), once, rel_tol=1e-12)
    relabelled = pl.concat([rows, rows.with_columns(pl.col("train_seed") + TRAIN_SEEDS)])
    assert revenue_regression(relabelled)["se_slope"].to_list() == pytest.approx(
        once["se_slope"].to_list()
    )


def test_pooled_regression_counts_one_configuration_stored_under_two_keys_once(rows):
    part = rows.filter(policy="dqn-baseline-a050").with_columns(config_hash=pl.lit("abc"))
    twin = part.with_columns(policy=pl.lit("dqn-baseline-a030"))
    single = revenue_regression(part, by=["config_hash"])
    pooled = revenue_regression(pl.concat([part, twin]), by=["config_hash"])
    assert_frame_equal(single, pooled, rel_tol=1e-12)
