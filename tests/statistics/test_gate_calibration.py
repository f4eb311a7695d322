"""The certification gate holds its level on v2 stress tables (DESIGN §5a, §8): it certifies a
candidate without a profit advantage, without a detector value ("defence without detection"), or
with human harm at the bound at most (1 − confidence)/2 of the time, and finds real effects.

The real gate runs on tables of the real shape (`phantom_assets.calibration.gate`). 400
replications per layout: the tolerance is 3 binomial SEs of the level (0.025 → +0.023); 200 for
the study-shape layout (60 seeds × 3 training seeds, random sign flips; +0.033).
"""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.calibration import binomial_se
from phantom_assets.calibration.gate import LAYOUTS, POWER_LAYOUT, gate_rejection_rate

N_REPS = 400
N_REPS_STUDY_SHAPE = 200
LEVEL = 0.025


def _reps(layout) -> int:
    return N_REPS_STUDY_SHAPE if layout.test_seeds > 8 else N_REPS


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_gate_false_certification_rate_is_within_its_level(layout):
    reps = _reps(layout)
    rate = gate_rejection_rate(layout, reps, np.random.default_rng(2026))
    assert rate <= LEVEL + 3 * binomial_se(LEVEL, reps), f"{layout.name}: {rate}"


def test_gate_certifies_a_real_profit_advantage_with_a_real_detector_value_most_of_the_time():
    # Without this a level-holding gate could simply never certify.
    assert gate_rejection_rate(POWER_LAYOUT, 200, np.random.default_rng(7)) >= 0.8


def test_selecting_on_the_test_seeds_would_break_the_level(monkeypatch):
    # The v1 mistake, re-enacted on the defence without detection: every candidate beats the
    # static engine, so only the detector value decides; choosing the best of 24 null detector
    # values on the seeds it is then tested on certifies ~1 − (1 − 0.025)^24 ≈ 45% of the time.
    from phantom_assets.audit import gate

    original_rank, original_per_seed = gate.rank_candidates, gate.per_seed
    latest: dict = {}

    def per_seed_spy(stress, metric):
        latest[metric] = original_per_seed(stress, metric)
        return latest[metric]

    def rank_on_test_seeds(selection, static, *harm):  # right after per_seed of the whole table
        return original_rank(latest[selection.metric]["test"], static, *harm)

    monkeypatch.setattr(gate, "per_seed", per_seed_spy)
    monkeypatch.setattr(gate, "rank_candidates", rank_on_test_seeds)
    layout = next(layout for layout in LAYOUTS if layout.name == "defence_without_detection")
    rate = gate_rejection_rate(layout, 200, np.random.default_rng(2026))
    assert rate > LEVEL + 3 * binomial_se(LEVEL, 200)
