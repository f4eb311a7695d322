"""Stress rows → one value per (comparison, episode seed), both arms at the same band cell
(α, θ)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.audit import paired_stress, seed_means
from phantom_assets.audit.pairs import stress_cube
from phantom_assets.calibration.gate import BASELINE, GateLayout, stress_table

CANDIDATE = "ppo-robust-a050"


def _table(**layout) -> pl.DataFrame:
    return stress_table(GateLayout("null", **layout), np.random.default_rng(0))


def _rows(
    policy: str,
    detector: str,
    rows: list[tuple[str, int, float, float, int, float]],
    theta: float = 0.0,
) -> pl.DataFrame:
    """Rows `(split, seed, alpha0, alpha, train_seed, profit)` of one arm, agents adapting with
    evasion share `theta`."""
    columns = ("split", "seed", "alpha0", "alpha", "train_seed", "profit")
    frame = pl.DataFrame(rows, schema=columns, orient="row")
    return frame.with_columns(policy=pl.lit(policy), detector=pl.lit(detector), theta=pl.lit(theta))


def test_training_seeds_are_averaged_within_a_cell_before_the_cells_are():
    # Cell (0, 0) has two training seeds (1, 3 -> 2), cell (1, 1) one (10): the seed's value is
    # (2 + 10) / 2 = 6, not the row mean 14 / 3.
    rows = _rows(
        CANDIDATE,
        "fitted",
        [
            ("test", 5, 0.0, 0.0, 0, 1.0),
            ("test", 5, 0.0, 0.0, 1, 3.0),
            ("test", 5, 1.0, 1.0, 0, 10.0),
        ],
    )
    paired = paired_stress(stress_cube(rows, "profit"), (CANDIDATE, "fitted"))
    assert paired.test_seeds == (5,) and paired.test.tolist() == [6.0]


def test_pairs_are_one_per_held_out_seed_whatever_the_training_seeds_and_band():
    stress = _table(train_seeds=5)
    assert stress.filter(pl.col("split") == "test").height > 24 * 5 * 7 * 2
    cube = stress_cube(stress, "profit")
    paired = paired_stress(cube, (CANDIDATE, "fitted"), (BASELINE, "fitted"))
    assert paired.test.shape == (24,) and paired.selection.shape == (8,)
    assert set(paired.cells) == {0.0, 0.5, 1.0}


def test_the_worst_band_alpha_is_chosen_on_the_selection_seeds_and_kept_for_the_test_seeds():
    # Selection: the difference is 1 at alpha 0.3 and 3 at alpha 0.7; held-out: 10 and -5.
    rows = [
        (split, seed, 0.5, alpha, 0, value)
        for split, seed, values in (("selection", 1, (1.0, 3.0)), ("test", 2, (10.0, -5.0)))
        for alpha, value in zip((0.3, 0.7), values, strict=True)
    ]
    zero = [(*row[:-1], 0.0) for row in rows]
    stress = pl.concat([_rows(CANDIDATE, "fitted", rows), _rows(BASELINE, "fitted", zero)])
    cube = stress_cube(stress, "profit")
    gain = paired_stress(cube, (CANDIDATE, "fitted"), (BASELINE, "fitted"))
    assert gain.cells == {0.5: (0.3, 0.0)} and gain.test.tolist() == [10.0]
    cost = paired_stress(cube, (CANDIDATE, "fitted"), worst="max")
    assert cost.cells == {0.5: (0.7, 0.0)} and cost.test.tolist() == [-5.0]


def test_the_worst_evasion_share_is_chosen_on_the_selection_seeds_with_its_alpha():
    # Detector value (fitted − permuted) 4 with the agents as logged, 1 where they adapt
    # (θ = 0.25) on the selection seeds; held-out: 6 and 0. The gate's value is θ = 0.25's, at
    # the same α both arms were compared at, and the report says where.
    def arm(detector: str, theta: float, selection: float, test: float) -> pl.DataFrame:
        rows = [("selection", 1, 0.5, 0.5, 0, selection), ("test", 2, 0.5, 0.5, 0, test)]
        return _rows(CANDIDATE, detector, rows, theta)

    stress = pl.concat(
        [
            arm("fitted", 0.0, 5.0, 7.0),
            arm("permuted", 0.0, 1.0, 1.0),
            arm("fitted", 0.25, 2.0, 1.0),
            arm("permuted", 0.25, 1.0, 1.0),
        ]
    )
    value = paired_stress(
        stress_cube(stress, "profit"), (CANDIDATE, "fitted"), (CANDIDATE, "permuted")
    )
    assert value.cells == {0.5: (0.5, 0.25)} and value.test.tolist() == [0.0]
    assert value.to_dict() == {"compared_at": [{"alpha0": 0.5, "alpha": 0.5, "theta": 0.25}]}


def test_ties_on_the_selection_seeds_go_to_the_lower_theta_then_the_lower_alpha():
    rows = [("selection", 1, 0.5, a, 0, 2.0) for a in (0.3, 0.5, 0.7)]
    stress = pl.concat([_rows(CANDIDATE, "fitted", rows, theta) for theta in (0.25, 0.0)])
    cube = stress_cube(stress, "profit")
    assert paired_stress(cube, (CANDIDATE, "fitted")).cells == {0.5: (0.3, 0.0)}


def test_detector_value_is_fitted_minus_permuted_profit_of_one_policy_per_seed():
    rows = pl.concat(
        [
            _rows(
                CANDIDATE, "fitted", [("test", 1, 0.0, 0.0, 0, 7.0), ("test", 2, 0.0, 0.0, 0, 4.0)]
            ),
            _rows(
                CANDIDATE,
                "permuted",
                [("test", 1, 0.0, 0.0, 0, 5.0), ("test", 2, 0.0, 0.0, 0, 5.0)],
            ),
        ]
    )
    value = paired_stress(
        stress_cube(rows, "profit"), (CANDIDATE, "fitted"), (CANDIDATE, "permuted")
    )
    assert value.test.tolist() == [2.0, -1.0]


def test_arms_stress_tested_on_different_seeds_or_cells_are_refused():
    stress = _table()
    with pytest.raises(ValueError, match="different cells or seeds"):
        stress_cube(
            stress.filter(~((pl.col("detector") == "permuted") & (pl.col("seed") == 12))), "profit"
        )
    with pytest.raises(ValueError, match="different cells or seeds"):
        stress_cube(
            stress.filter(~((pl.col("policy") == BASELINE) & (pl.col("alpha") == 0.7))), "profit"
        )
    with pytest.raises(ValueError, match="no stress rows"):
        paired_stress(stress_cube(stress, "profit"), ("nope-a000", "fitted"))


def test_undefined_values_are_left_out_of_the_means():
    # The harm share of a cell without human spend is NaN: it must not void the seed's value.
    cells = [(1, 0.0, 0.02), (1, 1.0, np.nan), (2, 0.0, np.nan), (2, 1.0, np.nan)]
    rows = _rows(CANDIDATE, "fitted", [("test", seed, a, a, 0, v) for seed, a, v in cells])
    values = paired_stress(stress_cube(rows, "profit"), (CANDIDATE, "fitted")).test
    assert values[0] == 0.02 and np.isnan(values[1])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.drop("detector"), "lack columns"),
        (lambda t: t.drop("alpha"), "lack columns"),
        (lambda t: t.drop("theta"), "lack columns"),
        (lambda t: t.with_columns(detector=pl.lit("oracle")), "unknown stress splits"),
        (lambda t: t.with_columns(split=pl.lit("train")), "unknown stress splits"),
        (lambda t: t.clear(), "no stress rows"),
    ],
)
def test_seed_means_reject_tables_outside_the_stress_contract(mutate, message):
    with pytest.raises(ValueError, match=message):
        seed_means(mutate(_table()), "profit")
