"""`phantom bench front`: the front of the graph on N times the demo data, run as a user runs it.

Simulates `scale` times the profile's subjects per store into a fresh data root, runs `phantom
run --select '*separability_report'` there in a child process, and reports its wall time, the
peak resident memory of its largest process (`wait4`'s `ru_maxrss`, what `/usr/bin/time -v`
prints: worker processes and dbt included) and each stage's wall time from the run records.
The children start from this process while it is small (~0.2 GB): Linux counts the resident
memory of the process a child was started from in the child's peak.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phantom_assets.config import Settings
from phantom_assets.constants import STORES

FRONT_SELECTION = "*separability_report"
_ERROR_LINES = 20  # of a failed child's stderr, in the error

logger = logging.getLogger("phantom.bench")  # the CLI shows "phantom" at INFO


@dataclass(frozen=True)
class ChildRun:
    """A finished `phantom` child process: what it printed, how long and how much memory."""

    stdout: str
    seconds: float
    peak_rss_mb: float  # of its largest process (itself or a descendant it waited for), 1e6 B


def run_phantom(args: list[str], env: dict[str, str], logs: Path) -> ChildRun:
    """Run `phantom ARGS` (this interpreter's `orchestration.cli`) and measure it.

    Raises:
        RuntimeError: it exited non-zero; the message holds the end of its stderr (all of it is
            in `logs/<command>.stderr`).
    """
    name = args[0]
    stdout_path, stderr_path = logs / f"{name}.stdout", logs / f"{name}.stderr"
    with stdout_path.open("w") as stdout, stderr_path.open("w") as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "orchestration.cli", *args],
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
        _, status, usage = os.wait4(child.pid, 0)  # waitpid would drop the resource usage
        seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = "\n".join(stderr_path.read_text().splitlines()[-_ERROR_LINES:])
        raise RuntimeError(f"`phantom {' '.join(args)}` exited {child.returncode}:\n{tail}")
    return ChildRun(stdout_path.read_text(), seconds, usage.ru_maxrss * 1024 / 1e6)


def _stage_seconds(dagster_home: Path) -> dict[str, float]:
    """Wall time of each stage (job) of the run: its first run's start to its last run's end."""
    import dagster as dg

    from orchestration.runner import LAUNCHED_BY_TAG

    spans: dict[str, list[float]] = {}
    launched = dg.RunsFilter(tags={LAUNCHED_BY_TAG: "phantom run"})
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        for record in instance.get_run_records(launched):
            if record.start_time is None or record.end_time is None:
                continue
            span = spans.setdefault(record.dagster_run.job_name, [record.start_time, 0.0])
            span[0] = min(span[0], record.start_time)
            span[1] = max(span[1], record.end_time)
    ordered = sorted(spans.items(), key=lambda item: item[1][0])
    return {job: round(end - start, 1) for job, (start, end) in ordered}


def bench_front(
    settings: Settings, scale: int, workers: int, root: Path | None = None
) -> dict[str, Any]:
    """Simulate `scale` x the profile's subjects per store, run the front of the graph, measure.

    Args:
        settings: the profile (its simulation sizes and seed are scaled; its config applies).
        scale: multiple of the profile's human and agent subjects per store (>= 1).
        workers: `phantom run --workers`.
        root: an empty or new folder to keep the data root, DAGSTER_HOME and the logs in
            (default: a temporary folder, removed afterwards).

    Returns:
        `{"selection", "scale", "workers", "sessions", "events", "rows_in", "simulate_s",
        "wall_s", "peak_rss_mb", "stages_s", "config"}`: `wall_s` and `peak_rss_mb` are the run
        of the front alone (simulating is `simulate_s`); MB are 10^6 bytes.

    Raises:
        ValueError: `scale` < 1 or `root` holds files.
        RuntimeError: simulating or running failed (its stderr's end in the message).
    """
    from orchestration.resources import phantom_environment

    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale!r}")
    if root is not None and root.exists() and any(root.iterdir()):
        raise ValueError(f"{root} is not empty: the benchmark needs a fresh data root")
    sim = settings.simulation
    humans, agents = sim.humans_per_store * scale, sim.agents_per_store * scale
    with tempfile.TemporaryDirectory(prefix="phantom-bench-") as scratch:
        folder = root or Path(scratch)
        data, home = folder / "data", folder / "dagster_home"
        folder.mkdir(parents=True, exist_ok=True)
        env = phantom_environment(data, home)
        logger.info(
            "simulating %d x the %s profile's subjects into %s",
            scale,
            settings.profile,
            data / "incoming",
        )
        simulated = run_phantom(
            [
                "simulate",
                "--humans",
                str(humans),
                "--agents",
                str(agents),
                "--out",
                str(data / "incoming"),
            ],
            env,
            folder,
        )
        logger.info("running phantom run --select %r (%d workers)", FRONT_SELECTION, workers)
        run = run_phantom(
            ["run", "--select", FRONT_SELECTION, "--workers", str(workers), "--json"], env, folder
        )
        stages = _stage_seconds(home)
    summary = _json_object(run.stdout)
    return {
        "selection": FRONT_SELECTION,
        "scale": scale,
        "workers": workers,
        "sessions": sum(row["n_sessions"] for row in summary["sessions"]),
        "events": sum(row["n_events"] for row in summary["sessions"]),
        "rows_in": sum(batch["rows"] or 0 for batch in summary["batches"]),
        "simulate_s": round(simulated.seconds, 1),
        "wall_s": round(run.seconds, 1),
        "peak_rss_mb": round(run.peak_rss_mb),
        "stages_s": stages,
        "config": {
            "profile": settings.profile,
            "humans_per_store": humans,
            "agents_per_store": agents,
            "seed": sim.seed,
        },
    }


def bench_scale_out(
    settings: Settings,
    config_file: Path | None,
    policies: Sequence[str],
    store: str,
    workers: int,
) -> dict[str, Any]:
    """The Celery speed-up of a training + evaluation slice, at the settings' own budgets.

    Starts the throwaway deployment of `orchestration.scale_out` (Postgres, Redis, `workers`
    Celery workers with one slot each) in a temp dir with `settings.profile` and `config_file`,
    builds the slice's upstream with `phantom run`, then launches the `policies` partitions of
    `store` one at a time and all at once.

    Returns:
        `{"profile", "store", "workers", "upstream_s", "alone_s", "alone_total_s",
        "together_s", "speedup", "workers_used"}`: `alone_s` maps each partition to the wall
        seconds of its launch on otherwise idle workers; `speedup` is `alone_total_s` over
        `together_s`.

    Raises:
        ValueError: a policy or the store is not in the settings' grid, or `workers` < 1.
        MissingBinaryError: redis-server or PostgreSQL is not installed.
        RuntimeError: a run failed (the ends of its logs in the message).
    """
    from orchestration.scale_out import demo
    from orchestration.scale_out.deployment import deployment, find_binaries
    from phantom_assets.assets.partitions import policy_grid

    unknown = sorted(set(policies) - set(policy_grid(settings)))
    if unknown:
        raise ValueError(
            f"policies {unknown} are not in the {settings.profile} profile's grid; "
            f"choose from {list(policy_grid(settings))}"
        )
    if store not in STORES:
        raise ValueError(f"store {store!r} is not one of {list(STORES)}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    binaries = find_binaries()
    with tempfile.TemporaryDirectory(prefix="phantom-bench-scale-out-") as scratch:
        with deployment(Path(scratch), binaries, workers, config_file, settings.profile) as running:
            logger.info("building the upstream (%s profile) with phantom run", settings.profile)
            started = time.perf_counter()
            demo.build_upstream(running, timeout=3600)
            upstream = time.perf_counter() - started
            logger.info(
                "launching %d partitions of %s one at a time, then all at once on %d "
                "Celery workers",
                len(policies),
                store,
                workers,
            )
            measured = demo.measure_speedup(running, policies, store)
    return {
        "profile": settings.profile,
        "store": store,
        "workers": workers,
        "upstream_s": round(upstream, 1),
        "alone_s": {key: round(s, 1) for key, s in measured.alone.items()},
        "alone_total_s": round(sum(measured.alone.values()), 1),
        "together_s": round(measured.together, 1),
        "speedup": round(measured.speedup, 2),
        "workers_used": list(measured.workers_used),
    }


def _json_object(stdout: str) -> dict[str, Any]:
    """The JSON summary `phantom run --json` printed (its last line)."""
    return json.loads(stdout.strip().splitlines()[-1])
