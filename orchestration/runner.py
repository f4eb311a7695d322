"""`phantom run`: register batches, then materialize the graph as Dagster runs on parallel workers.

The graph is cut into *stages* (topologically ordered assets sharing one partitions definition;
each is a job of the code location) and each stage into one *task* per partition key; a task is
one Dagster run (the stage's job, executed in process for that key against the persistent
instance, so it is in the UI's history under that job with its logs and lineage, tagged
`phantom/stage` with the stage's assets as the progress line names them). Tasks are
dispatched to `workers` processes as soon as the tasks they depend on have succeeded (the same
store's tasks of every upstream stage): two cores train two policies, or build one store's
market while the other store scores. Each worker builds the
definitions once, so a run pays no process start-up (a daemon backfill would pay ~5 s per run
and wait for 30 s daemon ticks between levels of the graph).

A failed task (a step error or a failed blocking check) skips every task downstream of it in
the same store; those are reported as skipped. Runs of a killed `phantom run` are found at the
next start (their worker process is gone), marked failed and their pool slots freed.
"""

from __future__ import annotations

import enum
import signal
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from orchestration.freshness import Freshness
from orchestration.jobs import with_stage_jobs
from orchestration.planning import (
    MissingUpstreamError,
    Stage,
    Task,
    checked_stores,
    missing_upstream,
    plan_stages,
    plan_tasks,
)
from orchestration.progress import Progress
from orchestration.recovery import (
    ACTIVE_STATUSES,
    SESSION_TAG,
    end_runs,
    foreign_holders,
    recover_dead_runs,
    run_tags,
)
from orchestration.workers import (
    InProcessWorker,
    ProcessWorkers,
    TaskRequest,
    TaskResult,
    WorkerSetup,
    as_requests,
    run_log_path,
)
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.batches import BatchRegistry, candidate_files, is_demo_file
from phantom_assets.config import Settings
from phantom_assets.storage import remove_stale_temp_files

LAUNCHED_BY_TAG = "phantom/launched_by"
STAGE_TAG = "phantom/stage"  # the stage's assets, as its progress line names them
POLL_S = 1.0  # how often a waiting runner looks again (sleeping in between, not spinning)


class Status(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"
    FRESH = "fresh"  # up to date: nothing to do, not run (`orchestration.freshness`)


@dataclass
class RunOutcome:
    """What happened to one (stage, partition) run."""

    stage: str
    partition: str | None
    status: Status
    seconds: float
    run_id: str | None
    reason: str | None = None  # why a skipped run did not run (the upstream run that failed)
    assets: tuple[str, ...] = ()  # the stage's assets (what the run would materialize)

    @property
    def success(self) -> bool:
        return self.status is Status.OK


@dataclass
class PipelineReport:
    registered: list[str] = field(default_factory=list)
    new_batches: list[str] = field(default_factory=list)
    outcomes: list[RunOutcome] = field(default_factory=list)
    log_path: Path | None = None

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status is Status.FAILED]

    @property
    def skipped(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status is Status.SKIPPED]

    @property
    def up_to_date(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status is Status.FRESH]


def register_batches(
    settings: Settings, instance: dg.DagsterInstance
) -> tuple[list[str], list[str]]:
    """Register every data file in the drop zone; add new keys to the `batch` partitions."""
    registry = BatchRegistry(settings.lake_dir)
    keys, new = [], []
    now, incoming = datetime.now(UTC), settings.incoming_dir
    for path in candidate_files(incoming):
        demo = is_demo_file(path, incoming)
        record, is_new = registry.register(path, demo=demo, registered_at=now)
        keys.append(record.key)
        if is_new:
            new.append(record.key)
    existing = set(instance.get_dynamic_partitions(BATCH_PARTITIONS_NAME))
    missing = sorted(set(keys) - existing)
    if missing:
        instance.add_dynamic_partitions(BATCH_PARTITIONS_NAME, missing)
    return sorted(set(keys)), new


class Interrupted(Exception):
    """SIGTERM or SIGINT arrived while `phantom run` was running."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


@dataclass
class _Scheduler:
    """Dispatches ready tasks to free workers; a failure skips everything that waits on it."""

    defs: dg.Definitions
    instance: dg.DagsterInstance
    stages: list[Stage]
    tasks: list[Task]
    waits: dict[int, set[int]]
    progress: Progress
    tags: dict[str, str]
    run_config: dict[str, Any]
    echo: Callable[[str], None]
    freshness: Freshness | None  # None: --force, every task runs
    status: dict[int, Status] = field(default_factory=dict)
    outcomes: dict[int, RunOutcome] = field(default_factory=dict)
    running: dict[int, Task] = field(default_factory=dict)
    _waiting_note: set[str] = field(default_factory=set)

    def _resolve(
        self,
        task_id: int,
        status: Status,
        seconds: float,
        run_id: str | None,
        reason: str | None = None,
    ) -> None:
        task = self.tasks[task_id]
        stage = self.stages[task.stage]
        self.status[task_id] = status
        self.outcomes[task_id] = RunOutcome(
            stage.label,
            task.partition,
            status,
            seconds,
            run_id,
            reason,
            tuple(k.to_user_string() for k in stage.keys),
        )
        if status is Status.FAILED:  # before the stage's line, which this may complete
            self.echo(f"FAILED {self.stages[task.stage].label} [{task.partition}] (run {run_id})")
        self.progress.finished(task.stage, status.value, seconds)

    def _skip_downstream_of_failures(self) -> None:
        changed = True
        while changed:
            changed = False
            for i in range(len(self.tasks)):
                if i in self.status or i in self.running:
                    continue
                blockers = sorted(w for w in self.waits[i] if self._blocked_by(w))
                if blockers:
                    self._resolve(i, Status.SKIPPED, 0.0, None, self._skip_reason(blockers))
                    changed = True

    def _skip_reason(self, blockers: list[int]) -> str:
        """`upstream <stage> [<partition>] failed`, naming the failed run a skip traces back to."""
        failed = [w for w in blockers if self.status[w] is Status.FAILED]
        if not failed:  # skipped because of a skip: the same root cause
            return self.outcomes[blockers[0]].reason or "an upstream run was skipped"
        first = self.outcomes[failed[0]]
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        return f"upstream {first.stage} [{first.partition}] failed{more}"

    def _blocked_by(self, task_id: int) -> bool:
        failed = self.status.get(task_id) in (Status.FAILED, Status.SKIPPED)
        return failed and self.tasks[task_id].blocks_downstream

    def _pool_free(self, task: Task) -> bool:
        # Dagster enforces pools inside a run: a step whose slot is taken waits, holding its
        # worker. Checking the same slot table before dispatch (the instance's concurrency API,
        # read-only) keeps the worker free for a task that can run, and names the holder.
        for pool in task.pools:
            limit, others = foreign_holders(self.instance, pool, self.tags[SESSION_TAG])
            mine = sum(pool in t.pools for t in self.running.values())
            if mine + len(others) >= limit:
                note = f"{pool}:{','.join(others)}"
                if others and note not in self._waiting_note:
                    self._waiting_note.add(note)
                    holders = ", ".join(self._describe(r) for r in others)
                    self.echo(f"waiting for pool {pool!r}: its slot is held by {holders}")
                return False
        return True

    def _describe(self, run_id: str) -> str:
        run = self.instance.get_run_by_id(run_id)
        if run is None:
            return f"run {run_id[:8]} (unknown)"
        pid = run.tags.get("phantom/pid", "?")
        return f"run {run_id[:8]} ({run.status.value}, pid {pid})"

    def _ready(self) -> list[int]:
        return [
            i
            for i in range(len(self.tasks))
            if i not in self.status
            and i not in self.running
            and all(w in self.status and not self._blocked_by(w) for w in self.waits[i])
        ]

    def run(self, workers: InProcessWorker | ProcessWorkers) -> None:
        while len(self.status) < len(self.tasks):
            self._skip_downstream_of_failures()
            resolved = len(self.status)
            for i in self._ready():
                task = self.tasks[i]
                stage = self.stages[task.stage]
                if self.freshness and self.freshness.up_to_date(stage.keys, task.partition):
                    self._resolve(i, Status.FRESH, 0.0, None)
                    continue
                if workers.free <= 0:
                    break
                if not self._pool_free(task):
                    continue
                self.running[i] = task
                self.progress.started(task.stage)
                tags = {**self.tags, STAGE_TAG: stage.label}
                workers.submit(
                    TaskRequest(
                        i, stage.job, as_requests(stage.keys), task.partition, tags, self.run_config
                    )
                )
            if not self.running and not self._ready() and len(self.status) < len(self.tasks):
                self._skip_downstream_of_failures()
                if not self._ready() and len(self.status) < len(self.tasks):
                    raise RuntimeError("no task can run: the task plan has a cycle")
                continue
            if len(self.status) > resolved and not self.running:
                continue  # up-to-date tasks resolved: their downstream may be ready now
            for result in workers.poll(POLL_S):
                self._finish(result)
            self.progress.heartbeat()

    def _finish(self, result: TaskResult) -> None:
        self.running.pop(result.task_id)
        if self.freshness:
            self.freshness.changed()
        if result.error:
            self.echo(f"task error: {result.error}")
        status = Status.OK if result.success else Status.FAILED
        self._resolve(result.task_id, status, result.seconds, result.run_id)


def run_pipeline(
    settings: Settings,
    instance: dg.DagsterInstance,
    selection: str | None = None,
    *,
    stores: Iterable[str] | None = None,
    echo: Callable[[str], None] = lambda _: None,
    run_config: dict | None = None,
    resources: dict[str, object] | None = None,
    workers: int = 0,
    verbose: bool = True,
    defs: dg.Definitions | None = None,
    check_upstream: bool = True,
    force: bool = False,
) -> PipelineReport:
    """Register batches, then materialize every selected stage × partition as Dagster runs.

    `workers=0` runs the tasks one by one in this process; `workers=N` in N worker processes
    (the instance must then be persistent). `stores` (names or comma lists) limits the
    store-scoped partitions to those stores. `defs` replaces the graph built from `settings`
    (in process only; the stage jobs it lacks are added). `check_upstream=False` skips the
    never-materialized-upstream check (publishing reads a lake that another instance may have
    built). A failed run skips its downstream tasks; the caller turns failures and skips into a
    non-zero exit. A task whose assets are up to date at its partition (`Freshness`) is not run
    (`Status.FRESH`) unless `force`. SIGTERM/SIGINT cancel the runs in flight and raise
    `Interrupted`.

    Raises:
        MissingUpstreamError: the selection reads an unselected asset never materialized.
        SelectionError: `stores` names an unknown store.
    """
    from orchestration.definitions import build_definitions

    if defs is not None and workers > 0:
        raise ValueError("prebuilt definitions run in process only (workers=0)")
    chosen = None if stores is None else checked_stores(stores)
    defs = with_stage_jobs(defs) if defs else build_definitions(settings, resources=resources)
    report = PipelineReport()
    recover_dead_runs(instance, echo)
    for leftover in remove_stale_temp_files(settings.data_dir):  # a killed writer's temp files
        echo(f"removed partial write {leftover}")
    report.registered, report.new_batches = register_batches(settings, instance)
    echo(f"batches: {len(report.registered)} registered ({len(report.new_batches)} new)")
    missing = missing_upstream(defs, instance, selection) if check_upstream else []
    if missing:
        names = ", ".join(k.to_user_string() for k in missing)
        raise MissingUpstreamError(
            f"the selection {selection!r} reads {names}, never materialized in this instance; "
            f"include the upstream with '*<asset>' (e.g. --select '*{selection}') or run "
            "`phantom run` without --select first"
        )
    stages = plan_stages(defs, selection)
    tasks, waits = plan_tasks(defs, stages, instance, chosen)
    totals = [sum(t.stage == i for t in tasks) for i in range(len(stages))]
    progress = Progress.of([s.label for s in stages], totals, max(workers, 1), echo)
    session = uuid.uuid4().hex
    tags = {LAUNCHED_BY_TAG: "phantom run", **run_tags(session)}
    last_drop = BatchRegistry(settings.lake_dir).last_drop()
    freshness = None if force else Freshness(defs, instance, last_drop)
    scheduler = _Scheduler(
        defs, instance, stages, tasks, waits, progress, tags, run_config or {}, echo, freshness
    )
    if workers > 0:
        report.log_path = None if verbose else run_log_path(settings.data_dir, session)
        setup = WorkerSetup(
            settings.as_dict(),
            dict(resources or {}),
            instance.get_ref(),
            None if report.log_path is None else str(report.log_path),
        )
        pool: InProcessWorker | ProcessWorkers = ProcessWorkers(workers, setup)
    else:
        pool = InProcessWorker(defs, instance)
    # Signal handlers can only be installed from the main thread (an embedding app may differ).
    signals = (
        (signal.SIGTERM, signal.SIGINT)
        if threading.current_thread() is threading.main_thread()
        else ()
    )
    handlers = {sig: signal.signal(sig, _raise_interrupted) for sig in signals}
    try:
        scheduler.run(pool)
        pool.close()
    except BaseException:
        pool.close(kill=True)
        active = instance.get_runs(
            dg.RunsFilter(tags={SESSION_TAG: session}, statuses=ACTIVE_STATUSES)
        )
        end_runs(instance, list(active), canceled=True, why="phantom run was interrupted")
        raise
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    report.outcomes = [scheduler.outcomes[i] for i in sorted(scheduler.outcomes)]
    return report
