"""A policy partition's evaluation: labelled protocol tables, their files, the protocol check."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.evaluation import (
    load_evaluations,
    protocol_conformance,
    save_evaluation,
)
from phantom_assets.lake import EVALUATION_FILES
from tests.unit.evaluation.conftest import PROTOCOL


def test_every_row_carries_the_partition_labels_and_its_training_seed(partitions):
    evaluation = partitions["qtable-robust-a050"]
    for frame in evaluation:
        assert set(frame["policy"]) == {"qtable-robust-a050"}
        assert set(frame["train_seed"]) == {0, 1}
    assert evaluation.nominal.height == 2 * len(PROTOCOL.alphas) * PROTOCOL.episodes


def test_stress_rows_hold_the_worst_candidate_on_selection_and_held_out_seeds_per_grid_alpha(
    partitions,
):
    stress = partitions["static-a000"].stress.filter(train_seed=0, alpha0=0.5)
    selection, test = (stress.filter(split=s) for s in (SELECTION_SPLIT, TEST_SPLIT))
    (worst,) = set(stress["worst_alpha"])
    assert abs(worst - 0.5) <= PROTOCOL.stress_radius + 1e-9
    assert set(selection["alpha"]) == set(test["alpha"]) == {worst}
    assert sorted(selection["seed"]) == list(PROTOCOL.selection_seeds)
    assert sorted(test["seed"]) == list(PROTOCOL.test_seeds)


def test_evaluated_partitions_conform_to_the_protocol(partitions):
    for evaluation in partitions.values():
        conformance = protocol_conformance(evaluation.nominal, evaluation.stress, PROTOCOL)
        assert conformance.holds, conformance


@pytest.mark.parametrize(
    ("broken", "field"),
    [
        (lambda n, s: (n.with_columns(alpha_executed=pl.col("alpha") + 0.1), s), "rows_off_alpha"),
        (lambda n, s: (n.with_columns(seed=pl.col("seed") + 1), s), "common_seeds"),
        (lambda n, s: (n.filter(pl.col("alpha") != 1.0), s), "on_grid"),
        (lambda n, s: (n, s.filter(split=SELECTION_SPLIT)), "held_out_seeds_disjoint_and_complete"),
    ],
)
def test_protocol_conformance_names_the_broken_condition(partitions, broken, field):
    evaluation = partitions["static-a000"]
    good = dataclasses.asdict(protocol_conformance(evaluation.nominal, evaluation.stress, PROTOCOL))
    conformance = protocol_conformance(*broken(evaluation.nominal, evaluation.stress), PROTOCOL)
    failed = {k for k, v in dataclasses.asdict(conformance).items() if v != good[k]}
    assert not conformance.holds and failed == {field}


def test_saved_evaluations_load_back_concatenated_with_the_missing_keys_named(tmp_path, partitions):
    folders = {key: tmp_path / key for key in [*partitions, "ppo-robust-a050"]}
    for key, evaluation in partitions.items():
        paths = save_evaluation(folders[key], evaluation)
        assert [p.name for p in paths] == list(EVALUATION_FILES)
    loaded, missing = load_evaluations(folders)
    assert missing == ["ppo-robust-a050"]
    for name, frame in zip(("nominal", "stress", "traces"), loaded, strict=True):
        expected = pl.concat([getattr(e, name) for e in partitions.values()])
        assert frame.equals(expected), name


def test_loading_without_any_evaluation_says_what_to_materialize(tmp_path):
    with pytest.raises(ValueError, match="materialize policy_evaluations"):
        load_evaluations({"static-a000": tmp_path / "static-a000"})
