"""The separability report's test, kernel-divergence test and AUC interval are calibrated
(docs/statistics.md#separability-test-and-auc-interval), with the production procedures on simulated
experiments.

500 replications per layout (99 permutations or 99 bootstrap draws each): a rejection rate must be
<= 0.05 + 3 binomial SEs (0.079), a coverage >= 0.95 − 3 SEs (0.921). Power is measured on the
simulator's layout with a behavioural gap (200 replications).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from phantom_assets.calibration import CalibrationResult, binomial_se
from phantom_assets.calibration.separability import (
    CI_LAYOUTS,
    LAYOUTS,
    LEVEL,
    N_PERMUTATIONS,
    NULL_LAYOUTS,
    class_chains,
    experiment_hashes,
    power_studies,
    simulate,
    studies,
)
from phantom_assets.fingerprint import experiment_permutation_test

N_REPS = 500
TESTS = ("separability_p", "kernel_divergence_p")


@pytest.fixture(scope="module")
def results() -> dict[tuple[str, str], CalibrationResult]:
    return {(r.procedure, r.layout): r for r in studies(N_REPS, np.random.default_rng(2026))}


@pytest.mark.parametrize("layout", NULL_LAYOUTS)
@pytest.mark.parametrize("procedure", TESTS)
def test_separability_tests_hold_their_level_under_every_null_layout(results, procedure, layout):
    result = results[(procedure, layout)]
    assert result.n_reps == N_REPS and result.level == LEVEL
    assert result.rejection_rate <= LEVEL + 3 * binomial_se(LEVEL, N_REPS), result
    assert result.holds


@pytest.mark.parametrize("layout", CI_LAYOUTS)
def test_auc_interval_covers_the_expected_reported_auc(results, layout):
    result = results[("auc_ci", layout)]
    assert result.coverage >= 0.95 - 3 * binomial_se(0.95, N_REPS), result
    assert result.holds


def test_separability_tests_have_power_in_the_simulators_layout():
    # Humans 1-2 sessions per experiment, agents 4-7 (the layout where permuting whole
    # experiments of the full data was near-powerless): a level-holding test that never
    # rejects would pass every check above.
    power = {r.procedure: r.power for r in power_studies(200, np.random.default_rng(9))}
    assert power["separability_p"] > 0.8, power
    assert power["kernel_divergence_p"] > 0.8, power


def test_permuting_sessions_instead_of_experiments_would_over_reject_under_a_subject_effect():
    """Why the test sample: sessions of one subject are alike, so treating each session as its
    own experiment makes the kernel divergence 'significant' with no class difference."""
    layout = LAYOUTS["subject_effect"]
    rng = np.random.default_rng(5)
    hashes = experiment_hashes(layout.n_human + layout.n_agent)
    chains = class_chains(layout, rng)
    n_reps, rejected = 100, 0
    for _ in range(n_reps):  # loop over Monte Carlo replications
        data = simulate(layout, chains, rng, hashes)
        per_session = dataclasses.replace(
            data,
            experiment=np.arange(data.n_sessions),
            experiment_hash=np.arange(data.n_sessions, dtype=np.uint64) << np.uint64(32),
        )
        test = experiment_permutation_test(
            per_session, kappa=0.5, n_permutations=N_PERMUTATIONS, rng=rng
        )
        rejected += test.divergence_p <= LEVEL
    assert rejected / n_reps > LEVEL + 3 * binomial_se(LEVEL, n_reps)
