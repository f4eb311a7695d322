"""The α̂ bootstrap CI covers the true agent share at its nominal rate
(docs/statistics.md#agent-share-interval).

Clustered calibration experiments and datasets at α ∈ {0, 0.25, 0.5, 1}, the demo's small
calibration sample (4 agent experiments) and the pipeline's own shape (shared humans, reference
agents). 500 replications per layout: tolerance 3 binomial SEs of 0.95 (±0.029).
"""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.calibration import binomial_se
from phantom_assets.calibration.alpha_hat import LAYOUTS, PROCEDURE, coverage, studies

N_REPS = 500
LEVEL = 0.95


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_alpha_hat_ci_covers_the_true_share_at_its_level(layout):
    held = coverage(layout, N_REPS, np.random.default_rng(20250))
    assert held >= LEVEL - 3 * binomial_se(LEVEL, N_REPS), f"{layout.name}: {held}"


def test_alpha_hat_ci_is_not_trivially_wide_where_the_dataset_is_one_class():
    # A CI that always spans [0, 1] would cover everything: at α = 0 and 1 it must miss sometimes.
    for layout in (LAYOUTS[0], LAYOUTS[3]):
        assert coverage(layout, 300, np.random.default_rng(3)) < 0.995, layout.name


def test_ignoring_the_experiment_clustering_would_break_the_coverage(monkeypatch):
    # Resampling sessions instead of experiments: the within-experiment correlation is lost.
    from phantom_assets.calibration import alpha_hat as study
    from phantom_assets.contamination.alpha_hat import ClusterStats

    original = ClusterStats.of.__func__
    monkeypatch.setattr(
        ClusterStats, "of", classmethod(lambda cls, f, cluster=None: original(cls, f, None))
    )
    layout = next(lay for lay in LAYOUTS if lay.name == "cal_h40x2_a16x5_alpha1")
    held = study.coverage(layout, N_REPS, np.random.default_rng(20250))
    assert held < LEVEL - 3 * binomial_se(LEVEL, N_REPS), held


def test_studies_report_one_interval_result_per_layout():
    results = studies(50, np.random.default_rng(0))
    assert [r.layout for r in results] == [layout.name for layout in LAYOUTS]
    assert all(r.procedure == PROCEDURE and r.level == LEVEL and r.n_reps == 50 for r in results)
    assert all(r.coverage is not None and r.rejection_rate is None for r in results)
