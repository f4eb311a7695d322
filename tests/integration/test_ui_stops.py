"""`make ui` stops on SIGTERM or Ctrl-C within 10 s, every process of it: a live `dagster dev`
started exactly like `make ui` with a run in flight, and the wrapper's escalation on processes
that ignore signals."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

from orchestration.devserver import STOP_WITHIN_S, wait_until_serving
from orchestration.runner import run_pipeline
from orchestration.scale_out.deployment import child_env, free_port
from phantom_assets.config import Settings
from phantom_assets.simulate import simulate_to_incoming
from tests.pipeline_helpers import REPO_ROOT

# `make ui` with a live `dagster dev`: a UI deployment test, run by `make test-all` and CI.
pytestmark = [pytest.mark.integration, pytest.mark.slow]

STARTUP_TIMEOUT_S = 240  # the code location parses the dbt project; slow on a busy machine
STOP_LIMIT_S = 10.0


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _descendants(root: int) -> set[int]:
    """`root` and every process below it, from /proc's parent links."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


def _gone_within(pids: set[int], seconds: float) -> tuple[float, set[int]]:
    """Seconds until none of `pids` runs (capped at `seconds`), and those still running."""
    start = time.monotonic()
    while time.monotonic() - start < seconds and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return time.monotonic() - start, {p for p in pids if _alive(p)}


def _kill_left(pids: set[int]) -> None:
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _start_warehouse_run(port: int) -> str:
    """Launch `warehouse_job` (a dbt build: tens of seconds) and wait until it runs."""
    client = DagsterGraphQLClient("127.0.0.1", port_number=port)
    deadline = time.monotonic() + 120
    while True:  # the code location may still be loading right after the server answers
        try:
            run_id = client.submit_job_execution("warehouse_job")
            break
        except DagsterGraphQLClientError:
            assert time.monotonic() < deadline
            time.sleep(2)
    while client.get_run_status(run_id) != dg.DagsterRunStatus.STARTED:
        assert time.monotonic() < deadline, client.get_run_status(run_id)
        time.sleep(0.5)
    return run_id


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="walks the process tree in /proc (Linux)")
def test_sigterm_to_make_ui_ends_every_process_within_10_seconds_even_with_a_run_in_flight(
    settings: Settings, tmp_path: Path
):
    """Regression: `dagster dev`'s code server waited for a run in flight (minutes for a training
    run) after `make ui` had exited, so its processes had to be killed by hand."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO_ROOT / "orchestration" / "dagster.yaml").read_text())
    simulate_to_incoming(settings, settings.incoming_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:  # raw_events for dbt to read
        assert not run_pipeline(settings, instance, "raw_events").failed
    port = free_port()
    # `dagster dev` re-parses the dbt project with the `dbt` beside this interpreter: first on PATH.
    env = child_env({"DAGSTER_HOME": str(home), "PHANTOM_DATA_DIR": str(settings.data_dir)})
    # As a terminal starts it (its own session); `-o setup`: this environment is set up already.
    command = ["make", "-o", "setup", "ui", f"UI_PORT={port}", f"VENV={sys.prefix}"]
    log_path = tmp_path / "make_ui.log"
    log = log_path.open("w")
    make = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pids: set[int] = set()
    try:
        wait_until_serving(port, make, log_path, STARTUP_TIMEOUT_S)
        run_id = _start_warehouse_run(port)
        pids = _descendants(make.pid)
        names = {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids}
        for part in (b"dagster_webserver", b"dagster._daemon", b"dagster api grpc"):
            assert any(part in name.replace(b"\0", b" ") for name in names.values()), part
        make.send_signal(signal.SIGTERM)  # what `kill <pid>` or a process manager sends
        took, left = _gone_within(pids, STOP_LIMIT_S)
        assert not left, {pid: names[pid][:120] for pid in left}
        assert took < STOP_LIMIT_S
        assert make.wait(timeout=5) != 0
        with dg.DagsterInstance.from_config(str(home)) as instance:
            run = instance.get_run_by_id(run_id)
            assert run is not None and run.is_finished, run and run.status
            assert not instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots
    finally:
        _kill_left(pids | _descendants(make.pid))
        log.close()


STUBBORN = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # ignored, and inherited by the grandchild
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[1], "w").write(f"{child.pid}\\n")
    time.sleep(600)
    """
)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="walks the process tree in /proc (Linux)")
@pytest.mark.parametrize("how", ["sigterm_to_the_wrapper", "ctrl_c_to_the_job"])
def test_the_ui_wrapper_kills_processes_that_ignore_signals_in_time(tmp_path: Path, how: str):
    ready = tmp_path / "grandchild.pid"
    wrapper = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestration.devserver",
            sys.executable,
            "-c",
            STUBBORN,
            str(ready),
        ],
        cwd=REPO_ROOT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text().endswith("\n")):
            assert time.monotonic() < deadline and wrapper.poll() is None
            time.sleep(0.1)
        pids = _descendants(wrapper.pid)
        assert int(ready.read_text()) in pids and len(pids) == 3
        if how == "sigterm_to_the_wrapper":
            wrapper.send_signal(signal.SIGTERM)
        else:  # a terminal's Ctrl-C reaches the wrapper's whole foreground group
            os.killpg(wrapper.pid, signal.SIGINT)
        took, left = _gone_within(pids, STOP_LIMIT_S)
        assert not left and took <= STOP_WITHIN_S + 1.0
        expected = signal.SIGTERM if how == "sigterm_to_the_wrapper" else signal.SIGINT
        assert wrapper.wait(timeout=5) == 128 + expected
    finally:
        _kill_left(_descendants(wrapper.pid))
