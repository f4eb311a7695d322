"""Mann–Whitney U, AUC and ROC against scipy/numpy oracles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from phantom_assets.fingerprint import auc, mann_whitney, roc_curve


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


def test_roc_curve_area_equals_the_auc_with_ties() -> None:
    rng = np.random.default_rng(8)
    h, a = rng.integers(0, 8, 40).astype(float), rng.integers(2, 10, 30).astype(float)
    fpr, tpr = roc_curve(h, a)
    assert fpr[0] == tpr[0] == 0.0 and fpr[-1] == tpr[-1] == 1.0
    assert np.trapezoid(tpr, fpr) == pytest.approx(auc(h, a), abs=1e-12)
