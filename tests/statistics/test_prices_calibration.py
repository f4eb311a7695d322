"""The store-price intervals cover and the human − agent premium test holds its level
(docs/statistics.md#store-price-intervals), measured by `phantom_assets.calibration.prices` with
N_REPS replications per layout: real `fit_price_model` / `observed_coi` / `coi_difference` on
simulated stores with experiment random effects and unequal sessions per experiment by class (agents
3-6, humans 1-2). Slow tier (`make test-all`, what CI runs): ~70 s of CPU; `phantom bench
calibration --studies prices` runs it alone."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from phantom_assets.calibration import STUDY_MODULES, CalibrationResult
from phantom_assets.calibration.prices import (
    ANCHORS,
    LAYOUTS,
    TEST_LEVEL,
    simulate_quotes,
    studies,
)
from phantom_assets.market.prices import coi_difference, observed_coi

pytestmark = pytest.mark.slow
N_REPS = 300
INTERVALS = (
    "anchor_cr3_t_ci",
    "noise_sd_cr3_log_t_ci",
    "premium_cr3_t_ci",
    "premium_difference_welch_cr3_ci",
)
IDENTIFIED = ("markup_cr3_t_ci", "s0_cr3_t_ci")
TRUE_ANCHORS = pl.DataFrame(
    {"product_id": [f"P{i:02d}" for i in range(ANCHORS.size)], "anchor": ANCHORS}
)


@pytest.fixture(scope="module")
def results() -> list[CalibrationResult]:
    return studies(N_REPS, np.random.default_rng(20250602))


def by_procedure(results: list[CalibrationResult], procedure: str) -> list[CalibrationResult]:
    return [r for r in results if r.procedure == procedure]


def test_the_price_study_is_registered_and_covers_every_layout(results):
    assert "prices" in STUDY_MODULES
    for procedure in INTERVALS:
        layouts = {x.name for x in LAYOUTS if x.score_noise or "noise" not in procedure}
        assert {r.layout for r in by_procedure(results, procedure)} == layouts
    saturating = {x.name for x in LAYOUTS if x.curve == "saturating"}
    for procedure in IDENTIFIED:  # m and s0 are scored where the curve saturates in the data
        rows = by_procedure(results, procedure)
        assert {r.layout for r in rows} == saturating
        assert all(r.n_reps >= 0.95 * N_REPS for r in rows)  # s0 identified in almost every rep
    assert by_procedure(results, "pooled_anchor_cr3_t_ci")  # small layouts pool rare products


@pytest.mark.parametrize("procedure", [*INTERVALS, *IDENTIFIED, "pooled_anchor_cr3_t_ci"])
def test_intervals_cover_at_least_nominal_minus_three_binomial_se(results, procedure):
    misses = [r.to_dict() for r in by_procedure(results, procedure) if not r.holds]
    assert not misses


def test_premium_difference_test_holds_its_level_under_equal_premiums(results):
    rows = by_procedure(results, "premium_difference_welch_cr3_test")
    assert {r.layout for r in rows} == {x.name for x in LAYOUTS if x.null}
    assert all(r.level == TEST_LEVEL and r.holds for r in rows), [r.to_dict() for r in rows]


def test_premium_difference_test_detects_the_demo_engagement_gap():
    """Not trivially conservative: humans view 3 extra items per session, agents 1."""
    rng = np.random.default_rng(4)
    layout = LAYOUTS[0]
    p = [coi_difference(simulate_quotes(layout, rng), TRUE_ANCHORS).p_value for _ in range(40)]
    assert np.mean(np.asarray(p) < TEST_LEVEL) >= 0.9


def test_the_study_fails_an_interval_that_treats_quotes_as_independent():
    """The check can fail: the iid t interval for a class premium (quotes as independent units)
    under-covers under the same clustered layout; the clustered one on the same draws holds."""
    rng = np.random.default_rng(8)
    layout, n_reps = LAYOUTS[0], 300
    truth = {"human": [], "agent": []}
    naive, clustered = [], []
    big = simulate_quotes(
        type(layout)("truth", 6_000, 6_000, layout.views_human, layout.views_agent), rng
    )
    for actor, value in big.group_by("actor").agg((pl.col("relative") - 1).mean()).iter_rows():
        truth[actor] = value
    for _ in range(n_reps):  # one simulated store per replication
        quotes = simulate_quotes(layout, rng)
        coi = observed_coi(quotes, TRUE_ANCHORS)
        for row in coi.iter_rows(named=True):
            target = truth[row["class"]]
            x = quotes.filter(pl.col("actor") == row["class"])["relative"].to_numpy() - 1.0
            half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
            naive.append(abs(x.mean() - target) <= half)
            clustered.append(row["ci_low"] <= target <= row["ci_high"])
    as_result = lambda hits: CalibrationResult(  # noqa: E731
        "premium_ci", layout.name, 0.95, n_reps, coverage=float(np.mean(hits))
    )
    assert not as_result(naive).holds, as_result(naive).to_dict()
    assert as_result(clustered).holds, as_result(clustered).to_dict()
