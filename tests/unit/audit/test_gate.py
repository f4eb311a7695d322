"""Promotion gate: selection seeds choose, held-out seeds test, pairs are episode seeds.

Fixtures have the real shape (12 robust candidates, 12 twins, the static engine × 3 α0 × 8
selection + 8 held-out episode seeds × training seeds), built by the calibration study's own
table builder, so a many-to-many join or a selection on the test seeds shows up here.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from phantom_assets.audit import (
    holm_adjust,
    paired_differences,
    per_seed,
    promotion_gate,
    rank_candidates,
)
from phantom_assets.calibration.gate import STATIC, GateLayout, _policies, stress_table

ROBUST, TWINS = _policies()
PASSED = {key: () for key in ROBUST}


def _table(layout: GateLayout, seed: int = 0) -> pl.DataFrame:
    return stress_table(layout, np.random.default_rng(seed))


def _gate(stress: pl.DataFrame, **kwargs) -> object:
    options = {"static": STATIC, "failed_checks": PASSED, "rng": np.random.default_rng(0)}
    return promotion_gate(stress, **{**options, **kwargs})


def _lift(stress: pl.DataFrame, policy: str, amount: float) -> pl.DataFrame:
    return stress.with_columns(
        pl.when(pl.col("policy") == policy)
        .then(pl.col("reward") + amount)
        .otherwise(pl.col("reward"))
        .alias("reward")
    )


def test_gate_certifies_a_candidate_that_beats_twin_and_static_on_held_out_seeds():
    stress = _lift(_table(GateLayout("null", train_seeds=3)), "dqn-robust-a050", 3.0)
    decision = _gate(stress)
    assert decision.certified, decision.reasons
    assert decision.candidate == "dqn-robust-a050" and decision.baseline == "dqn-baseline-a050"
    assert decision.n_pairs == 8 == len(decision.test_seeds)
    assert set(decision.selection_seeds).isdisjoint(decision.test_seeds)
    assert decision.ci_low > 0 and decision.p_value <= 0.025
    assert [c["reference"] for c in decision.comparisons] == ["dqn-baseline-a050", STATIC]
    assert decision.reasons[0].startswith("certified: all blocking checks passed")


def test_gate_pairs_one_value_per_held_out_seed_whatever_the_training_seeds():
    # Regression: pairing on seed alone turned 8 seeds x 25 train/alpha0 rows into 200 "pairs".
    stress = _table(GateLayout("null", train_seeds=5))
    assert stress.filter(pl.col("split") == "test").height > 8 * 25
    values = per_seed(stress, "reward")["test"]
    diff = paired_differences(values, "ppo-robust-a000", "ppo-baseline-a000")
    assert diff.shape == (8,)
    assert _gate(stress).n_pairs == 8


def test_gate_refuses_a_candidate_identical_to_its_twin():
    # Regression (v1 hotel): every pair differed by exactly 0, yet the CI was [-4052, 4228].
    decision = _gate(_table(GateLayout("twins", twins_identical=True)))
    assert not decision.certified
    assert decision.mean_diff == 0.0 and decision.ci_low == 0.0 == decision.ci_high
    assert any("baseline twin" in reason for reason in decision.reasons)


def test_gate_refuses_a_candidate_that_beats_its_twin_but_not_the_static_engine():
    decision = _gate(_table(GateLayout("weak twin", twin_lift=-5.0)))
    assert not decision.certified
    assert decision.ci_low > 0  # it does beat its twin ...
    assert any("static engine" in reason for reason in decision.reasons)  # ... not the engine


def test_gate_selects_on_selection_seeds_only():
    # The worst candidate on the selection seeds, made brilliant on the held-out seeds, is never
    # chosen: the test seeds must not influence the selection.
    stress = _table(GateLayout("null"))
    ranked = rank_candidates(per_seed(stress, "reward")["selection"], STATIC)
    top, worst = ranked["policy"][0], ranked["policy"][-1]
    lucky = (pl.col("policy") == worst) & (pl.col("split") == "test")
    stress = stress.with_columns(
        pl.when(lucky).then(pl.col("reward") + 50).otherwise(pl.col("reward")).alias("reward")
    )
    assert _gate(stress).candidate == top != worst


def test_gate_refuses_a_clear_winner_whose_lineage_failed_a_blocking_check():
    stress = _lift(_table(GateLayout("null")), "qtable-robust-a000", 3.0)
    failed = {
        **PASSED,
        "qtable-robust-a000": ("transition_kernels [agent|hotel]: rows_sum_to_one",),
    }
    decision = _gate(stress, failed_checks=failed)
    assert not decision.certified
    assert decision.reasons[0] == (
        "not certified: blocking checks failed: transition_kernels [agent|hotel]: rows_sum_to_one"
    )


def test_gate_with_several_candidates_certifies_the_best_that_survives_holm():
    stress = _lift(_table(GateLayout("null")), "ppo-robust-a100", 4.0)
    stress = _lift(stress, "a2c-robust-a000", 4.5)
    decision = _gate(stress, n_candidates=3)
    assert decision.certified and decision.candidate in {"ppo-robust-a100", "a2c-robust-a000"}
    assert len(decision.candidates) == 3
    holm = [c["p_holm"] for c in decision.candidates]
    assert holm == pytest.approx(list(holm_adjust([c["p_value"] for c in decision.candidates])))


def test_holm_adjust_matches_the_step_down_definition():
    p = [0.01, 0.04, 0.03, 0.2]
    # sorted 0.01, 0.03, 0.04, 0.2 -> 4*0.01, max(.04, 3*.03), max(.09, 2*.04), max(.09, .2)
    assert holm_adjust(p) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    with pytest.raises(ValueError, match="p-values"):
        holm_adjust([1.5])


def test_gate_is_reproducible_for_a_table():
    stress = _table(GateLayout("null"))
    assert _gate(stress).to_dict() == _gate(stress).to_dict()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.filter(pl.col("split") == "selection"), "both a 'selection' and a 'test'"),
        (lambda t: t.with_columns(pl.lit("selection").alias("split")), "both a 'selection'"),
        (lambda t: t.filter(pl.col("policy") != STATIC), "static engine"),
        (lambda t: t.filter(~pl.col("policy").str.contains("baseline")), "baseline twin"),
        (
            lambda t: t.filter(~((pl.col("policy") == STATIC) & (pl.col("seed") == 12))),
            "different test seeds",
        ),
        (lambda t: t.drop("alpha0"), "lack columns"),
    ],
)
def test_gate_rejects_broken_stress_tables_naming_the_problem(mutate, message):
    stress = _lift(_table(GateLayout("null")), "dqn-robust-a000", 9.0)  # dqn-robust-a000 tested
    with pytest.raises(ValueError, match=message):
        _gate(mutate(stress))


def test_gate_rejects_overlapping_seed_sets():
    stress = _table(GateLayout("null"))
    overlapping = stress.with_columns(
        pl.when(pl.col("split") == "test").then(pl.col("seed") - 8).otherwise(pl.col("seed"))
    )
    with pytest.raises(ValueError, match="overlap"):
        _gate(overlapping)


def test_gate_needs_check_results_for_every_tested_candidate():
    with pytest.raises(ValueError, match="no check results"):
        _gate(_table(GateLayout("null")), failed_checks={})


def test_layout_shapes_are_the_designs():
    layout = dataclasses.replace(GateLayout("null"), train_seeds=3)
    stress = _table(layout)
    assert stress.height == 25 * 16 * 3 * 3
    assert stress.group_by("split").agg(pl.col("seed").n_unique())["seed"].to_list() == [8, 8]
