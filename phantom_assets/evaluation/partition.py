"""The protocol applied to one policy partition (every training seed), its files and its check.

A partition's evaluation is three tables, stored as `EVALUATION_FILES` in its folder: nominal rows
at every grid α, stress rows (worst case around every grid α, selection and held-out test seeds)
and the per-step price traces of episode 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from phantom_assets.config import EvaluationConfig
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.evaluation.protocol import evaluate_policy, price_traces, stress_evaluate
from phantom_assets.lake import EVALUATION_FILES
from phantom_assets.market import MarketSpec
from phantom_assets.policies import Policy
from phantom_assets.storage import write_parquet_atomic

STRESS_CANDIDATES = 3  # α0 − r, α0, α0 + r: the same candidates for every policy


class PolicyEvaluation(NamedTuple):
    """The protocol's tables of one or more policies (in `EVALUATION_FILES` order)."""

    nominal: pl.DataFrame
    stress: pl.DataFrame
    traces: pl.DataFrame


def evaluate_policies(
    policies: Mapping[int, Policy], spec: MarketSpec, cfg: EvaluationConfig, labels: dict[str, Any]
) -> PolicyEvaluation:
    """Nominal, stress and trace rows of the policies of one partition (by training seed), each
    row labelled with `labels` and its `train_seed`."""
    nominal, stress, traces = [], [], []
    for train_seed, policy in sorted(policies.items()):  # a handful of training seeds
        tag = [pl.lit(v).alias(k) for k, v in {**labels, "train_seed": train_seed}.items()]
        nominal.append(evaluate_policy(policy, spec, cfg.alphas, cfg.episodes, cfg.seed)
                       .with_columns(tag))  # fmt: skip
        stress.extend(
            stress_evaluate(policy, spec, a0, cfg.stress_radius, cfg.episodes, cfg.seed,
                            test_episodes=cfg.test_episodes, test_seed=cfg.test_seed,
                            candidates=STRESS_CANDIDATES).with_columns(tag)
            for a0 in cfg.alphas
        )  # fmt: skip
        traces.append(price_traces(policy, spec, cfg.alphas, cfg.seed).with_columns(tag))
    return PolicyEvaluation(pl.concat(nominal), pl.concat(stress), pl.concat(traces))


def save_evaluation(folder: Path, evaluation: PolicyEvaluation) -> list[Path]:
    """Write the three tables atomically into `folder`; return their paths."""
    paths = [folder / name for name in EVALUATION_FILES]
    for frame, path in zip(evaluation, paths, strict=True):
        write_parquet_atomic(frame, path)
    return paths


def load_evaluations(folders: Mapping[str, Path]) -> tuple[PolicyEvaluation, list[str]]:
    """The tables of every policy key whose folder holds an evaluation, concatenated, and the
    keys that have none yet.

    Raises:
        ValueError: if no folder holds an evaluation.
    """
    present = [k for k, f in folders.items() if all((f / n).is_file() for n in EVALUATION_FILES)]
    if not present:
        example = next(iter(folders.values()), None)
        raise ValueError(f"no policy evaluations in the {len(folders)} policy folders (such as "
                         f"{example}); materialize policy_evaluations first")  # fmt: skip
    tables = [
        pl.concat([pl.read_parquet(folders[k] / name) for k in present], how="diagonal_relaxed")
        for name in EVALUATION_FILES
    ]
    return PolicyEvaluation(*tables), [k for k in folders if k not in present]


@dataclass(frozen=True)
class ProtocolConformance:
    """Whether a partition's rows follow the protocol (see `protocol_conformance`)."""

    rows_off_alpha: int
    common_seeds: bool
    on_grid: bool
    held_out_seeds_disjoint_and_complete: bool

    @property
    def holds(self) -> bool:
        """True when every condition holds."""
        return (self.rows_off_alpha == 0 and self.common_seeds and self.on_grid
                and self.held_out_seeds_disjoint_and_complete)  # fmt: skip


def protocol_conformance(
    nominal: pl.DataFrame, stress: pl.DataFrame, cfg: EvaluationConfig
) -> ProtocolConformance:
    """Every nominal step ran at its grid α, on the grid, with the selection seeds; every stress
    α0 has exactly the selection seeds and the held-out test seeds, which are disjoint."""
    off_alpha = nominal.filter(pl.col("alpha_executed") != pl.col("alpha")).height
    seeds = nominal.group_by("alpha").agg(pl.col("seed").unique().sort())
    common = all(s == list(cfg.selection_seeds) for s in seeds["seed"].to_list())
    on_grid = sorted(seeds["alpha"].to_list()) == sorted(float(a) for a in cfg.alphas)
    split_seeds = stress.group_by("alpha0", "split").agg(pl.col("seed").unique().sort())
    expected = {SELECTION_SPLIT: list(cfg.selection_seeds), TEST_SPLIT: list(cfg.test_seeds)}
    held_out = split_seeds.height == 2 * len(cfg.alphas) and all(
        seeds == expected[split] for split, seeds in split_seeds.select("split", "seed").rows()
    )
    return ProtocolConformance(off_alpha, common, on_grid, held_out)
