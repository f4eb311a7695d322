"""`phantom bench automation`: how long a new file takes to reach the kernels through the UI's
daemon, and how many runs one change costs (docs/architecture.md#automation).

In a fresh data root it simulates the profile's demo, builds the cheap part of the graph
(`CHEAP_SELECTION`: everything the automation rebuilds eagerly) with `phantom run`, starts `make
ui`'s `dagster dev` on it, switches both sensors on, waits until the automation sensor's first
tick finds nothing to do, then drops a new export holding one store's sessions (another seed: new
content) into the drop zone. From the drop it follows the instance: when every kernel partition of
that store has a new materialization, and when the graph is quiet again (no run in flight and
nothing new for `QUIET_S`). It reports the runs made (by assets), every asset partition materialized
and how often, and what of the other store was rebuilt.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from orchestration.bench import run_phantom
from orchestration.devserver import STARTUP_TIMEOUT_S, dagster_dev_command, wait_until_serving
from orchestration.scale_out.deployment import child_env, free_port, venv_script
from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS, STORES

# Everything the automation rebuilds on the next tick (not training, evaluation, audit).
CHEAP_LEAVES = (
    "coi_erosion",
    "market_oracle",
    "market_sensitivity",
    "observed_coi",
    "contaminated_datasets",
    "separability_report",
)
# Every ancestor: `N+key:x` is x and N levels upstream (`*x` does not combine with `or`).
CHEAP_SELECTION = " or ".join(f"20+key:{leaf}" for leaf in CHEAP_LEAVES)
CRON_GATED = ("trained_policies", "policy_evaluations", "benchmark_curves", "certification_report")
SENSORS = ("incoming_files_sensor", "phantom_automation_sensor")
KERNELS = "transition_kernels"
QUIET_S = 75.0  # five automation ticks and a run start with nothing new
POLL_S = 2.0
TIMEOUT_S = 1800.0  # from the drop: the issue that asked for this measured 10 min 50 s
REPO_ROOT = Path(__file__).resolve().parent.parent

logger = logging.getLogger("phantom.bench")


def bench_automation(settings: Settings, store: str, timeout_s: float) -> dict[str, Any]:
    """Drop one store's new export into a built root served by `dagster dev`; time and count.

    Returns:
        `{"store", "drop_to_kernels_s", "drop_to_quiet_s", "runs", "runs_by_assets",
        "materializations", "rerun", "other_store_rebuilt", "config"}`: `rerun` lists the asset
        partitions materialized more than once after the drop (one change should run each once);
        `other_store_rebuilt` those of the other store beyond its warehouse slice; `timeline`
        each run's assets and partition with when it was queued, started and ended (s from the
        drop): where the time to the kernels goes.

    Raises:
        ValueError: `store` is not a store.
        RuntimeError: building, `dagster dev` or starting a sensor failed, or nothing reached
            the kernels within `timeout_s`.
    """
    import dagster as dg

    from orchestration.resources import phantom_environment

    if store not in STORES:
        raise ValueError(f"unknown store {store!r}: one of {', '.join(STORES)}")
    with tempfile.TemporaryDirectory(prefix="phantom-bench-automation-") as scratch:
        folder = Path(scratch)
        data, home = folder / "data", folder / "dagster_home"
        env = phantom_environment(data, home)
        logger.info("building %r on the %s profile in %s", CHEAP_SELECTION, settings.profile, data)
        run_phantom(["run", "--select", CHEAP_SELECTION], env, folder)  # the demo simulated first
        with _dagster_dev(env, folder / "dagster_dev.log") as port:
            logger.info("dagster dev on http://127.0.0.1:%d (watch the runs there)", port)
            for sensor in SENSORS:
                _start_sensor(sensor, env)
            with dg.DagsterInstance.from_config(str(home)) as instance:
                _wait_until_quiet(instance, time.time(), timeout_s)
                dropped_at = time.time()
                _drop_one_store_export(replace(settings, data_dir=data), store)
                logger.info("dropped a new %s export; waiting for the kernels", store)
                kernels_at = _wait_for_kernels(instance, store, dropped_at, timeout_s)
                quiet_at = _wait_until_quiet(instance, dropped_at, timeout_s)
                runs = [
                    r
                    for r in instance.get_run_records()
                    if r.create_timestamp.timestamp() >= dropped_at and not _trains(r.dagster_run)
                ]
                timeline = [
                    _timeline_row(instance, r, dropped_at)
                    for r in sorted(runs, key=lambda r: r.create_timestamp.timestamp())
                ]
                made = {
                    node: times
                    for node, times in _materializations_since(instance, dropped_at).items()
                    if node[0] not in CRON_GATED
                }
    other = [s for s in STORES if s != store]
    return {
        "store": store,
        "drop_to_kernels_s": round(kernels_at - dropped_at, 1),
        "drop_to_quiet_s": round(quiet_at - dropped_at, 1),
        "runs": len(runs),
        "runs_by_assets": dict(Counter(_assets_of(r.dagster_run) for r in runs)),
        "materializations": sum(len(times) for times in made.values()),
        "timeline": timeline,
        "rerun": sorted(f"{a} [{p}]" for (a, p), times in made.items() if len(times) > 1),
        "other_store_rebuilt": sorted(
            f"{a} [{p}]"
            for (a, p) in made
            if p is not None and a != "store_warehouse" and set(p.split("|")) & set(other)
        ),
        "config": {
            "profile": settings.profile,
            "seed": settings.simulation.seed,
            "quiet_s": QUIET_S,
        },
    }


@contextlib.contextmanager
def _dagster_dev(env: dict[str, str], log: Path) -> Iterator[int]:
    """`make ui`'s command (the devserver wrapper around `dagster dev`) on a free local port."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "orchestration.devserver", *dagster_dev_command(port)],
            cwd=REPO_ROOT,
            env=child_env(env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_serving(port, process, log)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)  # the wrapper stops the whole group in seconds
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _start_sensor(name: str, env: dict[str, str]) -> None:
    """Switch a sensor on as the UI's toggle does (the code location may still be loading)."""
    dagster = venv_script("dagster")
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        started = subprocess.run(
            [dagster, "sensor", "start", "-w", "workspace.yaml", name],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if started.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"could not start {name}: {started.stderr[-2000:]}")
        time.sleep(2)


def _drop_one_store_export(settings: Settings, store: str) -> Path:
    """A new export of `store`'s sessions only (the next seed: new content), written beside the
    demo's files (a demo root takes no file of one's own), whole before the sensor sees it."""
    from phantom_assets.simulate.corpus import simulate_events
    from phantom_assets.simulate.exports import write_exports
    from phantom_assets.simulate.params import SimulatedCorpus, params_from

    params = params_from(settings)
    corpus = simulate_events(replace(params, seed=params.seed + 1))
    events = corpus.events.filter(pl.col("store") == store)
    experiments = corpus.experiments.filter(
        pl.col("experimentId").is_in(events["experiment_id"].unique().implode())
    )
    demo = settings.incoming_dir / "demo"
    demo.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=settings.data_dir) as staging:
        (written,) = write_exports(
            SimulatedCorpus(events, experiments, corpus.params),
            Path(staging),
            formats=("whoclickedit_parquet",),
            prefix=f"{store}-only",
        )
        return Path(shutil.move(written, demo / written.name))


def _wait_for_kernels(instance: Any, store: str, since: float, timeout_s: float) -> float:
    """When every kernel partition of `store` has a materialization after `since`."""
    wanted = {(KERNELS, f"{actor}|{store}") for actor in ACTORS}
    deadline = since + timeout_s
    while time.time() < deadline:
        made = _materializations_since(instance, since)
        if wanted <= set(made):
            return max(made[node][-1] for node in wanted)
        time.sleep(POLL_S)
    raise RuntimeError(f"no new {KERNELS} of {store} within {timeout_s:.0f} s of the drop")


def _wait_until_quiet(instance: Any, since: float, timeout_s: float) -> float:
    """When the last run of the cheap graph that started after `since` ended, once none ran for
    `QUIET_S` (training the hourly cron tick may start meanwhile is not waited for)."""
    deadline = since + timeout_s
    while time.time() < deadline:
        records = [
            r
            for r in instance.get_run_records()
            if r.create_timestamp.timestamp() >= since and not _trains(r.dagster_run)
        ]
        active = [r for r in records if not r.dagster_run.is_finished]
        last = max((r.end_time or 0.0 for r in records), default=since)
        if not active and time.time() - last >= QUIET_S:
            return last
        time.sleep(POLL_S)
    raise RuntimeError(f"runs still going {timeout_s:.0f} s after the drop")


def _assets_of(run: Any) -> str:
    """`labeled_sessions+transition_kernels`: what a run materialized (its job for an ingest)."""
    keys = sorted(key.to_user_string() for key in run.asset_selection or ())
    return "+".join(keys) if keys else run.job_name


def _timeline_row(instance: Any, record: Any, dropped_at: float) -> dict[str, Any]:
    """One run: `{"assets", "partition", "queued_s", "launched_s", "started_s", "ended_s"}` from
    the drop (launched: the queue let it go; started: its process loaded the code and began)."""
    from dagster import DagsterEventType

    run = record.dagster_run
    launches = instance.get_records_for_run(
        run.run_id, of_type=DagsterEventType.RUN_STARTING, limit=1
    ).records

    def since_drop(at: float | None) -> float | None:
        return None if at is None else round(at - dropped_at, 1)

    return {
        "assets": _assets_of(run),
        "partition": run.tags.get("dagster/partition"),
        "queued_s": since_drop(record.create_timestamp.timestamp()),
        "launched_s": since_drop(launches[0].timestamp) if launches else None,
        "started_s": since_drop(record.start_time),
        "ended_s": since_drop(record.end_time),
    }


def _trains(run: Any) -> bool:
    """A run of the cron-gated part of the graph (training, evaluation, benchmarks, audit)."""
    return bool(run.asset_selection) and all(
        key.to_user_string() in CRON_GATED for key in run.asset_selection
    )


def _materializations_since(
    instance: Any, since: float
) -> dict[tuple[str, str | None], list[float]]:
    """The times each asset partition was materialized after `since`, in order."""
    import dagster as dg

    made: dict[tuple[str, str | None], list[float]] = {}
    for key in instance.get_asset_keys():
        found = dg.AssetRecordsFilter(asset_key=key, after_timestamp=since)
        for record in reversed(instance.fetch_materializations(found, limit=10_000).records):
            partition = record.asset_materialization.partition
            made.setdefault((key.to_user_string(), partition), []).append(record.timestamp)
    return made
