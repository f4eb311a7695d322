"""Separability report: honesty under the null, power when the chains differ."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy.stats import entropy

from phantom_assets.fingerprint import (
    KernelSet,
    SeparabilityParams,
    encode_trajectories,
    fit_class_kernels,
    fit_kernel,
    kernel_divergence,
    prefix_scores,
    score_sessions,
    separability_report,
)

PARAMS = SeparabilityParams(n_bootstrap=500, n_permutations=500, n_split_half=100)


def _report(sessions: pl.DataFrame, seed: int = 0):
    human = fit_class_kernels(sessions, "human", k=5)
    agent = fit_class_kernels(sessions, "agent", k=5)
    scores = score_sessions(sessions, human, agent, 1.0)
    prefix = prefix_scores(sessions, human, agent, 1.0, max_prefix=5)
    rng = np.random.default_rng(seed)
    return separability_report(scores, rng=rng, params=PARAMS, sessions=sessions, prefix=prefix)


def test_separability_report_is_honest_when_both_classes_share_one_chain(
    same_chain_sessions: pl.DataFrame,
) -> None:
    report = _report(same_chain_sessions)
    assert report.auc_ci_low <= 0.5 <= report.auc_ci_high
    assert report.p_value >= 0.01 and report.permutation_p >= 0.01
    assert report.kernel_divergence_p >= 0.01


def test_in_sample_scoring_would_fail_the_honesty_check(same_chain_sessions: pl.DataFrame) -> None:
    """Why out-of-fold scoring exists: kernels that saw the sessions fake a signal (§10.3)."""
    human = fit_class_kernels(same_chain_sessions, "human", k=5)
    agent = fit_class_kernels(same_chain_sessions, "agent", k=5)
    leaky = KernelSet(human.full, (human.full,) * 5), KernelSet(agent.full, (agent.full,) * 5)
    scores = score_sessions(same_chain_sessions, *leaky, 1.0)
    report = separability_report(scores, rng=np.random.default_rng(0), params=PARAMS)
    assert report.auc_ci_low > 0.5


def test_separability_report_detects_different_chains(separable_sessions: pl.DataFrame) -> None:
    report = _report(separable_sessions)
    assert (
        report.auc > 0.95 and report.auc_ci_low > 0.85
    )  # null-width widening (see separability.py)
    assert report.mann_whitney_p < 1e-10 and report.permutation_method == "refit"
    assert report.p_value == report.permutation_p  # the calibrated p is the headline one
    assert report.permutation_p == 1 / (PARAMS.n_permutations + 1)
    assert report.kernel_divergence > report.kernel_divergence_null_q95
    assert report.accuracy > 0.85
    assert [row["prefix_len"] for row in report.prefix_curve] == [2, 3, 4, 5]
    assert report.prefix_curve[-1]["auc"] > 0.8


def test_separability_report_to_dict_is_strict_json_with_the_contract_keys(
    separable_sessions: pl.DataFrame,
) -> None:
    payload = _report(separable_sessions).to_dict()
    for key in (
        "n_human",
        "n_agent",
        "u_statistic",
        "p_value",
        "auc",
        "auc_ci_low",
        "auc_ci_high",
        "permutation_p",
    ):
        assert key in payload
    assert payload["n_human"] == 120 and payload["n_agent"] == 60
    json.dumps(payload, allow_nan=False)


def test_kernel_divergence_matches_a_literal_visit_weighted_kl(
    separable_sessions: pl.DataFrame,
) -> None:
    human = fit_kernel(
        encode_trajectories(separable_sessions.filter(pl.col("actor") == "human")["trajectory"]),
        0.5,
    )
    agent = fit_kernel(
        encode_trajectories(separable_sessions.filter(pl.col("actor") == "agent")["trajectory"]),
        0.5,
    )
    visits = human.counts.sum(axis=1)
    expected = sum(
        visits[a] / visits.sum() * entropy(human.probs[a], agent.probs[a])
        for a in np.flatnonzero(visits)
    )
    assert float(kernel_divergence(human.counts, agent.counts, 0.5)) == pytest.approx(
        expected, abs=1e-12
    )


def test_separability_report_rejects_a_missing_class(separable_sessions: pl.DataFrame) -> None:
    human = fit_class_kernels(separable_sessions, "human", k=5)
    agent = fit_class_kernels(separable_sessions, "agent", k=5)
    scores = score_sessions(separable_sessions, human, agent, 1.0).filter(
        pl.col("actor") == "human"
    )
    with pytest.raises(ValueError, match="n_agent=0"):
        separability_report(scores, rng=np.random.default_rng(0), params=PARAMS)


@pytest.mark.parametrize("field", ["n_bootstrap", "n_permutations", "n_split_half"])
def test_separability_params_reject_zero_draws(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SeparabilityParams(**{field: 0})
