"""`make scale-demo`: a training slice on a throwaway Celery + Postgres deployment.

`python -m orchestration.scale_out.demo` starts the deployment of
`orchestration.scale_out.deployment` (Redis, PostgreSQL, two `dagster-celery` workers with one
slot each, in a temp dir), builds the upstream assets with `phantom run`, runs four
`trained_policies` partitions at once through the Celery executor
(`python -m orchestration.scale_out.demo launch PARTITION...`, inside the deployment's
environment), prints which worker ran which step, and tears everything down. `measure_speedup`
times a slice at the settings' own budgets one partition at a time and all at once (`phantom bench
scale-out`).
`tests/integration/test_scale_out.py` runs the same functions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestration.scale_out.deployment import (
    CODE_LOCATION,
    REPO_ROOT,
    Deployment,
    MissingBinaryError,
    child_env,
    deployment,
    find_binaries,
    finish,
    open_instance,
    venv_script,
)

if TYPE_CHECKING:
    import dagster as dg

STORE = "hotel"
UPSTREAM = '+key:"market_oracle"'  # everything the slice reads (the oracle's reference action)
SLICE_JOB = "defense_evaluation_job"  # exactly the slice's assets (a stage of `phantom run`)
SLICE_ASSETS = ("trained_policies", "policy_evaluations")
# Four independent policy partitions: two heuristic/tabular, one linear, one SB3 (torch) tier.
SLICE_POLICIES = ("static-a050", "linear-a050", "qtable-robust-a050", "dqn-baseline-a050")
# Tiny networks and rollouts, so each training step takes seconds.
TRAINING_OVERRIDES: dict[str, object] = {
    "net_arch": [8],
    "ppo_n_steps": 32,
    "ppo_batch_size": 16,
    "a2c_n_steps": 8,
    "dqn_learning_starts": 16,
    "log_every": 32,
    "linear_warmup_episodes": 1,
}
SLICE_RUN_CONFIG: dict[str, object] = {"ops": {"trained_policies": {"config": TRAINING_OVERRIDES}}}
CONFIGURED_BUDGETS = "--configured-budgets"  # `launch` flag: the settings' budgets, no overrides


@dataclasses.dataclass(frozen=True)
class StepPlacement:
    """Where one step of the slice executed, from the run's event log."""

    partition: str
    step: str
    worker: str
    pid: int


def build_upstream(running: Deployment, timeout: float = 600.0) -> None:
    """`phantom run --select` the slice's upstream (ingest ... market_simulators, market_oracle).

    It runs in process against the deployment's instance and data dir, simulating tiny demo data
    first.
    """
    log = running.root / "upstream.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [venv_script("phantom"), "run", "--select", UPSTREAM],
            env=child_env(running.env),
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        finish([(process, log)], "phantom run (upstream)", timeout)


def slice_partition(policy: str, store: str = STORE) -> str:
    """The `trained_policies` partition key string of `policy` at `store` (`<policy>|<store>`)."""
    import dagster as dg

    return str(dg.MultiPartitionKey({"store": store, "policy": policy}))


def materialize_slice(
    running: Deployment,
    policies: Sequence[str] = SLICE_POLICIES,
    timeout: float = 600.0,
    store: str = STORE,
    tiny_budgets: bool = True,
    log_name: str = "launch.log",
) -> None:
    """Run `SLICE_JOB` once per policy partition of `store`, all at once, through the Celery
    executor, with `TRAINING_OVERRIDES` or (`tiny_budgets=False`) the settings' own budgets.

    One launcher process (`python -m orchestration.scale_out.demo launch ...`) with the
    deployment's environment orchestrates the runs; their steps are Celery tasks on the workers.
    """
    log = running.root / log_name
    flags = [] if tiny_budgets else [CONFIGURED_BUDGETS]
    with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orchestration.scale_out.demo",
                "launch",
                *flags,
                *[slice_partition(p, store) for p in policies],
            ],
            env=child_env(running.env),
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finish([(process, log)], "slice launcher", timeout)


def _execute_partition(partition: str, run_config: dict[str, object]) -> None:
    """In a forked child of `launch`: one run of the slice job for `partition`.

    The run uses the Celery executor of the scale-out location (as `dagster job execute` does);
    the child exits 1 when it fails.
    """
    import dagster as dg

    from phantom_assets.assets.dagster_internals import reconstructable_repository

    repo = reconstructable_repository(CODE_LOCATION, "defs", str(REPO_ROOT))
    job = repo.get_definition().get_job(SLICE_JOB)
    tags = job.get_tags_for_partition_key(partition, selected_asset_keys=None)
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(
            repo.get_reconstructable_job(SLICE_JOB),
            instance,
            run_config=run_config,
            tags=tags,
            raise_on_error=False,
        )
    print(f"{partition}: run {result.run_id} {'succeeded' if result.success else 'FAILED'}")
    sys.exit(0 if result.success else 1)


def launch(partitions: Sequence[str], run_config: dict[str, object] = SLICE_RUN_CONFIG) -> int:
    """Run the slice job for every partition at once with `run_config`; 0 when every run
    succeeded.

    The definitions are imported once, then each run is orchestrated by a forked child (four CLI
    processes would import them four times on a 2-core machine). Needs the deployment's
    environment (DAGSTER_HOME, broker, data dir).
    """
    import multiprocessing

    import orchestration.scale_out.celery  # noqa: F401 -- imported once, before forking

    context = multiprocessing.get_context("fork")
    children = [
        context.Process(target=_execute_partition, args=(p, run_config)) for p in partitions
    ]
    for child in children:
        child.start()
    for child in children:
        child.join()
    failed = [p for p, child in zip(partitions, children, strict=True) if child.exitcode != 0]
    if failed:
        print(f"failed partitions: {failed}", file=sys.stderr)
    return 1 if failed else 0


@dataclasses.dataclass(frozen=True)
class SpeedUp:
    """Wall seconds of a slice on the deployment: each partition alone, then all at once."""

    alone: dict[str, float]  # partition key -> seconds of its launch, the workers otherwise idle
    together: float
    workers_used: tuple[str, ...]  # the Celery workers that ran steps of the slice

    @property
    def speedup(self) -> float:
        """One run at a time over all at once (the same launches, so the same fixed costs)."""
        return sum(self.alone.values()) / self.together


def measure_speedup(
    running: Deployment, policies: Sequence[str], store: str = STORE, timeout: float = 3600.0
) -> SpeedUp:
    """Launch the slice of `policies` at `store` one partition at a time, then all at once, at the
    settings' budgets; the upstream must be built (`build_upstream`)."""
    keys = [slice_partition(p, store) for p in policies]
    alone = {}
    for i, (policy, key) in enumerate(zip(policies, keys, strict=True)):
        started = time.perf_counter()
        materialize_slice(
            running, [policy], timeout, store, tiny_budgets=False, log_name=f"launch-alone-{i}.log"
        )
        alone[key] = time.perf_counter() - started
    started = time.perf_counter()
    materialize_slice(
        running, policies, timeout, store, tiny_budgets=False, log_name="launch-together.log"
    )
    together = time.perf_counter() - started
    with open_instance(running.dagster_home, running.postgres) as instance:
        workers = {p.worker for p in step_placements(instance, keys)}
    return SpeedUp(alone, together, tuple(sorted(workers)))


def step_placements(instance: dg.DagsterInstance, partitions: Sequence[str]) -> list[StepPlacement]:
    """Where every executed step of the runs of `partitions` in `instance` ran.

    The Celery worker comes from the executor's "Executing steps ... in celery worker" engine
    event, the process id from the step's STEP_START event.
    """
    import dagster as dg

    placements = []
    for run in instance.get_runs():
        partition = run.tags.get("dagster/partition")
        if partition not in partitions:
            continue
        workers = {}
        for record in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
            event = record.dagster_event
            data = event.engine_event_data if event else None
            if event and data and "Celery worker" in data.metadata:
                workers[event.step_key] = str(data.metadata["Celery worker"].value)
        for record in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START):
            event = record.dagster_event
            if event is not None and event.step_key is not None:
                worker = workers.get(event.step_key, "(not a Celery task)")
                placements.append(StepPlacement(partition, event.step_key, worker, event.pid or 0))
    return sorted(placements, key=lambda p: (p.partition, p.step))


def data_versions(
    instance: dg.DagsterInstance, partitions: Sequence[str], assets: Sequence[str] = SLICE_ASSETS
) -> dict[tuple[str, str], str]:
    """The latest data version of each (asset, partition) materialized in `instance`."""
    import dagster as dg

    versions = {}
    for asset in assets:
        for partition in partitions:
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]),
                limit=1,
            ).records
            materialization = records[0].asset_materialization if records else None
            if materialization is not None:
                versions[asset, partition] = materialization.tags["dagster/data_version"]
    return versions


def _show_slice(d: Deployment, elapsed) -> None:
    """Build the upstream, run the slice on the Celery workers, print where each step ran."""
    print(
        f"{elapsed()} postgres 127.0.0.1:{d.postgres.port} (Dagster storage; "
        f"DAGSTER_HOME {d.dagster_home})"
    )
    print(f"{elapsed()} redis    {d.broker_url} (Celery broker and result backend)")
    for w in d.workers:
        print(f"{elapsed()} worker   {w.name}: pid {w.process.pid}, -c 1, log {w.log.name}")
    print(
        f"{elapsed()} upstream phantom run --select '{UPSTREAM}' into PHANTOM_DATA_DIR "
        f"{d.data_dir}",
        flush=True,
    )
    build_upstream(d)
    selection = ",".join(SLICE_ASSETS)
    print(
        f"{elapsed()} slice    {len(SLICE_POLICIES)} runs of {SLICE_JOB} ({selection}) "
        "at once on the Celery executor",
        flush=True,
    )
    materialize_slice(d)
    keys = [slice_partition(p) for p in SLICE_POLICIES]
    with open_instance(d.dagster_home, d.postgres) as instance:
        placements = step_placements(instance, keys)
    print(f"{elapsed()} done\n\n{'partition':<26} {'step':<20} {'celery worker':<24} pid")
    for p in placements:
        print(f"{p.partition:<26} {p.step:<20} {p.worker:<24} {p.pid}")
    print(
        f"\n{len({p.pid for p in placements})} worker processes ran "
        f"{len(placements)} steps; stopping the deployment",
        flush=True,
    )


def keep_logs(root: Path, target: Path) -> list[Path]:
    """Copy every `*.log` below the deployment's `root` into `target` (same relative paths)."""
    kept = []
    for log in sorted(root.rglob("*.log")):
        copy = target / log.relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, copy)
        kept.append(copy)
    return kept


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo (no arguments) or, inside the deployment, `launch PARTITION...`.

    Every log of the deployment (servers, workers, upstream run, launcher) is copied to
    `<PHANTOM_DATA_DIR>/logs/scale-demo-<time>/` before the temp dir is removed, also when the
    demo fails.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["launch"]:
        configured = args[1:2] == [CONFIGURED_BUDGETS]
        return launch(args[1 + configured :], {} if configured else SLICE_RUN_CONFIG)
    if args:
        print(
            f"usage: python -m orchestration.scale_out.demo [launch [{CONFIGURED_BUDGETS}] "
            "PARTITION...]",
            file=sys.stderr,
        )
        return 2
    try:
        binaries = find_binaries()
    except MissingBinaryError as e:
        print(f"scale-demo: {e}", file=sys.stderr)
        return 2
    from orchestration.resources import settings_from_env

    logs = settings_from_env().data_dir / "logs" / f"scale-demo-{time.strftime('%Y%m%d-%H%M%S')}"
    started = time.perf_counter()

    def elapsed() -> str:
        return f"[{time.perf_counter() - started:5.0f}s]"

    with tempfile.TemporaryDirectory(prefix="phantom-scale-") as tmp:
        try:
            with deployment(Path(tmp), binaries) as d:
                try:
                    _show_slice(d, elapsed)
                finally:  # the server log lives in a folder that teardown removes
                    with contextlib.suppress(OSError):
                        shutil.copyfile(
                            d.postgres.folder / "server.log", Path(tmp) / "postgres.log"
                        )
        finally:
            kept = keep_logs(Path(tmp), logs)
            print(f"{elapsed()} kept {len(kept)} logs in {logs}", flush=True)
    print(f"{elapsed()} stopped workers, redis and postgres; removed {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
