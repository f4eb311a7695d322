"""The scale-out location on a real deployment: Redis as Celery broker, PostgreSQL as Dagster
storage, two `dagster-celery` workers with one slot each, all started on free localhost ports by
`orchestration.scale_out.deployment` (what `make scale-demo` runs too) and stopped at the end.

A four-policy slice of `trained_policies` + `policy_evaluations` runs through the Celery executor;
its steps must land in both worker processes and reproduce the data versions of the same
partitions materialized in process.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml

from orchestration.definitions import build_definitions
from orchestration.resources import settings_from_env
from orchestration.scale_out import demo
from orchestration.scale_out import deployment as deploy
from phantom_assets.config import load_settings
from tests.pipeline_helpers import REPO_ROOT, skip_or_fail_without

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SLICE_KEYS = [demo.slice_partition(p) for p in demo.SLICE_POLICIES]


def _binaries() -> deploy.Binaries:
    try:
        return deploy.find_binaries()
    except deploy.MissingBinaryError as e:  # .ci/run installs both; a laptop may lack them
        skip_or_fail_without(str(e))


def _descendants(pid: int) -> set[int]:
    """`pid` and every process below it (Linux /proc)."""
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            todo += [int(c) for c in children.read_text().split()]
    return found


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclasses.dataclass(frozen=True)
class SliceResult:
    placements: list[demo.StepPlacement]
    versions: dict[tuple[str, str], str]
    worker_pids: dict[str, set[int]]  # worker name -> its process tree while it ran


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[deploy.Deployment]:
    """Postgres + Redis + two Celery workers for this module; the finalizer stops them all and
    checks that no worker process is left."""
    binaries = _binaries()
    with deploy.deployment(tmp_path_factory.mktemp("scale_out"), binaries) as started:
        yield started
    assert all(w.process.poll() is not None for w in started.workers)
    assert not _port_open(started.postgres.port)


@pytest.fixture(scope="module")
def celery_slice(deployment: deploy.Deployment) -> SliceResult:
    """Build the upstream with `phantom run`, then the slice on the Celery executor; read where
    each step ran and the data versions from the Postgres event log."""
    demo.build_upstream(deployment, timeout=600)
    demo.materialize_slice(deployment, timeout=600)
    trees = {w.name: _descendants(w.process.pid) for w in deployment.workers}
    with deploy.open_instance(deployment.dagster_home, deployment.postgres) as instance:
        return SliceResult(
            demo.step_placements(instance, SLICE_KEYS),
            demo.data_versions(instance, SLICE_KEYS),
            trees,
        )


def test_celery_location_loads_the_same_assets_and_jobs(monkeypatch):
    monkeypatch.setenv("DAGSTER_CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("DAGSTER_CELERY_BACKEND_URL", "redis://127.0.0.1:6379/1")
    from orchestration.scale_out import celery

    defs = celery.defs()  # the lazy location, loaded as Dagster's loader does
    dg.Definitions.validate_loadable(defs)
    local = build_definitions(settings_from_env()).resolve_asset_graph()
    graph = defs.resolve_asset_graph()
    assert graph.get_all_asset_keys() == local.get_all_asset_keys()
    for job in defs.jobs or []:
        assert defs.resolve_job_def(job.name).executor_def.name == "celery"


def test_scale_out_configs_read_the_documented_variables_and_point_at_the_location():
    folder = REPO_ROOT / "orchestration" / "scale_out"
    instance = yaml.safe_load((folder / "dagster.yaml").read_text())
    db = instance["storage"]["postgres"]["postgres_db"]
    assert {k: v for k, v in db.items() if isinstance(v, dict)} == {
        "hostname": {"env": "DAGSTER_POSTGRES_HOST"},
        "port": {"env": "DAGSTER_POSTGRES_PORT"},
        "username": {"env": "DAGSTER_POSTGRES_USER"},
        "password": {"env": "DAGSTER_POSTGRES_PASSWORD"},
        "db_name": {"env": "DAGSTER_POSTGRES_DB"},
    }
    assert instance["concurrency"]["pools"]["default_limit"] == 1
    worker = yaml.safe_load((folder / "celery.yaml").read_text())["execution"]["config"]
    assert worker == {
        "broker": {"env": "DAGSTER_CELERY_BROKER_URL"},
        "backend": {"env": "DAGSTER_CELERY_BACKEND_URL"},
    }
    workspace = yaml.safe_load((folder / "workspace.yaml").read_text())
    module = workspace["load_from"][0]["python_module"]["module_name"]
    assert module == deploy.CODE_LOCATION == "orchestration.scale_out.celery"


def test_servers_stop_and_free_their_ports_and_folders(tmp_path: Path):
    binaries = _binaries()
    with deploy.postgres_server(binaries.postgres_bin) as postgres:
        with deploy.redis_server(binaries.redis_server, tmp_path / "redis") as broker:
            redis_port = int(broker.rsplit(":", 1)[1].split("/")[0])
            assert _port_open(postgres.port) and _port_open(redis_port)
    assert not _port_open(postgres.port) and not _port_open(redis_port)
    assert not postgres.folder.exists()


def test_every_slice_step_ran_as_a_celery_task_in_one_of_two_worker_processes(
    celery_slice: SliceResult,
):
    placements = celery_slice.placements
    steps = {(p.partition, p.step) for p in placements}
    assert steps == {(k, s) for k in SLICE_KEYS for s in demo.SLICE_ASSETS}
    assert len(placements) == len(steps)  # each step once: no retry, no duplicate delivery
    for placement in placements:
        name = placement.worker.split("@")[0]
        assert name in celery_slice.worker_pids, placement
        assert placement.pid in celery_slice.worker_pids[name], placement
    assert len({p.pid for p in placements}) >= 2
    assert len({p.worker for p in placements}) == 2


def test_slice_data_versions_equal_an_in_process_materialization(
    deployment: deploy.Deployment, celery_slice: SliceResult
):
    settings = load_settings("demo", data_dir=deployment.data_dir, config_file=deploy.DEMO_CONFIG)
    local = build_definitions(settings)
    resources, assets = local.resources, list(local.assets or [])
    with dg.instance_for_test() as instance:
        for key in SLICE_KEYS:
            result = dg.materialize(
                assets,
                selection=list(demo.SLICE_ASSETS),
                partition_key=key,
                instance=instance,
                resources=resources,
                run_config=demo.SLICE_RUN_CONFIG,
            )
            assert result.success, key
        in_process = demo.data_versions(instance, SLICE_KEYS)
    assert len(in_process) == len(SLICE_KEYS) * len(demo.SLICE_ASSETS)
    assert celery_slice.versions == in_process


def test_the_demo_keeps_every_log_of_the_deployment_before_its_temp_dir_goes(tmp_path: Path):
    root = tmp_path / "phantom-scale-x"
    for name in ("worker-1.log", "redis/redis.log", "data/logs/run-1.log", "data/lake/x.parquet"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    kept = demo.keep_logs(root, tmp_path / "logs" / "scale-demo-1")
    assert sorted(p.relative_to(tmp_path / "logs" / "scale-demo-1").as_posix() for p in kept) == [
        "data/logs/run-1.log",
        "redis/redis.log",
        "worker-1.log",
    ]
    assert all(
        p.read_text() == p.relative_to(tmp_path / "logs/scale-demo-1").as_posix() for p in kept
    )


def test_speedup_measures_each_partition_alone_then_all_at_once_at_the_configured_budgets(
    deployment: deploy.Deployment, celery_slice: SliceResult
):
    # Partitions the slice does not touch, at the deployment's own (tiny demo.toml) budgets.
    policies = ["tuned-a050", "surge-a050", "qtable-baseline-a050", "ppo-baseline-a050"]
    keys = [demo.slice_partition(p) for p in policies]
    measured = demo.measure_speedup(deployment, policies, timeout=600)
    assert list(measured.alone) == keys and all(s > 0 for s in measured.alone.values())
    assert measured.speedup == pytest.approx(sum(measured.alone.values()) / measured.together)
    assert {w.split("@")[0] for w in measured.workers_used} == {w.name for w in deployment.workers}
    with deploy.open_instance(deployment.dagster_home, deployment.postgres) as instance:
        runs = [r for r in instance.get_runs() if r.tags.get("dagster/partition") in keys]
    assert len(runs) == 2 * len(keys)  # alone, then together
    for run in runs:  # no tiny overrides: the runs used the deployment's settings as they are
        assert run.run_config == {}, run.run_id
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
