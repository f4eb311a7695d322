"""Debiased contamination estimate α̂ and its bootstrap CI."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.contamination import AlphaHatParams, ClusterStats, alpha_hat

PARAMS = AlphaHatParams(level=0.95, n_boot=200)


def _calibration(f_human: float, f_agent: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Noiseless calibration sample: 6 human experiments x 3 sessions, 4 agent experiments x 5."""
    f = np.r_[np.full(18, f_human), np.full(20, f_agent)]
    is_agent = np.r_[np.zeros(18, bool), np.ones(20, bool)]
    experiment = np.r_[np.repeat(np.arange(6), 3), 100 + np.repeat(np.arange(4), 5)]
    return f, is_agent, experiment


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.5, 1.0])
def test_alpha_hat_recovers_the_agent_share_exactly_on_noiseless_input(alpha: float) -> None:
    n_agent = round(alpha * 40)
    f = np.r_[np.full(40 - n_agent, 0.1), np.full(n_agent, 0.8)]
    est = alpha_hat(f, *_calibration(0.1, 0.8), np.random.default_rng(0), PARAMS)
    assert est.alpha_hat == pytest.approx(alpha, abs=1e-12)
    assert est.alpha_hat_unclipped == pytest.approx(alpha, abs=1e-12)
    assert est.mean_f_human == pytest.approx(0.1) and est.mean_f_agent == pytest.approx(0.8)
    assert est.n_human_experiments == 6 and est.n_agent_experiments == 4


def test_alpha_hat_matches_the_formula_on_noisy_input() -> None:
    rng = np.random.default_rng(1)
    f_cal, is_agent, experiment = _calibration(0.2, 0.7)
    f_cal = np.clip(f_cal + rng.normal(0, 0.05, f_cal.size), 0, 1)
    f = rng.uniform(0.3, 0.6, 50)
    est = alpha_hat(f, f_cal, is_agent, experiment, rng, PARAMS)
    h, a = f_cal[~is_agent].mean(), f_cal[is_agent].mean()
    assert est.alpha_hat_unclipped == pytest.approx((f.mean() - h) / (a - h), rel=1e-12)
    assert est.ci_low_unclipped < est.alpha_hat_unclipped < est.ci_high_unclipped


def test_alpha_hat_clips_to_the_unit_interval_and_keeps_the_unclipped_value() -> None:
    rng = np.random.default_rng(2)
    f_cal, is_agent, experiment = _calibration(0.2, 0.6)
    f_cal = np.clip(f_cal + rng.normal(0, 0.05, f_cal.size), 0, 1)
    above = alpha_hat(np.full(30, 0.9), f_cal, is_agent, experiment, rng, PARAMS)
    below = alpha_hat(np.full(30, 0.05), f_cal, is_agent, experiment, rng, PARAMS)
    assert above.alpha_hat_unclipped > 1.0 and above.alpha_hat == 1.0 and above.ci_high == 1.0
    assert below.alpha_hat_unclipped < 0.0 and below.alpha_hat == 0.0 and below.ci_low == 0.0
    assert above.ci_high_unclipped > 1.0 and below.ci_low_unclipped < 0.0
    assert 0.0 <= below.ci_high <= 1.0 and 0.0 <= above.ci_low <= 1.0


def test_alpha_hat_ci_widens_when_experiments_are_few() -> None:
    rng = np.random.default_rng(3)
    xp_effect = rng.normal(0, 0.1, 40)
    f_cal = np.clip(np.r_[0.2 + xp_effect[:20], 0.7 + xp_effect[20:]].repeat(5), 0, 1)
    is_agent = np.r_[np.zeros(100, bool), np.ones(100, bool)]
    f = np.r_[rng.uniform(0.15, 0.25, 3000), rng.uniform(0.65, 0.75, 3000)]  # precise f̄
    as_sessions = alpha_hat(f, f_cal, is_agent, np.arange(200), rng, PARAMS)
    as_experiments = alpha_hat(f, f_cal, is_agent, np.arange(200) // 5, rng, PARAMS)
    assert as_experiments.alpha_hat == pytest.approx(as_sessions.alpha_hat)
    widths = [e.ci_high_unclipped - e.ci_low_unclipped for e in (as_sessions, as_experiments)]
    assert widths[1] > 1.5 * widths[0]  # 5 identical sessions per experiment: ~sqrt(5) wider


def test_alpha_hat_is_reproducible_for_a_seed() -> None:
    args = (np.linspace(0.2, 0.6, 30), *_calibration(0.1, 0.8))
    noisy = (args[0], args[1] + np.linspace(0, 0.05, 38), args[2], args[3])
    first = alpha_hat(*noisy, np.random.default_rng(4), PARAMS)
    assert first == alpha_hat(*noisy, np.random.default_rng(4), PARAMS)


@pytest.mark.parametrize(
    ("f", "is_agent", "match"),
    [
        (np.array([]), np.r_[False, True], "f is empty"),
        (np.array([0.5]), np.r_[True, True], "human calibration sample is empty"),
        (np.array([0.5]), np.r_[False, False], "agent calibration sample is empty"),
        (np.array([1.5]), np.r_[False, True], r"f must be finite agent probabilities"),
        (np.array([np.nan]), np.r_[False, True], r"f must be finite agent probabilities"),
    ],
)
def test_alpha_hat_rejects_empty_or_invalid_samples(
    f: np.ndarray, is_agent: np.ndarray, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        alpha_hat(f, np.r_[0.2, 0.8], is_agent, np.r_[0, 1], np.random.default_rng(0), PARAMS)


def test_alpha_hat_rejects_classes_with_equal_mean_f() -> None:
    with pytest.raises(ValueError, match=r"E\[f\|A\] = E\[f\|H\]"):
        alpha_hat(
            np.r_[0.4, 0.5],
            np.r_[0.3, 0.5, 0.4, 0.4],
            np.r_[False, False, True, True],
            np.r_[0, 1, 2, 3],
            np.random.default_rng(0),
            PARAMS,
        )


def test_alpha_hat_rejects_mismatched_calibration_arrays() -> None:
    with pytest.raises(ValueError, match="equal-length"):
        alpha_hat(np.r_[0.5], np.r_[0.2, 0.8], np.r_[False], np.r_[0, 1], np.random.default_rng(0))


@pytest.mark.parametrize(("level", "n_boot"), [(0.0, 200), (1.0, 200), (0.95, 10)])
def test_alpha_hat_params_reject_bad_level_or_draws(level: float, n_boot: int) -> None:
    with pytest.raises(ValueError, match=r"level|n_boot"):
        AlphaHatParams(level=level, n_boot=n_boot)


def test_cluster_stats_variance_matches_the_cluster_robust_formula() -> None:
    rng = np.random.default_rng(5)
    f, cluster = rng.uniform(0, 1, 23), rng.integers(0, 7, 23)
    mean, var = ClusterStats.of(f, cluster).moments()
    sums = np.bincount(cluster, weights=f, minlength=7)
    sizes = np.bincount(cluster, minlength=7)
    g = 7
    oracle = g / (g - 1) * np.sum((sums - f.mean() * sizes) ** 2) / f.size**2
    assert mean[0] == pytest.approx(f.mean()) and var[0] == pytest.approx(oracle)
