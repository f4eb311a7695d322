"""The benchmark intervals cover and the slope test holds its level
(docs/statistics.md#benchmark-intervals), measured by `phantom_assets.calibration.benchmark` with
N_REPS = 500 replications per layout on protocol-shaped rows (2 policies × 3 α × 2 K × both
detectors × n episode seeds × T training seeds) through the real functions."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.calibration import CalibrationResult, binomial_se
from phantom_assets.calibration.benchmark import LAYOUTS, SEED_LAYOUTS, simulate, studies
from phantom_assets.evaluation import benchmark_curves

N_REPS = 500
INTERVALS = ("curve_t_ci", "paired_difference_t_ci", "detector_value_t_ci", "slope_cr1_t_ci")


@pytest.fixture(scope="module")
def results() -> list[CalibrationResult]:
    return studies(N_REPS, np.random.default_rng(20240601))


def by_procedure(results: list[CalibrationResult], procedure: str) -> list[CalibrationResult]:
    return [r for r in results if r.procedure == procedure]


def test_every_layout_and_sample_size_is_studied(results):
    layouts = {(r.procedure, r.layout) for r in results}
    assert len(layouts) == len(results)
    for procedure in INTERVALS[:3]:
        assert len(by_procedure(results, procedure)) == len(LAYOUTS) * len(SEED_LAYOUTS)
    for procedure in ("slope_cr1_t_ci", "slope_cr1_t_test_zero_slope_null"):
        assert len(by_procedure(results, procedure)) == len(LAYOUTS) * 3  # G = 8 (× 1, × 3), 30
    assert all(r.n_reps == N_REPS for r in results)


@pytest.mark.parametrize("procedure", INTERVALS)
def test_intervals_cover_at_least_nominal_minus_three_binomial_se(results, procedure):
    misses = [r.to_dict() for r in by_procedure(results, procedure) if not r.holds]
    assert not misses


@pytest.mark.parametrize("procedure", INTERVALS)
def test_intervals_are_not_trivially_wide_under_normal_errors(results, procedure):
    """The t intervals are exact under normality, so coverage far above 0.95 would mean a bug."""
    for r in by_procedure(results, procedure):
        if r.layout.startswith("normal"):
            assert r.coverage is not None
            assert r.coverage <= r.level + 3 * binomial_se(r.level, r.n_reps), r.to_dict()


def test_slope_test_rejects_a_zero_slope_at_most_at_its_level(results):
    rows = by_procedure(results, "slope_cr1_t_test_zero_slope_null")
    assert all(r.level == 0.05 and r.holds for r in rows), [r.to_dict() for r in rows]


def test_the_study_fails_an_interval_that_counts_training_seeds_as_episode_seeds():
    """The study can fail: relabel (seed, train seed) as 24 independent seeds (pitfall §10.6)
    and the curve intervals under-cover, because the shared episode effect is ignored."""
    rows, targets = simulate("normal", 8, 3, 200, np.random.default_rng(7))
    naive = rows.with_columns(seed=pl.col("seed") * 3 + pl.col("train_seed")).drop("train_seed")
    keys = ["replicate", "policy", "alpha", "k", "detector"]
    curves = benchmark_curves(naive, ["profit"]).join(targets, on=keys)
    assert set(curves["n"]) == {24}
    hit = (curves["ci_low"] <= curves["target"]) & (curves["target"] <= curves["ci_high"])
    result = CalibrationResult(
        "naive_curve_t_ci", "normal_seeds8_train3", 0.95, 200, coverage=float(hit.mean())
    )
    assert not result.holds, result.to_dict()
