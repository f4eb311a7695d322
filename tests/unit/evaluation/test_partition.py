"""A policy partition's evaluation: labelled protocol tables, their files, the protocol check."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.evaluation import (
    EPISODE_METRICS,
    ROW_KEYS,
    evaluate_policies,
    load_evaluations,
    protocol_conformance,
    save_evaluation,
)
from phantom_assets.lake import EVALUATION_FILES
from phantom_assets.policies import StaticPolicy
from tests.unit.evaluation.conftest import GRID, PROTOCOL, partition_labels

LABELS = ["store", "policy", "tier", "mode", "train_alpha", "config_hash", "train_seed"]


def conformance(spec, evaluation):
    return protocol_conformance(
        evaluation.nominal, evaluation.stress, PROTOCOL, GRID, spec.agents.nominal_k
    )


def test_rows_lead_with_the_partition_labels_and_follow_the_row_contract(partitions):
    evaluation = partitions["dqn-robust-a050"]
    assert evaluation.nominal.columns == [*LABELS, *ROW_KEYS, *EPISODE_METRICS]
    for frame in evaluation:
        assert set(frame["policy"]) == {"dqn-robust-a050"} and set(frame["train_seed"]) == {0, 1}
    cells = len(GRID.alpha_grid) * len(GRID.k_grid) * 2  # × both detectors
    assert evaluation.nominal.height == 2 * cells * PROTOCOL.episodes


def test_stress_rows_hold_every_band_alpha_on_selection_and_held_out_seeds_per_grid_alpha(
    spec, partitions
):
    stress = partitions["static-a000"].stress.filter(train_seed=0, alpha0=0.5)
    assert "worst_alpha" not in stress.columns and set(stress["k"]) == {spec.agents.nominal_k}
    for split, seeds in (
        (SELECTION_SPLIT, PROTOCOL.selection_seeds),
        (TEST_SPLIT, PROTOCOL.test_seeds),
    ):
        for detector in ("fitted", "permuted"):
            for alpha in (0.25, 0.5, 0.75):
                cell = stress.filter(split=split, detector=detector, alpha=alpha)
                assert sorted(cell["seed"]) == list(seeds)


def test_stress_rows_at_a_grid_cell_equal_its_nominal_rows(partitions):
    """Common random numbers: the same (α, K, detector, seed) is the same episode in both."""
    columns = [*LABELS, *ROW_KEYS, *EPISODE_METRICS]
    cell = ["train_seed", "alpha", "k", "detector", "seed"]
    stress = pl.concat([e.stress for e in partitions.values()]).filter(split=SELECTION_SPLIT)
    nominal = pl.concat([e.nominal for e in partitions.values()])
    shared = stress.select(columns).join(nominal, on=["policy", *cell], suffix="_nominal")
    assert shared.height > 0
    for metric in EPISODE_METRICS:
        assert shared[metric].equals(shared[f"{metric}_nominal"]), metric


def test_evaluated_partitions_conform_to_the_protocol(spec, partitions):
    for evaluation in partitions.values():
        assert conformance(spec, evaluation).holds


@pytest.mark.parametrize(
    ("broken", "field"),
    [
        (lambda n, s: (n.filter(pl.col("k") != 2), s), "on_grid"),
        (lambda n, s: (n.filter(pl.col("detector") == "fitted"), s), "on_grid"),
        (lambda n, s: (n.with_columns(seed=pl.col("seed") + 1), s), "common_seeds"),
        (lambda n, s: (pl.concat([n, n.head(1)]), s), "common_seeds"),
        (lambda n, s: (n, s.with_columns(k=pl.lit(2, dtype=pl.Int64))), "stress_at_nominal_k"),
        (lambda n, s: (n, s.filter(split=SELECTION_SPLIT)), "held_out_seeds_disjoint_and_complete"),
        (lambda n, s: (n, s.filter(detector="fitted")), "held_out_seeds_disjoint_and_complete"),
    ],
)
def test_protocol_conformance_names_the_broken_condition(spec, partitions, broken, field):
    evaluation = partitions["static-a000"]
    result = protocol_conformance(
        *broken(evaluation.nominal, evaluation.stress), PROTOCOL, GRID, spec.agents.nominal_k
    )
    failed = {k for k, v in dataclasses.asdict(result).items() if not v}
    assert not result.holds and failed == {field}


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


@dataclasses.dataclass
class CountedStatic(StaticPolicy):
    """The static tier, counting the episodes it plays (not part of its settings)."""

    episodes: int = dataclasses.field(default=0, repr=False, compare=False)

    def reset(self) -> None:
        self.episodes += 1


def test_training_seeds_with_one_heuristic_policy_are_evaluated_once_and_share_its_rows(spec):
    same = {seed: CountedStatic(spec.action_index(2, 1, 0)) for seed in (0, 1, 2)}
    other = {
        seed: CountedStatic(spec.action_index(level, 1, 0)) for seed, level in ((0, 2), (1, 3))
    }
    shared = evaluate_policies(same, spec, PROTOCOL, GRID, partition_labels("static-a000"))
    apart = evaluate_policies(other, spec, PROTOCOL, GRID, partition_labels("static-a000"))
    assert same[0].episodes > 0 and same[1].episodes == same[2].episodes == 0
    assert other[0].episodes == other[1].episodes > 0  # different settings: each its own
    for frame in shared:
        by_seed = [part.drop("train_seed") for part in frame.partition_by("train_seed")]
        assert len(by_seed) == 3 and all(part.equals(by_seed[0]) for part in by_seed)
    assert conformance(spec, shared).holds
    assert shared.nominal.filter(train_seed=0).equals(apart.nominal.filter(train_seed=0))
    assert not shared.nominal.filter(train_seed=1).equals(apart.nominal.filter(train_seed=1))
