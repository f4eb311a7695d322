"""Promotion gate: paired bootstrap CI of candidate − baseline plus the blocking checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from phantom_assets.audit import paired_bootstrap_ci, promotion_gate


def _episodes(seed: int, n: int, lift: float, noise: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Baseline revenue per episode and a candidate sharing its episode noise, shifted by lift."""
    rng = np.random.default_rng(seed)
    baseline = rng.normal(100.0, 10.0, n)
    candidate = baseline + lift + rng.normal(0.0, noise, n)
    return candidate, baseline


def test_promotion_gate_certifies_a_clear_paired_win():
    candidate, baseline = _episodes(seed=1, n=64, lift=2.0)
    decision = promotion_gate(candidate, baseline, checks_passed=True, rng=np.random.default_rng(0))
    assert decision.certified
    assert decision.ci_low > 0 and decision.ci_low < decision.mean_diff < decision.ci_high
    assert decision.mean_diff == pytest.approx(float(np.mean(candidate - baseline)))
    assert decision.reasons[0].startswith("certified: all blocking checks passed")


def test_promotion_gate_pairs_episodes_so_shared_noise_cancels():
    # Unpaired, a lift of 2 is invisible under noise sd 10; paired by episode it is clear.
    candidate, baseline = _episodes(seed=2, n=64, lift=2.0, noise=1.0)
    assert stats.ttest_ind(candidate, baseline).pvalue > 0.05
    assert promotion_gate(
        candidate, baseline, checks_passed=True, rng=np.random.default_rng(0)
    ).certified


def test_promotion_gate_refuses_when_the_ci_includes_zero():
    candidate, baseline = _episodes(seed=3, n=40, lift=0.0, noise=5.0)
    decision = promotion_gate(candidate, baseline, checks_passed=True, rng=np.random.default_rng(0))
    assert not decision.certified
    assert decision.ci_low < 0 < decision.ci_high
    assert decision.reasons == (
        f"not certified: 95% CI of the paired difference "
        f"[{decision.ci_low:.4g}, {decision.ci_high:.4g}] includes zero",
    )


def test_promotion_gate_refuses_a_candidate_worse_than_the_baseline():
    candidate, baseline = _episodes(seed=4, n=64, lift=-3.0)
    decision = promotion_gate(candidate, baseline, checks_passed=True, rng=np.random.default_rng(0))
    assert not decision.certified and decision.ci_high < 0
    assert "lies below zero" in decision.reasons[0]


def test_promotion_gate_refuses_failed_checks_even_with_a_clear_win():
    candidate, baseline = _episodes(seed=1, n=64, lift=5.0)
    decision = promotion_gate(
        candidate,
        baseline,
        checks_passed=False,
        rng=np.random.default_rng(0),
        failed_checks=["transition_kernels [agent|hotel]: rows_sum_to_one"],
    )
    assert not decision.certified and decision.ci_low > 0
    assert decision.reasons == (
        "not certified: blocking checks failed: transition_kernels [agent|hotel]: rows_sum_to_one",
    )


def test_promotion_gate_lists_every_reason_when_both_conditions_fail():
    candidate, baseline = _episodes(seed=3, n=40, lift=0.0, noise=5.0)
    decision = promotion_gate(
        candidate, baseline, checks_passed=False, rng=np.random.default_rng(0)
    )
    assert len(decision.reasons) == 2
    assert decision.reasons[0] == "not certified: blocking checks failed"
    assert "includes zero" in decision.reasons[1]


def test_paired_bootstrap_ci_matches_scipy_percentile_bootstrap():
    rng = np.random.default_rng(11)
    diff = rng.normal(1.0, 2.0, 200)
    low, high = paired_bootstrap_ci(
        diff, rng=np.random.default_rng(5), draws=20_000, confidence=0.9
    )
    oracle = stats.bootstrap(
        (diff,),
        np.mean,
        n_resamples=20_000,
        confidence_level=0.9,
        method="percentile",
        rng=np.random.default_rng(6),
    ).confidence_interval
    # Monte Carlo error of a 5% quantile of 20k bootstrap means (se of the mean ~0.14) is ~0.003.
    assert low == pytest.approx(oracle.low, abs=0.02)
    assert high == pytest.approx(oracle.high, abs=0.02)
    # ... and both agree with the normal approximation mean ± z·sd/sqrt(n).
    half = stats.norm.ppf(0.95) * diff.std(ddof=1) / np.sqrt(diff.size)
    assert (low, high) == pytest.approx((diff.mean() - half, diff.mean() + half), abs=0.03)


def test_promotion_gate_is_reproducible_for_a_seed():
    candidate, baseline = _episodes(seed=5, n=30, lift=0.5, noise=2.0)
    first, second = (
        promotion_gate(candidate, baseline, checks_passed=True, rng=np.random.default_rng(9))
        for _ in range(2)
    )
    assert first == second


@pytest.mark.parametrize(
    ("candidate", "baseline", "kwargs", "message"),
    [
        (np.ones(5), np.ones(4), {}, "same length"),
        (np.ones((2, 3)), np.ones((2, 3)), {}, "1-D"),
        (np.ones(1), np.ones(1), {}, "at least 2"),
        (np.array([1.0, np.nan]), np.ones(2), {}, "finite"),
        (np.ones(5), np.ones(5), {"draws": 0}, "draws"),
        (np.ones(5), np.ones(5), {"confidence": 1.0}, "confidence"),
    ],
)
def test_promotion_gate_rejects_bad_inputs_naming_them(candidate, baseline, kwargs, message):
    with pytest.raises(ValueError, match=message):
        promotion_gate(
            candidate, baseline, checks_passed=True, rng=np.random.default_rng(0), **kwargs
        )
