"""Separability report: honesty under the null, power when the chains differ, report.json."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy.stats import entropy

from phantom_assets.fingerprint import (
    AUC_CI_METHOD,
    KERNEL_DIVERGENCE_P_METHOD,
    P_METHOD,
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

PARAMS = SeparabilityParams(n_bootstrap=200, n_permutations=200)
CONTRACT_KEYS = (  # docs/architecture.md#column-contracts report.json
    "n_human",
    "n_agent",
    "u_statistic",
    "mann_whitney_p",
    "p_value",
    "p_method",
    "p_floor",
    "auc",
    "auc_ci_low",
    "auc_ci_high",
    "auc_ci_method",
)


def _report(sessions: pl.DataFrame, seed: int = 0, params: SeparabilityParams = PARAMS):
    human = fit_class_kernels(sessions, "human", kappa=params.kappa, k=5)
    agent = fit_class_kernels(sessions, "agent", kappa=params.kappa, k=5)
    scores = score_sessions(sessions, human, agent, 1.0)
    prefix = prefix_scores(sessions, human, agent, 1.0, max_prefix=5)
    rng = np.random.default_rng(seed)
    return separability_report(scores, rng=rng, params=params, sessions=sessions, prefix=prefix)


def test_separability_report_is_honest_when_both_classes_share_one_chain(
    same_chain_sessions: pl.DataFrame,
) -> None:
    report = _report(same_chain_sessions)
    assert report.p_value >= 0.05 and report.kernel_divergence_p >= 0.05
    assert report.auc_ci_low <= 0.5  # no claim that agents look more agent-like than chance
    assert report.n_test_experiments == {"human": 60, "agent": 30}


def test_in_sample_scoring_fools_mann_whitney_but_not_the_refit_test(
    same_chain_sessions: pl.DataFrame,
) -> None:
    """Why the headline p refits kernels: kernels that saw the sessions fake a signal (§10.3)."""
    human = fit_class_kernels(same_chain_sessions, "human", k=5)
    agent = fit_class_kernels(same_chain_sessions, "agent", k=5)
    leaky = KernelSet(human.full, (human.full,) * 5), KernelSet(agent.full, (agent.full,) * 5)
    scores = score_sessions(same_chain_sessions, *leaky, 1.0)
    report = separability_report(
        scores, sessions=same_chain_sessions, rng=np.random.default_rng(0), params=PARAMS
    )
    assert report.auc > 0.7 and report.mann_whitney_p < 1e-6
    assert report.p_value >= 0.05


def test_separability_report_detects_different_chains(separable_sessions: pl.DataFrame) -> None:
    report = _report(separable_sessions)
    assert report.auc > 0.95 and report.auc_ci_low > 0.85
    assert report.mann_whitney_p < 1e-10
    assert report.p_method == P_METHOD and report.auc_ci_method == AUC_CI_METHOD
    assert report.p_value == report.p_floor == 1 / (PARAMS.n_permutations + 1)
    assert report.test_auc > 0.9 and report.n_test_experiments == {"human": 40, "agent": 20}
    assert report.kernel_divergence_test > report.kernel_divergence_null_q95
    assert report.kernel_divergence_p == report.p_floor
    assert report.kernel_divergence_p_method == KERNEL_DIVERGENCE_P_METHOD
    assert report.accuracy > 0.85
    assert [row["prefix_len"] for row in report.prefix_curve] == [2, 3, 4, 5]
    assert report.prefix_curve[-1]["auc"] > 0.8


def test_separability_report_to_dict_is_strict_json_with_the_contract_keys_only_once(
    separable_sessions: pl.DataFrame,
) -> None:
    payload = _report(separable_sessions).to_dict()
    assert set(CONTRACT_KEYS) <= set(payload)
    removed = {
        "auc_corrected",
        "auc_ci_raw_low",
        "auc_ci_raw_high",
        "auc_null_mean",
        "permutation_p",
        "permutation_method",
        "permutation_p_fixed_gaps",
    }
    assert not removed & set(payload)  # regression: the old union CI and its helpers are gone
    n_labeled = separable_sessions.height
    assert payload["n_human"] + payload["n_agent"] == n_labeled
    json.dumps(payload, allow_nan=False)


def test_separability_report_is_reproducible_for_a_seed(separable_sessions: pl.DataFrame) -> None:
    assert _report(separable_sessions, seed=3).to_dict() == _report(separable_sessions, 3).to_dict()


def test_separability_report_with_kappa_zero_marks_the_refit_statistics_unavailable(
    separable_sessions: pl.DataFrame,
) -> None:
    params = SeparabilityParams(n_bootstrap=10, n_permutations=10, kappa=0.0)
    payload = _report(separable_sessions, params=params).to_dict()
    assert payload["p_value"] is None and payload["p_method"].startswith("unavailable")
    assert payload["auc_ci_low"] is None and payload["auc_ci_method"].startswith("unavailable")
    json.dumps(payload, allow_nan=False)


def test_kernel_divergence_matches_a_literal_visit_weighted_kl(
    separable_sessions: pl.DataFrame,
) -> None:
    by_actor = {
        actor: fit_kernel(
            encode_trajectories(separable_sessions.filter(pl.col("actor") == actor)["trajectory"]),
            0.5,
        )
        for actor in ("human", "agent")
    }
    human, agent = by_actor["human"], by_actor["agent"]
    visits = human.counts.sum(axis=1)
    expected = sum(
        visits[a] / visits.sum() * entropy(human.probs[a], agent.probs[a])
        for a in np.flatnonzero(visits)
    )
    assert float(kernel_divergence(human.counts, agent.counts, 0.5)) == pytest.approx(
        expected, abs=1e-12
    )
    report = _report(separable_sessions)
    assert report.kernel_divergence == pytest.approx(expected, abs=1e-12)


def test_separability_report_rejects_a_missing_class(separable_sessions: pl.DataFrame) -> None:
    human = fit_class_kernels(separable_sessions, "human", k=5)
    agent = fit_class_kernels(separable_sessions, "agent", k=5)
    scores = score_sessions(separable_sessions, human, agent, 1.0).filter(
        pl.col("actor") == "human"
    )
    with pytest.raises(ValueError, match="n_agent=0"):
        separability_report(
            scores, sessions=separable_sessions, rng=np.random.default_rng(0), params=PARAMS
        )


@pytest.mark.parametrize("field", ["n_bootstrap", "n_permutations"])
def test_separability_params_reject_zero_draws(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SeparabilityParams(**{field: 0})
