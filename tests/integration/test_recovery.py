"""Recovery after a killed `phantom run`, on a real instance in seconds: a run whose worker process
is gone is marked failed and its pool slot freed; a live run and another host's run are left
alone; slots of runs that already ended are freed too."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid

import dagster as dg
import pytest

from orchestration.recovery import HOST_TAG, PID_TAG, recover_dead_runs

POOL = "duckdb"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _run(instance: dg.DagsterInstance, pid: int, status: dg.DagsterRunStatus, host: str) -> str:
    run_id = uuid.uuid4().hex
    tags = {PID_TAG: str(pid), HOST_TAG: host}
    instance.add_run(
        dg.DagsterRun(job_name="warehouse_job", run_id=run_id, status=status, tags=tags)
    )
    return run_id


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        instance.event_log_storage.set_concurrency_slots(POOL, 4)
        yield instance


def _holders(instance: dg.DagsterInstance) -> set[str]:
    return {s.run_id for s in instance.event_log_storage.get_concurrency_info(POOL).claimed_slots}


def test_a_run_whose_process_is_gone_is_failed_and_frees_its_slot(instance):
    import os

    host = socket.gethostname()
    started = dg.DagsterRunStatus.STARTED
    dead = _run(instance, _dead_pid(), started, host)
    alive = _run(instance, os.getpid(), started, host)
    elsewhere = _run(instance, _dead_pid(), started, "another-host")
    ended = _run(instance, os.getpid(), dg.DagsterRunStatus.SUCCESS, host)
    for run_id in (dead, alive, elsewhere, ended):
        instance.event_log_storage.claim_concurrency_slot(POOL, run_id, "step")
    lines: list[str] = []
    recovered = recover_dead_runs(instance, lines.append)
    assert recovered == [dead]
    assert instance.get_run_by_id(dead).status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id(alive).status == started
    assert instance.get_run_by_id(elsewhere).status == started  # not this host's process table
    assert _holders(instance) == {alive, elsewhere}
    assert any(dead[:8] in line and "gone" in line for line in lines), lines
    assert any(ended[:8] in line and "finished run" in line for line in lines), lines


def test_nothing_to_recover_changes_nothing(instance):
    import os

    alive = _run(instance, os.getpid(), dg.DagsterRunStatus.STARTED, socket.gethostname())
    instance.event_log_storage.claim_concurrency_slot(POOL, alive, "step")
    assert recover_dead_runs(instance, print) == []
    assert _holders(instance) == {alive}
