"""`phantom run`'s execution: parallel workers, skipped downstream, recovery, signals, messages."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from orchestration.planning import MissingUpstreamError, graph_stages
from orchestration.recovery import HOST_TAG, PID_TAG
from orchestration.runner import STAGE_TAG, Status, run_pipeline
from phantom_assets.config import Settings
from phantom_assets.simulate import simulate_to_incoming
from tests.pipeline_helpers import REPO_ROOT, TINY_CONFIG

pytestmark = pytest.mark.integration

PHANTOM = str(Path(sys.executable).parent / "phantom")
STORES = dg.StaticPartitionsDefinition(["airline", "hotel"])


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO_ROOT / "orchestration" / "dagster.yaml").read_text())
    return home


def _env(settings: Settings, home: Path) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(home), "PHANTOM_DATA_DIR": str(settings.data_dir)}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_failed_blocking_check_skips_its_downstream_in_that_store_only(settings: Settings):
    @dg.asset(
        partitions_def=STORES,
        check_specs=[dg.AssetCheckSpec("positive", asset="scores", blocking=True)],
    )
    def scores(context: dg.AssetExecutionContext):
        yield dg.MaterializeResult()
        yield dg.AssetCheckResult(check_name="positive", passed=context.partition_key != "hotel")

    by_mode = dg.MultiPartitionsDefinition(
        {"store": STORES, "mode": dg.StaticPartitionsDefinition(["plain", "robust"])}
    )
    by_store = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="store")

    @dg.asset(partitions_def=by_mode, deps=[dg.AssetDep(scores, partition_mapping=by_store)])
    def market(): ...

    @dg.asset(partitions_def=STORES, deps=[dg.AssetDep(market, partition_mapping=by_store)])
    def policies(): ...

    defs = dg.Definitions(assets=[scores, market, policies])
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, defs=defs)
    status = {(o.stage, o.partition): o.status for o in report.outcomes}
    assert status == {
        ("scores", "airline"): Status.OK,
        ("scores", "hotel"): Status.FAILED,  # its blocking check failed
        ("market", "plain|airline"): Status.OK,
        ("market", "robust|airline"): Status.OK,
        ("market", "plain|hotel"): Status.SKIPPED,
        ("market", "robust|hotel"): Status.SKIPPED,
        ("policies", "airline"): Status.OK,
        ("policies", "hotel"): Status.SKIPPED,
    }


def test_every_run_belongs_to_its_stage_job_and_is_tagged_with_the_stage(settings: Settings):
    # Runs used to appear in the UI as `__ephemeral_asset_job__`, with nothing naming the stage.
    @dg.asset(partitions_def=STORES)
    def scores(): ...

    @dg.asset(deps=[scores])
    def report(): ...

    defs = dg.Definitions(assets=[scores, report])  # the runner adds the stage jobs
    with dg.instance_for_test() as instance:
        assert not run_pipeline(settings, instance, defs=defs).failed
        runs = instance.get_runs()
    jobs = {stage.label: stage.job for stage in graph_stages(defs)}
    assert sorted((run.tags[STAGE_TAG], run.job_name) for run in runs) == [
        ("report", jobs["report"]),
        ("scores", jobs["scores"]),
        ("scores", jobs["scores"]),
    ]
    assert len(set(jobs.values())) == 2 and "__ephemeral_asset_job__" not in jobs.values()


def test_a_selection_whose_upstream_was_never_built_names_it_and_the_star_syntax(
    settings: Settings,
):
    with dg.instance_for_test() as instance, pytest.raises(MissingUpstreamError) as error:
        run_pipeline(settings, instance, "labeled_sessions")
    message = str(error.value)
    assert "never materialized" in message and "'*labeled_sessions'" in message
    assert "store_warehouse" in message  # the store slice of the warehouse it reads


@pytest.mark.slow  # a process-level test (34 s): `make test-all` (CI)
def test_two_worker_processes_run_in_parallel_and_tool_output_goes_to_the_run_log(
    settings: Settings, tmp_path: Path
):
    simulate_to_incoming(settings, settings.incoming_dir)
    lines: list[str] = []
    with dg.DagsterInstance.from_config(str(_home(tmp_path))) as instance:
        report = run_pipeline(
            settings, instance, "*transition_kernels", echo=lines.append, workers=2, verbose=False
        )
        assert not report.failed and not report.skipped, report.outcomes
        runs = instance.get_runs(dg.RunsFilter(tags={"phantom/launched_by": "phantom run"}))
        pids = {run.tags[PID_TAG] for run in runs}
    assert len(pids) == 2 and str(os.getpid()) not in pids  # two workers, not this process
    assert report.log_path is not None and report.log_path.stat().st_size > 0
    assert "dbt" in report.log_path.read_text().lower()  # dbt's log went to the file...
    assert not any("dbt" in line.lower() and "stage" not in line for line in lines[1:])
    stage_lines = [line for line in lines if line.startswith("[")]
    assert len(stage_lines) == len({line.split("]")[0] for line in stage_lines})  # one per stage


# A `phantom run` process killed mid-run and the next one recovering (47 s): a deployment test, in
# `make test-all` (CI) with the other process-level ones.
@pytest.mark.slow
def test_a_killed_run_is_recovered_and_the_next_run_completes(settings: Settings, tmp_path: Path):
    home = _home(tmp_path)
    simulate_to_incoming(settings, settings.incoming_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert not run_pipeline(settings, instance, "raw_events").failed
    command = [PHANTOM, "run", "--select", "group:warehouse", "--workers", "1"]
    first = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=_env(settings, home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        deadline = time.monotonic() + 120
        while not instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots:
            assert time.monotonic() < deadline and first.poll() is None, "no run claimed the pool"
            time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the CLI, its worker and dbt: nothing cleans up
    first.wait(timeout=10)
    second = subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=_env(settings, home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "recovered run" in second.stderr and "marked failed" in second.stderr
    with dg.DagsterInstance.from_config(str(home)) as instance:
        statuses = [
            r.status
            for r in instance.get_runs(dg.RunsFilter(tags={"phantom/launched_by": "phantom run"}))
        ]
        assert dg.DagsterRunStatus.FAILURE in statuses and dg.DagsterRunStatus.SUCCESS in statuses
        assert not instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots


@pytest.mark.slow  # a process-level test (18 s): `make test-all` (CI)
def test_sigterm_ends_a_run_waiting_for_the_pool_within_seconds(settings: Settings, tmp_path: Path):
    home = _home(tmp_path)
    simulate_to_incoming(settings, settings.incoming_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert not run_pipeline(settings, instance, "raw_events").failed
        # A live run of another process holds the only `duckdb` slot.
        holder = instance.add_run(
            dg.DagsterRun(
                job_name="elsewhere",
                status=dg.DagsterRunStatus.STARTED,
                tags={PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()},
            )
        )
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default("duckdb")  # dagster.yaml: limit 1
        assert storage.claim_concurrency_slot("duckdb", holder.run_id, "step").is_claimed
    waiting = subprocess.Popen(
        [PHANTOM, "run", "--select", "group:warehouse"],
        cwd=REPO_ROOT,
        env=_env(settings, home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    for line in waiting.stderr:
        seen.append(line)
        if "waiting for pool 'duckdb'" in line:
            break
    assert holder.run_id[:8] in seen[-1], seen
    cpu_before = _cpu_seconds(waiting.pid)
    time.sleep(3)
    assert _cpu_seconds(waiting.pid) - cpu_before < 0.5  # waits asleep, not spinning
    sent = time.monotonic()
    waiting.send_signal(signal.SIGTERM)
    assert waiting.wait(timeout=15) == 128 + signal.SIGTERM
    assert time.monotonic() - sent < 10


def test_a_store_filter_runs_only_that_stores_partitions_and_what_spans_the_stores(
    settings: Settings,
):
    @dg.asset(partitions_def=STORES)
    def scores(): ...

    by_mode = dg.MultiPartitionsDefinition(
        {"store": STORES, "mode": dg.StaticPartitionsDefinition(["plain", "robust"])}
    )
    by_store = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="store")

    @dg.asset(partitions_def=by_mode, deps=[dg.AssetDep(scores, partition_mapping=by_store)])
    def market(): ...

    @dg.asset(deps=[market])  # unpartitioned: runs whatever the filter
    def summary(): ...

    defs = dg.Definitions(assets=[scores, market, summary])
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, stores=["hotel"], defs=defs)
    assert sorted((o.stage, o.partition or "") for o in report.outcomes) == [
        ("market", "plain|hotel"),
        ("market", "robust|hotel"),
        ("scores", "hotel"),
        ("summary", ""),
    ]
    assert all(o.status == Status.OK for o in report.outcomes)


@pytest.mark.slow  # a process-level test (37 s): `make test-all` (CI)
def test_phantom_run_store_hotel_materializes_no_airline_partition(tmp_path: Path):
    (tmp_path / "phantom.toml").write_text(TINY_CONFIG)
    env = {
        **os.environ,
        "PHANTOM_DATA_DIR": str(tmp_path / "data"),
        "DAGSTER_HOME": str(_home(tmp_path)),
        "PHANTOM_CONFIG": str(tmp_path / "phantom.toml"),
    }
    command = [
        PHANTOM,
        "run",
        "--store",
        "hotel",
        "--select",
        "*transition_kernels",
        "--workers",
        "1",
    ]
    result = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        keys = ("store_warehouse", "labeled_sessions", "transition_kernels")
        partitions = {k: instance.get_materialized_partitions(dg.AssetKey(k)) for k in keys}
        unpartitioned = instance.get_latest_materialization_event(dg.AssetKey("sessions"))
    assert partitions["store_warehouse"] == {"hotel"}
    assert partitions["transition_kernels"] == {"agent|hotel", "human|hotel"}
    assert not any("airline" in key for keys_ in partitions.values() for key in keys_)
    assert unpartitioned is not None  # the warehouse spans the stores: it ran
