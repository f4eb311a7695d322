"""The COI erosion t intervals cover at their nominal rate at n = 8 episode seeds
(docs/statistics.md#coi-erosion-intervals), measured by `phantom_assets.calibration.erosion` with
N_REPS replications of the real `coi_erosion` on the demo market."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.calibration import CalibrationResult, binomial_se
from phantom_assets.calibration.erosion import LAYOUTS, N_SEEDS, studies

N_REPS = 300


@pytest.fixture(scope="module")
def results() -> list[CalibrationResult]:
    return studies(N_REPS, np.random.default_rng(20251201))


def test_every_layout_is_studied_at_the_configured_seed_count(results):
    assert [r.layout for r in results] == [
        f"demo_{metric}_alpha{alpha:g}_k{k}_seeds{N_SEEDS}" for metric, alpha, k in LAYOUTS
    ]
    assert all(r.procedure == "coi_erosion_t_ci" and r.n_reps == N_REPS for r in results)


def test_erosion_intervals_cover_within_three_binomial_se_of_nominal(results):
    for r in results:
        assert r.coverage is not None
        tolerance = 3 * binomial_se(r.level, r.n_reps)
        assert abs(r.coverage - r.level) <= tolerance, r.to_dict()


def test_erosion_study_needs_two_replications():
    with pytest.raises(ValueError, match="n_reps"):
        studies(1, np.random.default_rng(0))
