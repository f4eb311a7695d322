"""Where `phantom run`'s tasks execute: in this process, or in worker processes.

A worker process builds the definitions once from the settings it is handed, opens the same
instance, and then runs one task (a run of a stage's job for one partition key, of the selected
assets) per request. Its stdout and stderr (dbt's log, SB3's tables, warnings) go to the run log
file unless `verbose`; the terminal keeps the progress lines.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import dagster as dg

# Step events stay in the run's event log (and the UI); the terminal gets progress lines.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass(frozen=True)
class TaskRequest:
    """One run to execute: which job, which of its assets, which partition, with which tags and
    run config."""

    task_id: int
    job: str
    asset_keys: tuple[str, ...]  # user strings, so the request pickles plainly
    partition: str | None
    tags: dict[str, str]
    run_config: dict[str, Any]


@dataclass(frozen=True)
class TaskResult:
    task_id: int
    success: bool
    run_id: str | None
    seconds: float
    error: str | None = None


def execute(defs: dg.Definitions, instance: dg.DagsterInstance, request: TaskRequest) -> TaskResult:
    """Materialize the request's assets for its partition as one run of its job in `instance`
    (the UI lists it under that job)."""
    started = time.perf_counter()
    result = defs.resolve_job_def(request.job).execute_in_process(
        run_config={**QUIET_CONSOLE, **request.run_config},
        instance=instance,
        partition_key=request.partition,
        raise_on_error=False,
        asset_selection=[dg.AssetKey.from_user_string(k) for k in request.asset_keys],
        tags={**request.tags, "phantom/pid": str(os.getpid())},
    )
    return TaskResult(request.task_id, result.success, result.run_id, time.perf_counter() - started)


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker process needs to rebuild the graph and reach the instance."""

    settings: dict[str, Any]
    resources: dict[str, object]
    instance_ref: Any  # dagster InstanceRef (serdes NamedTuple; pickles)
    log_path: str | None  # None: inherit the terminal (`--verbose`)


def _worker_main(setup: WorkerSetup, conn: Connection) -> None:
    """Body of a worker process: build once, then execute requests until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C for everyone
    if setup.log_path:
        log = os.open(setup.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
    from orchestration.definitions import build_definitions
    from phantom_assets.config import settings_from_dict

    defs = build_definitions(settings_from_dict(setup.settings), resources=setup.resources)
    with dg.DagsterInstance.from_ref(setup.instance_ref) as instance:
        conn.send("ready")
        while (request := conn.recv()) is not None:
            try:
                conn.send(execute(defs, instance, request))
            except Exception as error:  # reported as a failed task, the worker lives on
                conn.send(TaskResult(request.task_id, False, None, 0.0, repr(error)))
            sys.stdout.flush()


class ProcessWorkers:
    """A fixed pool of worker processes, each running one task at a time."""

    def __init__(self, n: int, setup: WorkerSetup) -> None:
        context = multiprocessing.get_context("spawn")  # no forked Dagster/torch state
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        for _ in range(n):
            parent, child = context.Pipe()
            proc = context.Process(target=_worker_main, args=(setup, child), daemon=True)
            proc.start()
            self._procs.append(proc)
            self._conns.append(parent)
        self._busy: dict[int, int] = {}  # worker index -> task id
        self._ready: set[int] = set()

    @property
    def free(self) -> int:
        """Workers that are up and idle."""
        return len(self._ready) - len(self._busy)

    def submit(self, request: TaskRequest) -> None:
        index = next(i for i in sorted(self._ready) if i not in self._busy)
        self._busy[index] = request.task_id
        self._conns[index].send(request)

    def poll(self, timeout: float) -> list[TaskResult]:
        """Results that arrived within `timeout` seconds (sleeps while waiting)."""
        results = []
        for conn in wait(self._conns, timeout=timeout):
            index = self._conns.index(conn)
            try:
                message = conn.recv()
            except EOFError:
                raise RuntimeError(f"worker process {self._procs[index].pid} died") from None
            if message == "ready":
                self._ready.add(index)
            else:
                del self._busy[index]
                results.append(message)
        return results

    def close(self, kill: bool = False) -> None:
        for conn, proc in zip(self._conns, self._procs, strict=True):
            if kill:
                proc.kill()
            else:
                conn.send(None)
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


class InProcessWorker:
    """Runs each task synchronously in this process (tests, embedding)."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
        self._defs, self._instance = defs, instance
        self._done: list[TaskResult] = []

    @property
    def free(self) -> int:
        return 0 if self._done else 1

    def submit(self, request: TaskRequest) -> None:
        self._done.append(execute(self._defs, self._instance, request))

    def poll(self, timeout: float) -> list[TaskResult]:
        done, self._done = self._done, []
        if not done:
            time.sleep(timeout)  # e.g. a pool slot held by another process: wait, don't spin
        return done

    def close(self, kill: bool = False) -> None:
        pass


def run_log_path(data_dir: Path, session: str) -> Path:
    """Where a `phantom run`'s worker output goes: `<data>/logs/run-<time>-<session>.log`."""
    folder = data_dir / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"run-{time.strftime('%Y%m%d-%H%M%S')}-{session[:8]}.log"


def as_requests(keys: Sequence[dg.AssetKey]) -> tuple[str, ...]:
    return tuple(k.to_user_string() for k in keys)
