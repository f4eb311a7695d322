"""Stress rows → one value per (policy, detector, held-out seed), paired one-to-one on seeds."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.audit import (
    detector_values,
    paired_differences,
    per_seed,
    profit_advantages,
    rank_candidates,
)
from phantom_assets.calibration.gate import HEURISTICS, STATIC, GateLayout, stress_table


def _table(**layout) -> pl.DataFrame:
    return stress_table(GateLayout("null", **layout), np.random.default_rng(0))


def _rows(policy: str, detector: str, rows: list[tuple[int, float, int, float]]) -> pl.DataFrame:
    """Test rows `(seed, alpha0, train_seed, profit)` of one arm."""
    seed, alpha0, train_seed, profit = (list(column) for column in zip(*rows, strict=True))
    n = len(rows)
    return pl.DataFrame({"policy": [policy] * n, "split": ["test"] * n, "detector": [detector] * n,
                         "seed": seed, "alpha0": alpha0, "train_seed": train_seed,
                         "profit": profit})  # fmt: skip


def test_training_seeds_are_averaged_within_an_alpha0_cell_before_the_cells_are():
    # alpha0 = 0 has two training seeds (1, 3 -> 2), alpha0 = 1 one (10): the seed's value is
    # (2 + 10) / 2 = 6, not the row mean 14 / 3.
    rows = _rows("ppo-robust-a050", "fitted", [(5, 0.0, 0, 1.0), (5, 0.0, 1, 3.0),
                                               (5, 1.0, 0, 10.0)])  # fmt: skip
    seeds, values = per_seed(rows, "profit")["test"].by_arm[("ppo-robust-a050", "fitted")]
    assert seeds.tolist() == [5] and values.tolist() == [6.0]


def test_pairs_are_one_per_held_out_seed_whatever_the_training_seeds():
    # Regression: pairing on seed alone turned 8 seeds x 25 train/alpha0 rows into 200 "pairs".
    stress = _table(train_seeds=5)
    assert stress.filter(pl.col("split") == "test").height > 8 * 25
    values = per_seed(stress, "profit")["test"]
    assert profit_advantages(values, "ppo-robust-a000", STATIC).shape == (8,)
    assert detector_values(values, "ppo-robust-a000").shape == (8,)


def test_detector_value_is_fitted_minus_permuted_profit_of_one_policy_per_seed():
    rows = pl.concat(
        [
            _rows("dqn-robust-a050", "fitted", [(1, 0.0, 0, 7.0), (2, 0.0, 0, 4.0)]),
            _rows("dqn-robust-a050", "permuted", [(1, 0.0, 0, 5.0), (2, 0.0, 0, 5.0)]),
        ]
    )
    assert detector_values(per_seed(rows, "profit")["test"], "dqn-robust-a050").tolist() == [2, -1]


def test_arms_stress_tested_on_different_seeds_are_refused():
    stress = _table().filter(~((pl.col("detector") == "permuted") & (pl.col("seed") == 12)))
    values = per_seed(stress, "profit")["test"]
    with pytest.raises(ValueError, match="different test seeds"):
        detector_values(values, "qtable-robust-a050")
    with pytest.raises(ValueError, match="no test stress rows"):
        paired_differences(values, ("nope-a000", "fitted"), (STATIC, "fitted"))


def test_undefined_values_are_left_out_of_the_means():
    # The harm share of a cell without human spend is NaN: it must not void the seed's value.
    rows = _rows("ppo-robust-a050", "fitted", [(1, 0.0, 0, 0.02), (1, 1.0, 0, np.nan),
                                               (2, 1.0, 0, np.nan)])  # fmt: skip
    _, values = per_seed(rows, "profit")["test"].by_arm[("ppo-robust-a050", "fitted")]
    assert values[0] == 0.02 and np.isnan(values[1])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.drop("detector"), "lack columns"),
        (lambda t: t.with_columns(detector=pl.lit("oracle")), "unknown stress split or"),
        (lambda t: t.with_columns(split=pl.lit("train")), "unknown stress split or"),
        (lambda t: t.with_columns(alpha=pl.lit(0.3), worst_alpha=pl.lit(0.5)), "worst alpha"),
        (lambda t: t.clear(), "no stress rows"),
    ],
)
def test_per_seed_rejects_tables_outside_the_stress_contract(mutate, message):
    with pytest.raises(ValueError, match=message):
        per_seed(mutate(_table()), "profit")


def test_candidates_are_every_policy_but_static_ranked_by_the_weaker_of_the_two_effects():
    stress = _table()
    selection = per_seed(stress, "profit")["selection"]
    ranked = rank_candidates(selection, STATIC)
    assert STATIC not in ranked["policy"] and set(HEURISTICS) <= set(ranked["policy"])
    assert ranked.height == len(selection.policies()) - 1
    for row in ranked.iter_rows(named=True):
        assert row["score"] == min(row["profit_advantage"], row["detector_value"])
    assert ranked["score"].is_sorted(descending=True)
    # delta = 0 quotes alike with either f: the heuristics' detector value is exactly zero.
    heuristics = ranked.filter(pl.col("policy").is_in(HEURISTICS))
    assert heuristics["detector_value"].to_list() == [0.0, 0.0]
    with pytest.raises(ValueError, match="static engine"):
        rank_candidates(selection, "static-a100")
