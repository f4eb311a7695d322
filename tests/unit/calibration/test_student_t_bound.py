"""The calibration study's comparator for the harm test: a one-sided Student-t test and its
inverted upper bound, against scipy (the gate itself uses `mean_tests`: tests/unit/audit)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from phantom_assets.calibration.student_t_bound import harm_bound


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [3, 8, 30])
def test_harm_bound_is_scipys_one_sided_t_test_and_interval(seed, n):
    harm = np.random.default_rng(seed).normal(0.05, 0.02, n)
    result = harm_bound(harm, bound=0.06, confidence=0.95)
    assert result.p_value == pytest.approx(stats.ttest_1samp(harm, 0.06, alternative="less").pvalue)
    upper = stats.t.interval(0.95, n - 1, harm.mean(), stats.sem(harm))[1]
    assert result.upper == pytest.approx(upper) and result.mean == pytest.approx(harm.mean())


@pytest.mark.parametrize("seed", range(20))
def test_the_upper_bound_is_within_the_bound_exactly_when_the_test_rejects(seed):
    harm = np.random.default_rng(seed).normal(0.05, 0.02, 8)
    result = harm_bound(harm, bound=0.06, confidence=0.95)
    assert result.within == (result.p_value <= 0.025)


def test_seeds_without_human_spend_are_left_out_and_too_few_seeds_bound_nothing():
    result = harm_bound(np.array([0.01, np.nan, 0.03]), bound=0.05, confidence=0.95)
    assert result.n == 2 and result.mean == pytest.approx(0.02)
    single = harm_bound(np.array([0.0, np.nan]), bound=0.05, confidence=0.95)
    assert single.upper == math.inf and single.p_value == 1.0 and not single.within
    assert single.to_dict()["upper"] is None  # JSON has no infinity
    assert harm_bound(np.array([np.nan]), bound=0.05, confidence=0.95).n == 0


def test_a_policy_that_harms_no_one_is_within_any_bound():
    # delta = 0 (static, heuristics): every seed's harm is exactly 0, no spread to inflate.
    result = harm_bound(np.zeros(8), bound=0.0, confidence=0.95)
    assert result.upper == 0.0 and result.p_value == 0.0 and result.within


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"bound": 1.5}, "share in"), ({"confidence": 1.0}, "confidence"), ({}, "1-D")],
)
def test_harm_bound_rejects_bad_arguments(kwargs, message):
    values = np.zeros((2, 2)) if not kwargs else np.zeros(3)
    with pytest.raises(ValueError, match=message):
        harm_bound(values, **{"bound": 0.05, "confidence": 0.95, **kwargs})
