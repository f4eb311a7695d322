"""The gate's mean test (`studentized`): its bootstrap-t and skewness-allowance parts against
direct computations and scipy, its inverted interval, monotonicity, mirror, determinism,
validation and degenerate data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from phantom_assets.audit import studentized
from phantom_assets.audit.studentized import (
    DEFAULT_RESAMPLES,
    DEFAULT_SKEW_ALLOWANCE,
    MeanTestResult,
    mean_test,
    mean_tests,
)

LEVEL = 0.025


def _direct(x: np.ndarray, seed: int, resamples: int, allowance: float, theta: float = 0.0):
    """(p, ci_low) of H0: mean <= theta, computed the textbook way on the same resamples."""
    n = x.size
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))  # what the test draws
    se = x.std(ddof=1) / math.sqrt(n)
    t_obs = (x.mean() - theta) / se
    boot = x[idx]
    tstar = (boot.mean(axis=1) - x.mean()) / (boot.std(axis=1, ddof=1) / math.sqrt(n))
    p_boot = (1 + np.sum(tstar >= t_obs)) / (resamples + 1)
    k = allowance / (6 * math.sqrt(n))
    if allowance == 0:
        q = t_obs
    else:  # the root of q + k(2q² + 1) = T on the increasing branch
        q = optimize.brentq(lambda q: q + k * (2 * q * q + 1) - t_obs, -1 / (4 * k), 50.0)
    p_cf = stats.t.sf(q, n - 1)
    kth = math.floor(LEVEL * (resamples + 1))
    q_a = stats.t.isf(LEVEL, n - 1)
    critical = max(np.sort(tstar)[-kth], q_a + k * (2 * q_a**2 + 1))
    return max(p_boot, p_cf), x.mean() - critical * se


@pytest.mark.parametrize("allowance", [0.0, DEFAULT_SKEW_ALLOWANCE])
@pytest.mark.parametrize(("seed", "n", "shift"), [(0, 24, 0.3), (1, 32, 0.6), (2, 60, 0.4)])
def test_mean_test_is_the_larger_of_a_textbook_bootstrap_t_p_and_a_cornish_fisher_t_p(
    seed, n, shift, allowance
):
    x = np.random.default_rng(seed).lognormal(0.0, 0.5, n) - np.exp(0.125) + shift
    result = mean_test(
        x, rng=np.random.default_rng(seed + 10), resamples=1999, skew_allowance=allowance
    )
    p, low = _direct(x, seed + 10, 1999, allowance)
    assert result.p_value == pytest.approx(p, rel=1e-9)
    assert result.ci_low == pytest.approx(low, rel=1e-9)
    assert result.mean == pytest.approx(x.mean()) and result.n == n


@pytest.mark.parametrize("seed", range(4))
def test_without_allowance_the_test_is_never_less_conservative_than_scipys_t_test(seed):
    x = np.random.default_rng(seed).normal(0.5, 1.0, 32)
    result = mean_test(x, rng=np.random.default_rng(seed), skew_allowance=0.0)
    t_p = stats.ttest_1samp(x, 0.0, alternative="greater").pvalue
    assert result.p_value >= t_p * (1 - 1e-12)  # equal where the t part binds
    t_low, t_high = stats.t.interval(0.95, 31, x.mean(), stats.sem(x))
    assert result.ci_low <= t_low + 1e-12 and result.ci_high >= t_high - 1e-12


@pytest.mark.parametrize("alternative", ["greater", "less"])
@pytest.mark.parametrize("seed", range(8))
def test_the_interval_excludes_the_threshold_exactly_when_the_test_rejects(seed, alternative):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.55 if alternative == "greater" else -0.55, 1.0, 32)
    result = mean_test(x, rng=rng, alternative=alternative)
    assert result.rejects == (result.p_value <= LEVEL)


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_the_interval_bounds_are_the_shifted_tests_boundary(alternative):
    # Testing just inside the bound rejects, just outside does not (same resamples).
    x = np.random.default_rng(7).gamma(2.0, 1.0, 32)
    first = mean_test(x, rng=np.random.default_rng(3), alternative=alternative)
    bound = first.ci_low if alternative == "greater" else first.ci_high
    step = 1e-9 if alternative == "greater" else -1e-9
    inside = mean_test(
        x, rng=np.random.default_rng(3), threshold=bound - step, alternative=alternative
    )
    outside = mean_test(
        x, rng=np.random.default_rng(3), threshold=bound + step, alternative=alternative
    )
    assert inside.p_value <= LEVEL < outside.p_value
    assert inside.rejects and not outside.rejects


def test_p_rises_with_the_threshold_and_falls_for_the_mirror():
    x = np.random.default_rng(11).lognormal(0.0, 0.6, 32)
    thresholds = np.linspace(x.mean() - 1.0, x.mean() + 1.0, 41)
    greater = [mean_test(x, rng=np.random.default_rng(5), threshold=t).p_value for t in thresholds]
    less = [
        mean_test(x, rng=np.random.default_rng(5), threshold=t, alternative="less").p_value
        for t in thresholds
    ]
    assert np.all(np.diff(greater) >= 0) and np.all(np.diff(less) <= 0)
    assert greater[0] < LEVEL and greater[-1] > 0.5 and less[-1] < LEVEL


def test_less_is_the_mirror_of_greater_on_the_negated_values():
    x = np.random.default_rng(12).lognormal(-4.0, 0.8, 32)  # a right-skewed harm share
    less = mean_test(x, rng=np.random.default_rng(1), threshold=0.05, alternative="less")
    greater = mean_test(-x, rng=np.random.default_rng(1), threshold=-0.05)
    assert less.p_value == pytest.approx(greater.p_value)
    assert less.ci_high == pytest.approx(-greater.ci_low)
    assert less.ci_low == pytest.approx(-greater.ci_high)


def test_shifting_and_scaling_the_values_and_threshold_changes_nothing_but_the_units():
    x = np.random.default_rng(13).standard_t(3, 24) + 0.6
    base = mean_test(x, rng=np.random.default_rng(2), threshold=0.1)
    moved = mean_test(100.0 + 4.0 * x, rng=np.random.default_rng(2), threshold=100.4)
    assert moved.p_value == pytest.approx(base.p_value)
    assert moved.ci_low == pytest.approx(100.0 + 4.0 * base.ci_low)


def test_the_same_seed_gives_identical_results_and_batches_match_single_tests():
    x = np.random.default_rng(14).normal(0.3, 1.0, (5, 32))
    first = mean_tests(x, rng=np.random.default_rng(9), thresholds=[0, 0.1, 0.2, 0.3, 0.4])
    again = mean_tests(x, rng=np.random.default_rng(9), thresholds=[0, 0.1, 0.2, 0.3, 0.4])
    assert first == again  # bit-identical
    single = mean_test(x[2], rng=np.random.default_rng(9), threshold=0.2)
    assert single == first[2]  # a test's numbers do not depend on the rest of its batch
    # Where the bootstrap part binds (no allowance), another seed gives other resamples.
    seeds = [
        mean_test(x[2], rng=np.random.default_rng(s), threshold=0.2, skew_allowance=0.0)
        for s in (9, 10)
    ]
    assert seeds[0] != seeds[1]


def test_rng_use_depends_only_on_the_number_of_values_and_resamples():
    used = []
    for values in (np.zeros(24), np.random.default_rng(0).normal(size=24)):
        rng = np.random.default_rng(4)
        mean_test(values, rng=rng, resamples=999)
        used.append(rng.random())
    assert used[0] == used[1]


def test_resamples_drawn_in_chunks_for_long_samples_give_the_same_answer(monkeypatch):
    x = np.random.default_rng(17).gamma(2.0, 1.0, 40) - 1.7
    whole = mean_test(x, rng=np.random.default_rng(1), skew_allowance=0.0)
    monkeypatch.setattr(studentized, "_CHUNK", 40 * 1000)  # 10 chunks of 1,000 resamples
    chunked = mean_test(x, rng=np.random.default_rng(1), skew_allowance=0.0)
    se = x.std(ddof=1) / math.sqrt(x.size)  # the same test, at most up to Monte Carlo error
    assert chunked.p_value == pytest.approx(whole.p_value, abs=0.01)
    assert chunked.ci_low == pytest.approx(whole.ci_low, abs=0.1 * se)
    assert chunked.ci_high == pytest.approx(whole.ci_high, abs=0.1 * se)


def test_a_clear_effect_reaches_the_p_floor_far_below_holms_level_for_25_candidates():
    x = np.random.default_rng(15).normal(1.5, 1.0, 32)
    result = mean_test(x, rng=np.random.default_rng(0))
    assert result.p_value == pytest.approx(1.0 / (DEFAULT_RESAMPLES + 1))
    assert result.p_value < 0.025 / 25 / 5


@pytest.mark.parametrize(
    ("value", "threshold", "alternative"),
    [(0.0, 0.0, "greater"), (0.3, 0.0, "greater"), (0.0, 0.02, "less"), (0.02, 0.02, "less")],
)
def test_identical_values_are_no_evidence_and_never_reject(value, threshold, alternative):
    # Regression (v1 hotel): a policy identical to its twin. And harm 0 on every seed: zero-
    # inflated harm at the bound shows that 0.5% of the time at n = 24 (80% harm-free seeds).
    result = mean_test(
        np.full(24, value),
        rng=np.random.default_rng(0),
        threshold=threshold,
        alternative=alternative,
    )
    assert result.p_value == 1.0 and not result.rejects and result.mean == value
    assert math.isinf(result.ci_low) and math.isinf(result.ci_high)
    assert "no spread" in result.method and result.to_dict()["ci_low"] is None


def test_a_single_harmed_seed_among_unharmed_ones_cannot_show_the_mean_is_small():
    # A third of the resamples miss that seed: no spread there, t* = -inf, no upper bound.
    harm = np.zeros(32)
    harm[5] = 0.5
    result = mean_test(harm, rng=np.random.default_rng(0), threshold=0.02, alternative="less")
    assert result.mean < 0.02 and math.isinf(result.ci_high) and not result.rejects
    assert result.p_value > 0.3 and result.to_dict()["ci_high"] is None


def test_too_few_resamples_for_the_level_give_infinite_bounds_and_no_rejection():
    x = np.random.default_rng(16).normal(3.0, 1.0, 24)
    result = mean_test(x, rng=np.random.default_rng(0), resamples=19)  # 0.025 · 20 < 1
    assert math.isinf(result.ci_low) and math.isinf(result.ci_high)
    assert result.p_value == pytest.approx(1 / 20) and not result.rejects


def test_describe_and_to_dict_report_the_numbers():
    result = MeanTestResult(32, 0.5, 0.1, math.inf, 0.004, 0.0, "greater", "m", 0.95)
    assert result.to_dict()["ci_high"] is None and result.to_dict()["p_value"] == 0.004
    assert result.describe() == (
        "mean 0.5 over 32 held-out seeds, 95% CI [0.1, inf], one-sided p = 0.004"
    )


def test_describe_says_identical_values_are_no_evidence_in_words():
    # Why: this read "all 24 seeds equal 0: no spread, no evidence (one-sided p = 1 ...)".
    result = mean_test(np.zeros(24), rng=np.random.default_rng(0))
    assert result.no_spread and result.describe() == (
        "0 on each of the 24 held-out seeds, and identical values leave the test no spread to "
        "measure: no evidence either way"
    )


@pytest.mark.parametrize(
    ("values", "kwargs", "error", "message"),
    [
        (np.array([]), {}, ValueError, "empty"),
        (np.array([1.0]), {}, ValueError, "at least 2 values"),
        (np.array([1.0, np.nan, 2.0]), {}, ValueError, "finite, got nan at test 0, unit 1"),
        (np.array([1.0, np.inf]), {}, ValueError, "finite"),
        (np.ones((2, 3)), {}, ValueError, "1-D"),
        (np.ones(4), {"threshold": math.nan}, ValueError, "thresholds"),
        (np.ones(4), {"alternative": "two-sided"}, ValueError, "alternative"),
        (np.ones(4), {"confidence": 1.0}, ValueError, "confidence"),
        (np.ones(4), {"resamples": 0}, ValueError, "resamples"),
        (np.ones(4), {"skew_allowance": -1.0}, ValueError, "skew_allowance"),
        (np.ones(4), {"rng": 0}, TypeError, "Generator"),
    ],
)
def test_mean_test_rejects_bad_input_naming_it(values, kwargs, error, message):
    with pytest.raises(error, match=message):
        mean_test(values, **{"rng": np.random.default_rng(0), **kwargs})


@pytest.mark.parametrize(
    ("values", "thresholds", "message"),
    [
        (np.ones(4), 0.0, "2-D"),
        (np.ones((0, 4)), 0.0, "empty"),
        (np.ones((3, 4)), [0.0, 1.0], "one finite number or 3"),
    ],
)
def test_mean_tests_rejects_bad_shapes_naming_them(values, thresholds, message):
    with pytest.raises(ValueError, match=message):
        mean_tests(values, rng=np.random.default_rng(0), thresholds=thresholds)
