"""The certification gate holds its level on stress tables of the real shape
(docs/statistics.md#certification-gate-tests):
it certifies a class-blind rule (profit over the best undefended response, no detector value), a
detector value without a profit advantage, an advantage the worst α of the band lacks, or human
harm at the bound (normal and zero-inflated) at most (1 − confidence)/2 of the time, and finds
real effects.

The real gate runs on tables built by `phantom_assets.calibration.gate`. 300 replications per
layout: the tolerance is 3 binomial SEs of the level (0.025 → +0.027).
"""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.calibration import binomial_se
from phantom_assets.calibration.gate import LAYOUTS, POWER_LAYOUT, gate_rejection_rate

N_REPS = 300
LEVEL = 0.025


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_gate_false_certification_rate_is_within_its_level(layout):
    rate = gate_rejection_rate(layout, N_REPS, np.random.default_rng(2026))
    assert rate <= LEVEL + 3 * binomial_se(LEVEL, N_REPS), f"{layout.name}: {rate}"


def test_gate_certifies_a_real_profit_advantage_with_a_real_detector_value_most_of_the_time():
    # Without this a level-holding gate could simply never certify.
    assert gate_rejection_rate(POWER_LAYOUT, 200, np.random.default_rng(7)) >= 0.8
