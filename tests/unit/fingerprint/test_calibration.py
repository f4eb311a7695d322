"""Out-of-fold logistic calibration of the gap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize
from scipy.special import expit

from phantom_assets.fingerprint import calibrate_out_of_fold, fit_logistic_1d


def test_fit_logistic_1d_matches_a_scipy_maximum_likelihood_fit() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, 400)
    y = (rng.random(400) < expit(-1.0 + 0.7 * x)).astype(float)

    def nll(beta: np.ndarray) -> float:
        eta = beta[0] + beta[1] * x
        return float(np.sum(np.logaddexp(0, eta) - y * eta))

    ref = optimize.minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    a, b = fit_logistic_1d(x, y, ridge=1e-10)
    assert a == pytest.approx(ref[0], abs=1e-4) and b == pytest.approx(ref[1], abs=1e-4)


def test_fit_logistic_1d_stays_finite_on_perfectly_separated_data() -> None:
    a, b = fit_logistic_1d(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0.0, 0.0, 1.0, 1.0]))
    assert np.isfinite([a, b]).all() and b > 0


def test_calibrate_out_of_fold_ignores_the_labels_of_the_scored_fold() -> None:
    rng = np.random.default_rng(1)
    n = 300
    fold = rng.integers(0, 3, n)
    is_agent = rng.random(n) < 0.4
    gap = rng.normal(np.where(is_agent, 1.0, -1.0), 1.0)
    labeled = np.ones(n, dtype=bool)
    base = calibrate_out_of_fold(gap, is_agent, fold, labeled, 3)
    flipped = is_agent.copy()
    flipped[fold == 0] = ~flipped[fold == 0]  # corrupt fold 0's labels only
    again = calibrate_out_of_fold(gap, flipped, fold, labeled, 3)
    np.testing.assert_array_equal(base[fold == 0], again[fold == 0])
    assert not np.allclose(base[fold == 1], again[fold == 1])


def test_calibrate_out_of_fold_fits_unlabeled_sessions_on_all_labeled_ones() -> None:
    rng = np.random.default_rng(2)
    gap = rng.normal(0, 1, 100)
    is_agent = gap + rng.normal(0, 0.5, 100) > 0
    labeled = np.arange(100) < 80
    fold = np.where(labeled, np.arange(100) % 4, -1)
    out = calibrate_out_of_fold(gap, is_agent, fold, labeled, 4)
    coef = fit_logistic_1d(gap[labeled], is_agent[labeled].astype(float))
    np.testing.assert_allclose(out[~labeled], expit(coef[0] + coef[1] * gap[~labeled]), atol=1e-12)


def test_score_calibration_logistic_needs_both_classes_and_temperature_does_not() -> None:
    from phantom_assets.fingerprint.calibration import ScoreCalibration, fit_score_calibration

    gap, only_humans = np.linspace(-2, 2, 20), np.zeros(20, dtype=bool)
    temperature = fit_score_calibration(gap, only_humans, ~only_humans, "temperature", 2.0)
    assert temperature.coef is None
    np.testing.assert_allclose(temperature.apply(gap), expit(gap / 2.0))
    with pytest.raises(ValueError, match="'logistic' needs fitted coefficients"):
        fit_score_calibration(gap, only_humans, ~only_humans, "logistic", 2.0)
    with pytest.raises(ValueError, match="calibration must be one of"):
        ScoreCalibration(method="platt", temperature=1.0)
