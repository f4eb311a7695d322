"""The main job behind `phantom run`: register batches, then materialize the graph stage by stage.

A *stage* is a maximal run of topologically ordered assets sharing one partitions definition; it
is executed once per partition key (in process, against the persistent instance in DAGSTER_HOME,
so every run shows up in the UI's history with its logs and lineage).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import dagster as dg

from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.batches import BatchRegistry, candidate_files
from phantom_assets.config import Settings
from phantom_assets.storage import remove_stale_temp_files

# Publishing is a decision: `phantom publish` (or an explicit selection) runs it, `phantom run` not.
MANUAL_GROUPS = ("publish",)
# Step events stay in the run's event log (and the UI); the terminal gets one line per run.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass(frozen=True)
class Stage:
    """Assets materialized together, once per key of their shared partitions definition."""

    keys: tuple[dg.AssetKey, ...]
    partitions_def: dg.PartitionsDefinition | None

    @property
    def label(self) -> str:
        return ", ".join(k.to_user_string() for k in self.keys)


@dataclass
class RunOutcome:
    """What happened to each (stage, partition) run."""

    stage: str
    partition: str | None
    success: bool
    seconds: float
    run_id: str


@dataclass
class PipelineReport:
    registered: list[str] = field(default_factory=list)
    new_batches: list[str] = field(default_factory=list)
    outcomes: list[RunOutcome] = field(default_factory=list)

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if not o.success]


def register_batches(
    settings: Settings, instance: dg.DagsterInstance
) -> tuple[list[str], list[str]]:
    """Register every data file in the drop zone; add new keys to the `batch` partitions."""
    registry = BatchRegistry(settings.lake_dir)
    keys, new = [], []
    for path in candidate_files(settings.incoming_dir):
        record, is_new = registry.register(path)
        keys.append(record.key)
        if is_new:
            new.append(record.key)
    existing = set(instance.get_dynamic_partitions(BATCH_PARTITIONS_NAME))
    missing = sorted(set(keys) - existing)
    if missing:
        instance.add_dynamic_partitions(BATCH_PARTITIONS_NAME, missing)
    return sorted(set(keys)), new


def plan_stages(defs: dg.Definitions, selection: str | None = None) -> list[Stage]:
    """Group the selected materializable assets into as few dependency-ordered stages as possible.

    Each asset joins the earliest stage with its partitions definition that comes after every
    stage holding one of its parents (a parent in a stage of the same partitioning may share it:
    one run per partition key executes both in order).
    """
    graph = defs.resolve_asset_graph()
    selected = (
        # Multi-assets that cannot be subset (raw_events + its quarantine) come along whole.
        dg.AssetSelection.from_string(selection).required_multi_asset_neighbors().resolve(graph)
        if selection
        else {
            k
            for k in graph.materializable_asset_keys
            if graph.get(k).group_name not in MANUAL_GROUPS
        }
    )
    stages: list[Stage] = []
    stage_of: dict[dg.AssetKey, int] = {}
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if key not in selected or not node.is_materializable:
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
            (i for i in range(earliest, len(stages))
             if stages[i].partitions_def == node.partitions_def),
            len(stages),
        )  # fmt: skip
        if index == len(stages):
            stages.append(Stage((), node.partitions_def))
        stages[index] = Stage((*stages[index].keys, key), node.partitions_def)
        stage_of[key] = index
    return stages


def _partition_keys(stage: Stage, instance: dg.DagsterInstance) -> Sequence[str | None]:
    if stage.partitions_def is None:
        return [None]
    return stage.partitions_def.get_partition_keys(dynamic_partitions_store=instance)


def run_pipeline(
    defs: dg.Definitions,
    settings: Settings,
    instance: dg.DagsterInstance,
    resources: dict[str, object],
    selection: str | None = None,
    echo: Callable[[str], None] = lambda _: None,
    run_config: dict | None = None,
) -> PipelineReport:
    """Register batches, then materialize every stage for every partition key, in order.

    A failed partition is reported and the pipeline carries on with the others (one unreadable
    file must not block every other batch); the caller turns failures into a non-zero exit.
    """
    report = PipelineReport()
    for leftover in remove_stale_temp_files(settings.data_dir):  # a killed writer's temp files
        echo(f"removed partial write {leftover}")
    report.registered, report.new_batches = register_batches(settings, instance)
    echo(f"batches: {len(report.registered)} registered ({len(report.new_batches)} new)")
    assets = list(defs.assets or [])
    for stage in plan_stages(defs, selection):
        keys = _partition_keys(stage, instance)
        echo(f"stage [{stage.label}] × {len(keys)} partition(s)")
        for partition in keys:
            started = time.perf_counter()
            result = dg.materialize(
                assets,
                selection=list(stage.keys),
                partition_key=partition,
                instance=instance,
                resources=resources,
                raise_on_error=False,
                tags={"phantom/launched_by": "phantom run"},
                run_config={**QUIET_CONSOLE, **(run_config or {})},
            )
            outcome = RunOutcome(
                stage.label, partition, result.success, time.perf_counter() - started, result.run_id
            )
            report.outcomes.append(outcome)
            status = "ok" if outcome.success else "FAILED"
            echo(f"  {partition or '(unpartitioned)'}: {status} in {outcome.seconds:.1f}s")
    return report
