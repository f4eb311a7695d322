"""`make ui`: `dagster dev` that is gone within seconds of Ctrl-C or SIGTERM.

Why a plain `dagster dev` can outlive a signal by minutes: on SIGINT/SIGTERM it asks its webserver
and daemon to stop over pipes and waits up to 60 s for *each*; its code server (`dagster api
grpc`) keeps serving while an RPC is in flight (up to its 60-s grace period) and does not stop
before the runs it launched have finished (a training run takes minutes); and `make` forwards
SIGTERM only to its direct child. With a terminal's Ctrl-C, every process of the job gets SIGINT
at once and each starts its own shutdown.

This wrapper runs the command in its own process group and, on SIGINT, SIGTERM or SIGHUP,
escalates on a clock: SIGINT to every process of the group (what a terminal's Ctrl-C does to a
plain `dagster dev`: each starts its orderly shutdown, a run worker ends its run), SIGTERM after
`INTERRUPT_GRACE_S`, SIGKILL after `TERMINATE_GRACE_S` more. Nothing of the group is left
`STOP_WITHIN_S` after the signal. Runs whose worker was one of those processes and that are still
marked active are then marked canceled and their pool slots freed (else the next `phantom run`
would wait for a `duckdb` slot nobody holds). If the wrapper itself is killed, the kernel sends
the command SIGTERM (Linux parent-death signal).

Usage: `python -m orchestration.devserver dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from orchestration.scale_out.deployment import venv_script

INTERRUPT_GRACE_S = 3.5  # the orderly shutdown of dagster dev, its webserver, daemon, runs
TERMINATE_GRACE_S = 2.5  # SIGTERM to the whole group, then SIGKILL
STOP_WITHIN_S = INTERRUPT_GRACE_S + TERMINATE_GRACE_S + 1.0
POLL_S = 0.1
STARTUP_TIMEOUT_S = 180.0  # `dagster dev` answers in ~12 s on an idle machine, minutes under load
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the wrapper dies (Linux; elsewhere a no-op)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group `pgid` (Linux /proc; else a signal probe)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while we looked
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _wait_for_group(process: subprocess.Popen, seconds: float) -> bool:
    """Reap the leader and wait until no member of its group is left; True if none is."""
    deadline = time.monotonic() + seconds
    while True:
        process.poll()  # a zombie leader would otherwise count as alive
        if not group_members(process.pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop(process: subprocess.Popen) -> None:
    """SIGINT, then SIGTERM, then SIGKILL to the command's whole group, each after its grace."""
    _signal_group(process.pid, signal.SIGINT)
    if _wait_for_group(process, INTERRUPT_GRACE_S):
        return
    _signal_group(process.pid, signal.SIGTERM)
    if _wait_for_group(process, TERMINATE_GRACE_S):
        return
    _signal_group(process.pid, signal.SIGKILL)
    _wait_for_group(process, 1.0)


def supervise(
    command: Sequence[str], on_stopped: Callable[[set[int]], object] = lambda _: None
) -> int:
    """Run `command` until it exits or a stop signal arrives; return the exit code to use.

    `on_stopped` gets the pids the group had when the signal arrived, once they are gone.
    """
    received: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)

    previous = {
        sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    try:
        process = subprocess.Popen(
            list(command), start_new_session=True, preexec_fn=_die_with_parent
        )
        while not received and process.poll() is None:
            time.sleep(POLL_S)
        members = set(group_members(process.pid))
        if received:
            stop(process)
        else:  # it exited by itself: do not leave its code servers behind
            _signal_group(process.pid, signal.SIGTERM)
            if not _wait_for_group(process, TERMINATE_GRACE_S):
                _signal_group(process.pid, signal.SIGKILL)
        on_stopped(members)
        return 128 + received[0] if received else process.returncode
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def end_runs_of(instance, pids: set[int]) -> list[str]:
    """Mark canceled the runs still active whose run worker (the pid of their RUN_START event)
    was one of `pids`, freeing their pool slots; return their ids."""
    import dagster as dg

    from orchestration.recovery import ACTIVE_STATUSES, end_runs

    ended = []
    for run in instance.get_runs(dg.RunsFilter(statuses=ACTIVE_STATUSES)):
        starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_START)
        if any(r.dagster_event is not None and r.dagster_event.pid in pids for r in starts):
            why = "make ui was stopped while this run was in flight; its worker is gone"
            end_runs(instance, [run], canceled=True, why=why)
            ended.append(run.run_id)
    return ended


def dagster_dev_command(port: int) -> list[str]:
    """`make ui`'s `dagster dev` on 127.0.0.1:`port`, run by this interpreter's `dagster`."""
    return [
        venv_script("dagster"),
        "dev",
        "-w",
        "workspace.yaml",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
    ]


def wait_until_serving(
    port: int, process: subprocess.Popen, log: Path, timeout_s: float = STARTUP_TIMEOUT_S
) -> None:
    """Return once `dagster dev` (started as `process`, output in `log`) answers on 127.0.0.1.

    Raises:
        RuntimeError: it exited first, or did not answer within `timeout_s`.
    """
    import requests

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dagster dev exited with code {process.returncode}: see {log}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/server_info", timeout=2).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    raise RuntimeError(f"dagster dev did not answer within {timeout_s:.0f} s: see {log}")


def main(argv: Sequence[str] | None = None) -> int:
    command = list(sys.argv[1:] if argv is None else argv)
    if not command:
        sys.stderr.write("usage: python -m orchestration.devserver COMMAND [ARG...]\n")
        return 2
    import dagster as dg  # now, so that the clean-up after a stop takes no import time

    from orchestration.resources import dagster_home_from_env

    home = dagster_home_from_env()
    if not (home / "dagster.yaml").is_file():  # no instance to clean up after
        return supervise(command)
    with dg.DagsterInstance.from_config(str(home)) as instance:

        def on_stopped(pids: set[int]) -> None:
            for run_id in end_runs_of(instance, pids):
                sys.stderr.write(f"make ui: run {run_id[:8]} was in flight; marked canceled\n")

        return supervise(command, on_stopped)


if __name__ == "__main__":
    sys.exit(main())
