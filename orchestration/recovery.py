"""Recovery of the instance after a killed `phantom run` (and of pool slots it still holds).

Every run `phantom run` starts carries its worker's host and pid as tags; a run still marked
active whose process is gone on this host is marked failed and its pool slots are freed, so the
next run neither waits forever on the `duckdb` slot nor blames the wrong process.

Why not Dagster's run monitoring: it lives in the daemon and asks the run launcher whether a
run's worker is healthy; `phantom run` executes its runs in process in its own workers (no
launcher, no daemon), so nothing would ever check them. The calls here are the ones run
monitoring itself makes: `report_run_failed` / `report_run_canceled` and the instance's
`free_concurrency_slots_for_run` (what `free_slots_after_run_end_seconds` does).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

import dagster as dg

SESSION_TAG, PID_TAG, HOST_TAG = "phantom/session", "phantom/pid", "phantom/host"
ACTIVE_STATUSES = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def run_tags(session: str) -> dict[str, str]:
    """Tags that let a later `phantom run` (or a signal handler) find this process's runs."""
    return {SESSION_TAG: session, PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def end_runs(
    instance: dg.DagsterInstance, runs: list[dg.DagsterRun], canceled: bool, why: str
) -> None:
    """Mark `runs` canceled (or failed) with `why` and free every pool slot they hold."""
    for run in runs:
        if canceled:
            instance.report_run_canceled(run, message=why)
        else:
            instance.report_run_failed(run, message=why)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)


def recover_dead_runs(instance: dg.DagsterInstance, echo: Callable[[str], None]) -> list[str]:
    """Fail the active runs of this host whose process is gone and free their pool slots;
    also free slots still claimed by runs that already ended. Returns the recovered run ids."""
    host = socket.gethostname()
    dead = [
        run
        for run in instance.get_runs(dg.RunsFilter(statuses=ACTIVE_STATUSES))
        if run.tags.get(HOST_TAG) == host
        and run.tags.get(PID_TAG, "").isdigit()
        and not _alive(int(run.tags[PID_TAG]))
    ]
    for run in dead:
        why = f"process {run.tags[PID_TAG]} of this run is gone (killed); marked failed"
        end_runs(instance, [run], canceled=False, why=why)
        echo(f"recovered run {run.run_id[:8]}: {why}, its pool slots freed")
    storage = instance.event_log_storage
    for pool in storage.get_concurrency_keys():
        for slot in storage.get_concurrency_info(pool).claimed_slots:
            run = instance.get_run_by_id(slot.run_id)
            if run is None or run.is_finished:
                storage.free_concurrency_slots_for_run(slot.run_id)
                echo(f"freed pool {pool!r} slot left by finished run {slot.run_id[:8]}")
    return [run.run_id for run in dead]


def foreign_holders(instance: dg.DagsterInstance, pool: str, session: str) -> tuple[int, list[str]]:
    """(slot limit, run ids holding a slot of `pool` that belong to another `phantom run` session
    or process); limit ≥ 1 (DuckDB has one writer even when the instance sets no limit)."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    limit = max(info.limit or info.slot_count or 1, 1)
    others = []
    for slot in info.claimed_slots:
        run = instance.get_run_by_id(slot.run_id)
        if run is None or run.tags.get(SESSION_TAG) != session:
            others.append(slot.run_id)
    return limit, others
