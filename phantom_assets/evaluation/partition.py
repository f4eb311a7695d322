"""The protocol applied to one policy partition (every training seed), its files and its check.

A partition's evaluation is three tables, stored as `EVALUATION_FILES` in its folder: nominal rows
at every (α, K) of the grid with both detectors, stress rows (the band around every grid α × the
evasion shares of the declared band, at the spec's nominal K, selection and held-out test seeds)
and the per-step action traces of the fitted-detector nominal episodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import polars as pl

from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.evaluation.protocol import (
    EpisodeRunner,
    action_traces,
    nominal_rows,
    stress_rows,
)
from phantom_assets.lake import EVALUATION_FILES
from phantom_assets.market import DETECTOR_MODES
from phantom_assets.market.response import stress_alphas
from phantom_assets.policies import settings_identity
from phantom_assets.storage import write_parquet_atomic

if TYPE_CHECKING:
    from phantom_assets.config import AgentsConfig, EvaluationConfig
    from phantom_assets.market import MarketSpec
    from phantom_assets.policies import Policy


class PolicyEvaluation(NamedTuple):
    """The protocol's tables of one or more policies (in `EVALUATION_FILES` order)."""

    nominal: pl.DataFrame
    stress: pl.DataFrame
    traces: pl.DataFrame


def evaluate_policies(
    policies: Mapping[int, Policy],
    spec: MarketSpec,
    cfg: EvaluationConfig,
    agents: AgentsConfig,
    labels: dict[str, Any],
    reference_action: int | None = None,
) -> PolicyEvaluation:
    """Nominal, stress and trace rows of the policies of one partition (by training seed) on the
    (α, K) grid and stress band of `agents` (× the spec's `evasion_band_thetas`), each row led
    by `labels` and its `train_seed`; human harm against `reference_action` (the best undefended
    response).

    Training seeds whose heuristic policies are the same (`settings_identity`: static,
    tuned-static and surge do not depend on the seed) are evaluated once and share its rows."""
    seeds, tests, thetas = cfg.selection_seeds, cfg.test_seeds, spec.evasion_band_thetas
    shared: dict[str | int, PolicyEvaluation] = {}
    tables: list[PolicyEvaluation] = []
    for train_seed, policy in sorted(policies.items()):  # a handful of training seeds
        identity = settings_identity(policy) or train_seed
        if identity not in shared:
            runner = EpisodeRunner(policy, spec, reference_action=reference_action)
            shared[identity] = PolicyEvaluation(
                nominal_rows(runner, agents.alpha_grid, agents.k_grid, seeds),
                pl.concat(
                    stress_rows(
                        runner, a0, agents.stress_radius, agents.nominal_k, seeds, tests, thetas
                    )
                    for a0 in agents.alpha_grid
                ),
                action_traces(runner, agents.alpha_grid, agents.k_grid, seeds),
            )
        tag = [pl.lit(v).alias(k) for k, v in {**labels, "train_seed": train_seed}.items()]
        tables.append(PolicyEvaluation(*(t.select(*tag, pl.all()) for t in shared[identity])))
    return PolicyEvaluation(*(pl.concat(parts) for parts in zip(*tables, strict=True)))


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
        raise ValueError(
            f"no policy evaluations in the {len(folders)} policy folders (such as "
            f"{example}); materialize policy_evaluations first"
        )
    tables = [
        pl.concat([pl.read_parquet(folders[k] / name) for k in present], how="diagonal_relaxed")
        for name in EVALUATION_FILES
    ]
    return PolicyEvaluation(*tables), [k for k in folders if k not in present]


@dataclass(frozen=True)
class ProtocolConformance:
    """Whether a partition's rows follow the protocol (see `protocol_conformance`)."""

    on_grid: bool
    common_seeds: bool
    stress_at_nominal_k: bool
    held_out_seeds_disjoint_and_complete: bool

    @property
    def holds(self) -> bool:
        """True when every condition holds."""
        return (
            self.on_grid
            and self.common_seeds
            and self.stress_at_nominal_k
            and self.held_out_seeds_disjoint_and_complete
        )


def _seed_sets(frame: pl.DataFrame, cells: list[str]) -> pl.DataFrame:
    """Per cell: its sorted seeds and whether each occurs once."""
    return frame.group_by(cells).agg(
        seeds=pl.col("seed").unique().sort(), once=pl.col("seed").n_unique() == pl.len()
    )


def protocol_conformance(
    nominal: pl.DataFrame,
    stress: pl.DataFrame,
    cfg: EvaluationConfig,
    agents: AgentsConfig,
    nominal_k: int,
    thetas: tuple[float, ...] = (0.0,),
) -> ProtocolConformance:
    """Every training seed has a cell for each (α, K, detector) of the grid and nothing else;
    each cell holds every selection seed exactly once (both detectors share them); stress rows run
    at the spec's nominal K with, per α0, band α, evasion share θ of `thetas` and detector,
    exactly the selection seeds and the held-out test seeds, which are disjoint."""
    cells = _seed_sets(nominal, ["train_seed", "alpha", "k", "detector"])
    grid = {
        (float(a), int(k), d)
        for a in agents.alpha_grid
        for k in agents.k_grid
        for d in DETECTOR_MODES
    }
    by_train = cells.partition_by("train_seed")
    on_grid = all(set(part.select("alpha", "k", "detector").rows()) == grid for part in by_train)
    selection = list(cfg.selection_seeds)
    common = cells["once"].all() and all(s == selection for s in cells["seeds"].to_list())
    splits = _seed_sets(stress, ["train_seed", "alpha0", "alpha", "theta", "detector", "split"])
    expected = {SELECTION_SPLIT: selection, TEST_SPLIT: list(cfg.test_seeds)}
    band_cells = sum(stress_alphas(a0, agents.stress_radius).size for a0 in agents.alpha_grid)
    held_out = (
        splits.height == 2 * len(DETECTOR_MODES) * band_cells * len(thetas) * len(by_train)
        and set(splits["alpha0"]) == {float(a) for a in agents.alpha_grid}
        and set(splits["theta"]) == {float(t) for t in thetas}
        and splits["once"].all()
        and all(expected[split] == seeds for split, seeds in splits.select("split", "seeds").rows())
        and not set(expected[SELECTION_SPLIT]) & set(expected[TEST_SPLIT])
    )
    at_k = stress.height > 0 and bool((stress["k"] == nominal_k).all())
    return ProtocolConformance(on_grid, bool(common), at_k, held_out)
