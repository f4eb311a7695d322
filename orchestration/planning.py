"""What `phantom run` executes: stages of the graph, one task per partition, and the tasks each
waits for.

A *stage* is a maximal run of topologically ordered assets sharing one partitions definition,
planned once over the whole graph: each stage is one job of the code location (`jobs.py`), and a
selection runs the selected part of each stage. A *task* is one stage for one partition key (one
Dagster run of the stage's job). A task waits for the tasks of every upstream stage in the same
store (or all of them when either side spans the stores).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from phantom_assets.assets.partitions import is_batch_partitioned
from phantom_assets.constants import STORES

# Publishing is a decision: `phantom publish` (or an explicit selection) runs it, `phantom run` not.
MANUAL_GROUPS = ("publish",)


@dataclass(frozen=True)
class Stage:
    """Assets materialized together, once per key of their shared partitions definition, as
    runs of the job `job` (named after the assets' groups; `graph_stages`)."""

    keys: tuple[dg.AssetKey, ...]
    partitions_def: dg.PartitionsDefinition | None
    job: str = ""

    @property
    def label(self) -> str:
        return ", ".join(k.to_user_string() for k in self.keys)


@dataclass(frozen=True)
class Task:
    """One run: a stage's assets for one partition key."""

    stage: int
    partition: str | None
    store: str | None  # the store the partition belongs to (None: every store, e.g. the warehouse)
    pools: frozenset[str]
    # One batch failing to ingest (an unreadable file) must not hold back the others: its
    # downstream runs on the batches that loaded, and the failure is reported.
    blocks_downstream: bool = True


class MissingUpstreamError(RuntimeError):
    """The selection reads assets that were never materialized and are not selected."""


class SelectionError(ValueError):
    """A `--select` string that names no asset or does not parse (one line, with a suggestion)."""


# Words of Dagster's selection syntax that are not asset names.
_SELECTION_WORDS = frozenset(
    {
        "key",
        "group",
        "tag",
        "kind",
        "owner",
        "code_location",
        "status",
        "column",
        "table_name",
        "changed_in_branch",
        "and",
        "or",
        "not",
        "sinks",
        "roots",
    }
)


def selection_error(selection: str, graph, error: Exception | None = None) -> SelectionError:
    """One line for a bad selection: its unknown names with the closest asset or group names."""
    keys = graph.get_all_asset_keys()
    names = {k.to_user_string() for k in keys} | {graph.get(k).group_name for k in keys}
    words = dict.fromkeys(re.findall(r"[A-Za-z_][\w/]*", selection))
    hints = [
        f"{w!r} (did you mean {' or '.join(repr(m) for m in matches)}?)"
        if (matches := difflib.get_close_matches(w, sorted(names), n=2))
        else repr(w)
        for w in words
        if w not in names | _SELECTION_WORDS
    ]
    if hints:
        what = f"no asset or group named {', '.join(hints)}"
    elif error is not None:  # a syntax error: Dagster's first line says where
        what = (
            f"{str(error).splitlines()[0]} (syntax: `*x` = x and its upstream, `x+` = x and its "
            "children, `group:ingest`, `key:a or key:b`)"
        )
    else:
        what = "selects no asset"
    return SelectionError(f"--select {selection!r}: {what}")


def checked_stores(names: Iterable[str]) -> frozenset[str]:
    """The stores of `--store` (each name may be a comma list); `SelectionError` naming an unknown
    one, with the closest store and every store."""
    stores = {name.strip() for text in names for name in text.split(",") if name.strip()}
    unknown = sorted(stores - set(STORES))
    if unknown:
        close = difflib.get_close_matches(unknown[0], STORES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise SelectionError(f"no store {unknown[0]!r} ({hint}stores: {', '.join(STORES)})")
    if not stores:
        raise SelectionError(f"no store named (stores: {', '.join(STORES)})")
    return frozenset(stores)


def _selected_keys(defs: dg.Definitions, selection: str | None) -> set[dg.AssetKey]:
    graph = defs.resolve_asset_graph()
    if selection:
        try:
            # Multi-assets that cannot be subset (raw_events + its quarantine) come along whole.
            chosen = dg.AssetSelection.from_string(selection).required_multi_asset_neighbors()
            keys = chosen.resolve(graph)
        except dg.DagsterError as error:  # unknown key (DagsterInvalidSubsetError) or bad syntax
            raise selection_error(selection, graph, error) from error
        if not keys:  # an unknown group or kind resolves to nothing
            raise selection_error(selection, graph)
        return keys
    return {
        k for k in graph.materializable_asset_keys if graph.get(k).group_name not in MANUAL_GROUPS
    }


def _dimensions(partitions_def: dg.PartitionsDefinition | None) -> list[str]:
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return [d.name for d in partitions_def.partitions_defs]
    if partitions_def is None:
        return []
    return [getattr(partitions_def, "name", None) or "store"]


def _named(stages: list[Stage], graph: Any) -> list[Stage]:
    """Each stage with a unique job name: its assets' groups in graph order, then (on a clash)
    its partition dimensions (`warehouse_job`, `warehouse_by_store_job`)."""
    named: list[Stage] = []
    for stage in stages:
        name = "_".join(dict.fromkeys(graph.get(k).group_name or "default" for k in stage.keys))
        if any(s.job == f"{name}_job" for s in named):
            name = f"{name}_by_{'_'.join(_dimensions(stage.partitions_def))}"
        named.append(Stage(stage.keys, stage.partitions_def, f"{name}_job"))
    return named


def graph_stages(defs: dg.Definitions) -> list[Stage]:
    """Group every materializable asset into as few dependency-ordered stages as possible.

    Each asset joins the earliest stage with its partitions definition that comes after every
    stage holding one of its parents (a parent in a stage of the same partitioning may share it:
    one run per partition key executes both in order).
    """
    graph = defs.resolve_asset_graph()
    stages: list[Stage] = []
    stage_of: dict[dg.AssetKey, int] = {}
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        earliest = max(
            (
                stage_of[parent] + (stages[stage_of[parent]].partitions_def != node.partitions_def)
                for parent in node.parent_keys
                if parent in stage_of
            ),
            default=0,
        )
        index = next(
            (
                i
                for i in range(earliest, len(stages))
                if stages[i].partitions_def == node.partitions_def
            ),
            len(stages),
        )
        if index == len(stages):
            stages.append(Stage((), node.partitions_def))
        stages[index] = Stage((*stages[index].keys, key), node.partitions_def)
        stage_of[key] = index
    return _named(stages, graph)


def plan_stages(defs: dg.Definitions, selection: str | None = None) -> list[Stage]:
    """The selected part of every stage of the graph (`graph_stages`), empty stages left out
    (default selection: everything but the manual groups)."""
    selected = _selected_keys(defs, selection)
    parts = [
        Stage(tuple(k for k in s.keys if k in selected), s.partitions_def, s.job)
        for s in graph_stages(defs)
    ]
    return [stage for stage in parts if stage.keys]


def missing_upstream(
    defs: dg.Definitions, instance: dg.DagsterInstance, selection: str | None
) -> list[dg.AssetKey]:
    """Unselected materializable parents of the selection that have never been materialized."""
    graph = defs.resolve_asset_graph()
    selected = _selected_keys(defs, selection)
    parents = {
        parent
        for key in selected
        for parent in graph.get(key).parent_keys
        if parent not in selected and graph.get(parent).is_materializable
    }
    return sorted(
        (p for p in parents if instance.get_latest_materialization_event(p) is None),
        key=lambda k: k.to_user_string(),
    )


def _store_of(partitions_def: dg.PartitionsDefinition | None, key: str | None) -> str | None:
    """The store a partition belongs to (None: not store-scoped)."""
    if key is None or partitions_def is None or is_batch_partitioned(partitions_def):
        return None
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return partitions_def.get_partition_key_from_str(key).keys_by_dimension.get("store")
    return key


def plan_tasks(
    defs: dg.Definitions,
    stages: Sequence[Stage],
    instance: dg.DagsterInstance,
    stores: Collection[str] | None = None,
) -> tuple[list[Task], dict[int, set[int]]]:
    """One task per (stage, partition key) and, per task, the tasks it waits for: those of every
    upstream stage in the same store (or all of them when either side spans the stores).

    `stores` (`checked_stores`) keeps only the partitions of those stores; partitions that span
    the stores (batches, unpartitioned assets) are kept."""
    graph = defs.resolve_asset_graph()
    tasks: list[Task] = []
    for index, stage in enumerate(stages):
        keys = (
            [None]
            if stage.partitions_def is None
            else stage.partitions_def.get_partition_keys(dynamic_partitions_store=instance)
        )
        pools = frozenset(p for k in stage.keys for p in (graph.get(k).pools or ()))
        blocks = not is_batch_partitioned(stage.partitions_def)
        tasks.extend(
            Task(index, key, store, pools, blocks)
            for key in keys
            if (store := _store_of(stage.partitions_def, key)) is None
            or stores is None
            or store in stores
        )
    stage_of = {key: i for i, stage in enumerate(stages) for key in stage.keys}
    upstream: dict[int, set[int]] = {}
    for index, stage in enumerate(stages):
        up: set[int] = set()
        frontier = [p for k in stage.keys for p in graph.get(k).parent_keys]
        seen: set[dg.AssetKey] = set()
        while frontier:
            parent = frontier.pop()
            if parent in seen:
                continue
            seen.add(parent)
            if parent in stage_of and stage_of[parent] != index:
                up.add(stage_of[parent])
            frontier.extend(graph.get(parent).parent_keys)
        upstream[index] = up
    waits: dict[int, set[int]] = {}
    for i, task in enumerate(tasks):
        waits[i] = {
            j
            for j, other in enumerate(tasks)
            if other.stage in upstream[task.stage]
            and (task.store is None or other.store is None or task.store == other.store)
        }
    return tasks, waits
