"""Refit experiment-cluster bootstrap of the reported AUC and its centred interval."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.fingerprint import (
    auc_interval,
    cluster_bootstrap_aucs,
    observed_auc,
    session_counts,
)
from phantom_assets.fingerprint.refit_bootstrap import _multiplicities


def test_bootstrap_resamples_whole_experiments_within_each_class(
    separable_sessions: pl.DataFrame,
) -> None:
    data = session_counts(separable_sessions, 5)
    weights = _multiplicities(data, 50, np.random.default_rng(0))
    first = np.unique(data.experiment, return_index=True)[1]
    per_xp = weights[:, first]
    np.testing.assert_array_equal(weights, per_xp[:, data.experiment])  # sessions move together
    xp_agent = data.is_agent[first]
    assert (per_xp[:, xp_agent].sum(axis=1) == xp_agent.sum()).all()
    assert (per_xp[:, ~xp_agent].sum(axis=1) == (~xp_agent).sum()).all()
    assert (per_xp == 0).any()  # resampling with replacement drops some experiments


def test_bootstrap_is_reproducible_and_spreads_around_the_observed_auc(
    separable_sessions: pl.DataFrame,
) -> None:
    data = session_counts(separable_sessions, 5)
    draws = cluster_bootstrap_aucs(data, kappa=0.5, n_draws=100, rng=np.random.default_rng(1))
    again = cluster_bootstrap_aucs(data, kappa=0.5, n_draws=100, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(draws, again)
    assert 0.0 < draws.std() < 0.1
    assert abs(draws.mean() - observed_auc(data, 0.5)) < 0.1


def test_auc_interval_is_the_observed_auc_plus_the_centred_bootstrap_quantiles() -> None:
    """The bootstrap is shifted from the observed AUC (refitted kernels see fewer distinct
    experiments); only its spread may move the interval, never its offset."""
    boot = np.random.default_rng(0).normal(0.62, 0.02, 4000)  # 0.08 below the observed 0.70
    low, high = auc_interval(0.70, boot, 0.95)
    assert low == pytest.approx(0.70 - 1.96 * 0.02, abs=0.004)
    assert high == pytest.approx(0.70 + 1.96 * 0.02, abs=0.004)


def test_auc_interval_follows_a_skewed_bootstrap_on_the_same_side() -> None:
    boot = 0.5 + np.random.default_rng(1).exponential(0.02, 4000)  # long right tail
    low, high = auc_interval(0.6, boot, 0.9)
    assert high - 0.6 > 2 * (0.6 - low)


def test_auc_interval_is_clipped_to_the_unit_interval() -> None:
    boot = np.random.default_rng(2).normal(0.5, 0.2, 1000)
    low, high = auc_interval(0.98, boot, 0.95)
    assert high == 1.0 and 0.0 <= low < 0.98


@pytest.mark.parametrize(("confidence", "boot"), [(1.0, np.ones(3)), (0.9, np.array([]))])
def test_auc_interval_rejects_a_bad_level_or_an_empty_bootstrap(
    confidence: float, boot: np.ndarray
) -> None:
    with pytest.raises(ValueError, match=r"confidence|boot"):
        auc_interval(0.5, boot, confidence)


def test_bootstrap_rejects_kappa_zero_and_zero_draws(separable_sessions: pl.DataFrame) -> None:
    data = session_counts(separable_sessions, 5)
    with pytest.raises(ValueError, match="kappa"):
        cluster_bootstrap_aucs(data, kappa=0.0, n_draws=5, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_draws"):
        cluster_bootstrap_aucs(data, kappa=0.5, n_draws=0, rng=np.random.default_rng(0))
