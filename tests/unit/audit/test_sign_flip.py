"""Exact sign-flip test and its inverted CI, against scipy's permutation test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from phantom_assets.audit import sign_flip_test
from phantom_assets.audit.sign_flip import EXACT_MAX_N


def _scipy_one_sided_p(diff: np.ndarray) -> float:
    result = stats.permutation_test(
        (diff,), np.mean, permutation_type="samples", alternative="greater", n_resamples=np.inf
    )
    return float(result.pvalue)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("n", [3, 8, 12])
def test_sign_flip_p_value_equals_scipys_exact_permutation_test(seed, n):
    diff = np.random.default_rng(seed).normal(0.4, 1.0, n)
    assert sign_flip_test(diff).p_value == pytest.approx(_scipy_one_sided_p(diff))


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_ci_excludes_zero_exactly_when_the_one_sided_test_rejects(seed):
    diff = np.random.default_rng(seed).normal(0.6, 1.0, 8)
    result, mirrored = sign_flip_test(diff, confidence=0.95), sign_flip_test(-diff)
    assert (result.ci_low > 0) == (result.p_value <= 0.025)
    assert (mirrored.ci_high < 0) == (result.p_value <= 0.025)  # the upper bound mirrors it


def test_sign_flip_ci_bounds_are_the_shifted_tests_boundary():
    # Testing H0: mean <= delta just below the lower bound rejects; just above it does not.
    diff = np.random.default_rng(7).normal(1.0, 1.0, 8)
    low = sign_flip_test(diff).ci_low
    assert sign_flip_test(diff - (low - 1e-9)).p_value <= 0.025
    assert sign_flip_test(diff - (low + 1e-9)).p_value > 0.025


def test_sign_flip_on_identical_pairs_never_rejects():
    # Regression (v1 hotel): a robust policy identical to its twin gave a CI [-4052, 4228].
    result = sign_flip_test(np.zeros(8))
    assert result.p_value == 1.0
    assert result.ci_low == 0.0 and result.ci_high == 0.0 and result.mean_diff == 0.0


def test_sign_flip_with_too_few_pairs_for_the_level_has_infinite_bounds():
    result = sign_flip_test(np.array([5.0, 6.0, 7.0, 8.0, 9.0]))  # 2^5 = 32 < 2 / 0.05
    assert result.p_value == pytest.approx(1 / 32)
    assert math.isinf(result.ci_low) and math.isinf(result.ci_high)
    assert result.to_dict()["ci_low"] is None


def test_sign_flip_above_the_exact_limit_uses_random_subsets_reproducibly():
    diff = np.random.default_rng(3).normal(0.5, 1.0, EXACT_MAX_N + 14)
    first = sign_flip_test(diff, rng=np.random.default_rng(1), draws=4999)
    again = sign_flip_test(diff, rng=np.random.default_rng(1), draws=4999)
    assert first == again and "random subsets" in first.method
    assert first.p_value == pytest.approx(_scipy_one_sided_p_approx(diff), abs=0.01)
    with pytest.raises(ValueError, match="needs an rng"):
        sign_flip_test(diff)


def _scipy_one_sided_p_approx(diff: np.ndarray) -> float:
    return float(
        stats.permutation_test(
            (diff,),
            np.mean,
            permutation_type="samples",
            alternative="greater",
            n_resamples=20_000,
            rng=np.random.default_rng(0),
        ).pvalue
    )


@pytest.mark.parametrize(
    ("diff", "kwargs", "message"),
    [
        (np.array([]), {}, "non-empty finite 1-D"),
        (np.array([1.0, np.nan]), {}, "non-empty finite 1-D"),
        (np.ones((2, 2)), {}, "non-empty finite 1-D"),
        (np.ones(4), {"confidence": 1.0}, "confidence"),
    ],
)
def test_sign_flip_rejects_bad_input_naming_it(diff, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sign_flip_test(diff, **kwargs)
