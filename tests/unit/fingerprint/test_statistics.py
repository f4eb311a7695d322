"""Mann–Whitney U, AUC, bootstrap and permutation statistics against scipy/numpy oracles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from phantom_assets.fingerprint import (
    auc,
    bootstrap_auc,
    mann_whitney,
    permutation_auc_pvalue,
    roc_curve,
    weighted_auc,
)


def _pairwise_auc(h: np.ndarray, a: np.ndarray) -> float:
    diff = a[:, None] - h[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", [False, True])
def test_mann_whitney_agrees_with_scipy_on_random_samples(seed: int, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    n_h, n_a = rng.integers(10, 60, size=2)
    h = rng.integers(0, 6, n_h).astype(float) if ties else rng.normal(0, 1, n_h)
    a = rng.integers(1, 7, n_a).astype(float) if ties else rng.normal(0.3, 1, n_a)
    ours = mann_whitney(h, a)
    ref = stats.mannwhitneyu(a, h, alternative="two-sided", method="asymptotic")
    assert ours.method == "asymptotic"
    assert ours.u_statistic == pytest.approx(ref.statistic, abs=1e-9)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-300)
    assert ours.auc == pytest.approx(_pairwise_auc(h, a), abs=1e-12)


@pytest.mark.parametrize(("n_h", "n_a"), [(5, 7), (8, 8), (3, 20)])
def test_mann_whitney_uses_the_exact_distribution_for_small_untied_samples(
    n_h: int, n_a: int
) -> None:
    rng = np.random.default_rng(n_h * 100 + n_a)
    h, a = rng.normal(0, 1, n_h), rng.normal(1, 1, n_a)
    ours = mann_whitney(h, a)
    ref = stats.mannwhitneyu(a, h, alternative="two-sided", method="exact")
    assert ours.method == "exact"
    assert ours.u_statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_mann_whitney_falls_back_to_asymptotic_when_small_samples_tie() -> None:
    ours = mann_whitney(np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 4.0, 5.0]))
    ref = stats.mannwhitneyu([2.0, 4.0, 5.0], [1.0, 2.0, 2.0, 3.0], method="asymptotic")
    assert ours.method == "asymptotic" and ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_mann_whitney_rejects_an_empty_class_and_nan() -> None:
    with pytest.raises(ValueError, match="n_agent=0"):
        mann_whitney(np.ones(3), np.array([]))
    with pytest.raises(ValueError, match="NaN"):
        mann_whitney(np.array([1.0, np.nan]), np.ones(3))


@pytest.mark.parametrize("seed", range(3))
def test_weighted_auc_equals_the_rank_auc_of_repeated_samples(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h, a = rng.integers(0, 5, 12).astype(float), rng.integers(0, 5, 9).astype(float)
    w_h, w_a = rng.integers(0, 4, (6, 12)), rng.integers(0, 4, (6, 9))
    w_h[:, 0] += 1
    w_a[:, 0] += 1  # every row keeps at least one session per class
    got = weighted_auc(h, a, w_h, w_a)
    expected = [auc(np.repeat(h, w_h[b]), np.repeat(a, w_a[b])) for b in range(6)]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_bootstrap_auc_is_reproducible_and_centred_on_the_auc() -> None:
    rng = np.random.default_rng(0)
    h, a = rng.normal(0, 1, 80), rng.normal(0.8, 1, 50)
    draws = bootstrap_auc(h, a, 2000, np.random.default_rng(1))
    again = bootstrap_auc(h, a, 2000, np.random.default_rng(1))
    np.testing.assert_array_equal(draws, again)
    assert abs(draws.mean() - auc(h, a)) < 0.01
    # Known large-sample standard error of the AUC (Hanley & McNeil) as a loose oracle.
    q = auc(h, a)
    q1, q2 = q / (2 - q), 2 * q * q / (1 + q)
    se = np.sqrt((q * (1 - q) + (50 - 1) * (q1 - q * q) + (80 - 1) * (q2 - q * q)) / (80 * 50))
    assert draws.std() == pytest.approx(se, rel=0.25)


def test_permutation_pvalue_approximates_the_exact_mann_whitney_pvalue() -> None:
    rng = np.random.default_rng(4)
    h, a = rng.normal(0, 1, 10), rng.normal(0.9, 1, 10)
    exact = stats.mannwhitneyu(a, h, method="exact").pvalue
    perm = permutation_auc_pvalue(h, a, 20_000, np.random.default_rng(9))
    assert perm == pytest.approx(exact, abs=0.01)


def test_permutation_pvalue_is_minimal_for_perfect_separation() -> None:
    p = permutation_auc_pvalue(
        np.arange(30.0), np.arange(30.0) + 100, 500, np.random.default_rng(0)
    )
    assert p == 1 / 501


def test_roc_curve_area_equals_the_auc_with_ties() -> None:
    rng = np.random.default_rng(8)
    h, a = rng.integers(0, 8, 40).astype(float), rng.integers(2, 10, 30).astype(float)
    fpr, tpr = roc_curve(h, a)
    assert fpr[0] == tpr[0] == 0.0 and fpr[-1] == tpr[-1] == 1.0
    assert np.trapezoid(tpr, fpr) == pytest.approx(auc(h, a), abs=1e-12)
