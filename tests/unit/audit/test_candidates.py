"""Choosing the policy to certify and pairing its stress episodes with its baseline twin."""

import numpy as np
import polars as pl
import pytest

from phantom_assets.audit import choose_candidate, paired_metric


def _stress(rewards: dict[str, list[float]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {"policy": key, "seed": 100 + i, "reward": value}
            for key, values in rewards.items()
            for i, value in enumerate(values)
        ]
    )


def test_choose_candidate_takes_the_best_robust_policy_and_its_baseline_twin():
    stress = _stress(
        {
            "static-a000": [50.0, 50.0],
            "ppo-robust-a050": [10.0, 12.0],
            "ppo-baseline-a050": [9.0, 9.0],
            "qtable-robust-a000": [20.0, 22.0],
            "qtable-baseline-a000": [30.0, 30.0],
        }
    )
    assert choose_candidate(stress) == ("qtable-robust-a000", "qtable-baseline-a000")


def test_choose_candidate_skips_robust_policies_without_a_twin():
    stress = _stress(
        {"ppo-robust-a050": [99.0], "dqn-robust-a000": [1.0], "dqn-baseline-a000": [0.0]}
    )
    assert choose_candidate(stress) == ("dqn-robust-a000", "dqn-baseline-a000")
    with pytest.raises(ValueError, match="no robust policy"):
        choose_candidate(_stress({"static-a000": [1.0]}))


def test_paired_metric_aligns_episodes_by_seed():
    stress = pl.concat(
        [
            _stress({"a2c-robust-a000": [1.0, 2.0, 3.0]}),
            _stress({"a2c-baseline-a000": [10.0, 20.0, 30.0]}).reverse(),
        ]
    )
    candidate, baseline = paired_metric(stress, "a2c-robust-a000", "a2c-baseline-a000")
    np.testing.assert_array_equal(candidate, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(baseline, [10.0, 20.0, 30.0])
