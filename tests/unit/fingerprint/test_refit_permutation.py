"""Refit permutation test: reproduces the pipeline's AUC and is calibrated under the null."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.fingerprint import (
    auc,
    fit_class_kernels,
    mann_whitney,
    random_chain,
    refit_permutation_pvalue,
    score_sessions,
    synthetic_sessions,
)


def _pipeline_auc(sessions: pl.DataFrame) -> float:
    human = fit_class_kernels(sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(sessions, "agent", kappa=0.5, k=5)
    scores = score_sessions(sessions, human, agent, 1.0)
    gap, is_agent = scores["gap"].to_numpy(), (scores["actor"] == "agent").to_numpy()
    return auc(gap[~is_agent], gap[is_agent])


@pytest.mark.parametrize("seed", range(3))
def test_refit_permutation_reproduces_the_pipeline_auc_for_any_labelling(
    separable_sessions: pl.DataFrame, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    relabeled = separable_sessions.with_columns(
        pl.Series("actor", rng.permutation(separable_sessions["actor"].to_numpy()), dtype=pl.String)
    )
    observed, _ = refit_permutation_pvalue(relabeled, k=5, kappa=0.5, n_permutations=1, rng=rng)
    assert observed == pytest.approx(_pipeline_auc(relabeled), abs=1e-12)


def test_refit_permutation_is_calibrated_where_fixed_gap_tests_are_not() -> None:
    """Why it exists: out-of-fold gaps are dependent, so Mann–Whitney over-rejects."""
    refit, fixed = [], []
    for seed in range(60):  # loop over simulated null datasets
        rng = np.random.default_rng(1000 + seed)
        chain = random_chain(rng, end_prob=0.1)
        sessions = synthetic_sessions(chain, chain, 150, 150, rng, max_events=60)
        human = fit_class_kernels(sessions, "human", k=5)
        agent = fit_class_kernels(sessions, "agent", k=5)
        scores = score_sessions(sessions, human, agent, 1.0)
        gap, is_agent = scores["gap"].to_numpy(), (scores["actor"] == "agent").to_numpy()
        fixed.append(mann_whitney(gap[~is_agent], gap[is_agent]).p_value)
        refit.append(
            refit_permutation_pvalue(sessions, k=5, kappa=0.5, n_permutations=200, rng=rng)[1]
        )
    refit_rate = np.mean(np.array(refit) < 0.1)
    fixed_rate = np.mean(np.array(fixed) < 0.1)
    assert refit_rate <= 0.2  # nominal 0.1; binomial(60, 0.1) exceeds 12 with prob < 0.5%
    assert fixed_rate > refit_rate


def test_refit_permutation_rejects_kappa_zero_and_a_missing_class(
    separable_sessions: pl.DataFrame,
) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="kappa > 0"):
        refit_permutation_pvalue(separable_sessions, k=5, kappa=0.0, n_permutations=10, rng=rng)
    humans = separable_sessions.filter(pl.col("actor") == "human")
    with pytest.raises(ValueError, match="both classes"):
        refit_permutation_pvalue(humans, k=5, kappa=0.5, n_permutations=10, rng=rng)
