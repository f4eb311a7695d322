"""Stress rows → one value per (policy, episode seed): the gate's unit of inference (DESIGN §8).

Stress rows exist per (policy, split, α0, episode seed, training seed). Training seeds are
replicates of one policy and α0 cells reuse the episode seed's common random numbers, so neither
is an independent unit: both are averaged within the seed before anything is paired. Pairing is
then one-to-one on the seed (a many-to-many join on seed alone turned 8 seeds into 200 "pairs").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.constants import STRESS_SPLITS
from phantom_assets.policies import baseline_twin

__all__ = ["SeedValues", "paired_differences", "per_seed", "rank_candidates"]


@dataclass(frozen=True)
class SeedValues:
    """One split's per-seed values: `by_policy[key] = (seeds, values)`, seeds sorted."""

    split: str
    by_policy: dict[str, tuple[np.ndarray, np.ndarray]]


def per_seed(stress: pl.DataFrame, metric: str) -> dict[str, SeedValues]:
    """Per split, `metric` averaged over training seeds, then over α0 cells, per (policy, seed).

    Raises:
        ValueError: for missing columns, no rows, or a split outside `STRESS_SPLITS`.
    """
    missing = {"policy", "split", "seed", "alpha0", metric} - set(stress.columns)
    if missing:
        raise ValueError(f"stress rows lack columns {sorted(missing)}")
    if stress.is_empty():
        raise ValueError("no stress rows: materialize policy_evaluations first")
    unknown = set(stress["split"].unique().to_list()) - set(STRESS_SPLITS)
    if unknown:
        raise ValueError(f"unknown stress splits {sorted(unknown)}; expected {STRESS_SPLITS}")
    # numpy reductions over sorted rows: polars' parallel group_by may sum in a varying order,
    # and the gate must give bit-identical numbers for the same table.
    rows = stress.select("split", "policy", "seed", "alpha0", metric).sort(
        "split", "policy", "seed", "alpha0"
    )
    cell_start = _run_starts(rows.select("split", "policy", "seed", "alpha0"))
    cells = np.add.reduceat(rows[metric].to_numpy(), cell_start) / np.diff(
        np.r_[cell_start, rows.height]
    )
    cell_rows = rows[cell_start]
    seed_start = _run_starts(cell_rows.select("split", "policy", "seed"))
    value = np.add.reduceat(cells, seed_start) / np.diff(np.r_[seed_start, cells.size])
    seed_rows = cell_rows[seed_start]
    out = {split: SeedValues(split, {}) for split in STRESS_SPLITS}
    seeds = seed_rows["seed"].to_numpy()
    group_start = _run_starts(seed_rows.select("split", "policy"))
    stops = np.r_[group_start[1:], seed_rows.height]
    for start, stop in zip(group_start, stops, strict=True):  # one iteration per policy
        split, policy = seed_rows["split"][int(start)], seed_rows["policy"][int(start)]
        out[split].by_policy[policy] = (seeds[start:stop], value[start:stop])
    return out


def _run_starts(keys: pl.DataFrame) -> np.ndarray:
    """Row indices where a run of equal key rows starts (rows already sorted by the keys)."""
    changed = np.zeros(keys.height, dtype=bool)
    changed[0] = True
    for name in keys.columns:  # a handful of key columns
        column = keys[name].to_numpy()
        changed[1:] |= column[1:] != column[:-1]
    return np.flatnonzero(changed)


def paired_differences(values: SeedValues, candidate: str, reference: str) -> np.ndarray:
    """candidate − reference per episode seed of the split (one value per seed, by seed).

    Raises:
        ValueError: if either policy has no rows, or their seed sets differ (the protocol gives
            every policy the same seeds; a mismatch means broken or partial evaluations).
    """
    absent = [k for k in (candidate, reference) if k not in values.by_policy]
    if absent:
        raise ValueError(f"no {values.split} stress rows for {absent}")
    (seeds_c, value_c), (seeds_r, value_r) = (values.by_policy[k] for k in (candidate, reference))
    if not np.array_equal(seeds_c, seeds_r):
        raise ValueError(
            f"{candidate} and {reference} were stress-tested on different {values.split} seeds: "
            f"{seeds_c.tolist()} vs {seeds_r.tolist()}"
        )
    return value_c - value_r


def rank_candidates(selection: SeedValues, static: str) -> pl.DataFrame:
    """Robust policies with a baseline twin, ranked on the selection seeds by the quantity the
    gate tests: `score` = min(mean advantage over the twin, mean advantage over `static`).

    Returns:
        `policy, twin, score`, best first (ties by policy key, so the order is deterministic).

    Raises:
        ValueError: if `static` has no rows or no robust policy has a twin.
    """
    means = {key: float(v.mean()) for key, (_, v) in selection.by_policy.items()}
    if static not in means:
        raise ValueError(f"the static engine {static!r} has no {selection.split} stress rows")
    rows = []
    for key in sorted(means):  # one iteration per policy
        twin = baseline_twin(key)
        if twin is not None and twin in means:
            score = min(means[key] - means[twin], means[key] - means[static])
            rows.append({"policy": key, "twin": twin, "score": score})
    if not rows:
        raise ValueError(f"no robust policy with a baseline twin among {sorted(means)}")
    return pl.DataFrame(rows).sort(["score", "policy"], descending=[True, False])
