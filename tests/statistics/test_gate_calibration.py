"""The certification gate holds its level on stress tables of the real shape
(docs/statistics.md#certification-gate-tests):
it certifies a class-blind rule (profit over the best undefended response, no detector value), a
detector value without a profit advantage, an advantage the worst α of the band lacks, or human
harm at the bound (normal and zero-inflated) at most (1 − confidence)/2 of the time, and finds
real effects.

The real gate runs on tables built by `phantom_assets.calibration.gate`. 400 replications per
layout: the tolerance is 3 binomial SEs of the level (0.025 → +0.023).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from phantom_assets.calibration import binomial_se
from phantom_assets.calibration.gate import LAYOUTS, POWER_LAYOUT, gate_rejection_rate

N_REPS = 400
LEVEL = 0.025


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_gate_false_certification_rate_is_within_its_level(layout):
    rate = gate_rejection_rate(layout, N_REPS, np.random.default_rng(2026))
    assert rate <= LEVEL + 3 * binomial_se(LEVEL, N_REPS), f"{layout.name}: {rate}"


def test_gate_certifies_a_real_profit_advantage_with_a_real_detector_value_most_of_the_time():
    # Without this a level-holding gate could simply never certify.
    assert gate_rejection_rate(POWER_LAYOUT, 200, np.random.default_rng(7)) >= 0.8


def test_selecting_on_the_test_seeds_would_break_the_level(monkeypatch):
    # The v1 mistake, re-enacted on the class-blind rule: every learnable candidate beats the
    # baseline, so only the detector value decides; choosing the best of 6 null detector values
    # on the seeds it is then tested on certifies far more often than 2.5%.
    from phantom_assets.audit import selection

    original = selection.rank_candidates

    def select_on_test_seeds(profit, harm, *args):
        def swapped(cube):  # the held-out seeds labelled as selection seeds
            return dataclasses.replace(cube, is_selection=~cube.is_selection)

        return original(swapped(profit), swapped(harm), *args)

    monkeypatch.setattr(selection, "rank_candidates", select_on_test_seeds)
    layout = next(layout for layout in LAYOUTS if layout.name == "class_blind_rule")
    rate = gate_rejection_rate(layout, 200, np.random.default_rng(2026))
    assert rate > LEVEL + 3 * binomial_se(LEVEL, 200)
