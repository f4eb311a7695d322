"""A live `dagster dev` on 127.0.0.1: the UI renders the asset graph in a real browser, and a run
launched over GraphQL succeeds."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import requests
from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

from orchestration.runner import register_batches
from phantom_assets.config import load_settings
from phantom_assets.simulate import simulate_to_incoming
from tests.pipeline_helpers import (
    REPO_ROOT,
    TINY_SIMULATION,
    simulation_params,
    skip_or_fail_without,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("dagster_dev")]

STARTUP_TIMEOUT_S = 120
RUN_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_server(url: str, process: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dagster dev exited early with code {process.returncode}")
        try:
            if requests.get(f"{url}/server_info", timeout=2).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    raise TimeoutError(f"dagster dev did not answer on {url} within {STARTUP_TIMEOUT_S}s")


@pytest.fixture(scope="module")
def dagster_dev(tmp_path_factory: pytest.TempPathFactory):
    """Start `dagster dev` once per module, in its own process group, on temp state."""
    tmp_path = tmp_path_factory.mktemp("dagster_dev")
    settings = dataclasses.replace(
        load_settings("demo", data_dir=tmp_path / "data"), simulation=TINY_SIMULATION
    )
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(REPO_ROOT / "orchestration" / "dagster.yaml", home / "dagster.yaml")
    simulate_to_incoming(simulation_params(settings), settings.incoming_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        keys, _ = register_batches(settings, instance)
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "PHANTOM_DATA_DIR": str(settings.data_dir),
           # `dagster dev` re-parses the dbt project with the `dbt` beside this interpreter.
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    log = (tmp_path / "dagster_dev.log").open("w")
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "dagster"),
            "dev",
            "-w",
            "workspace.yaml",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_for_server(f"http://127.0.0.1:{port}", process, time.monotonic() + STARTUP_TIMEOUT_S)
        yield port, keys
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def test_dagster_dev_runs_an_ingest_partition_launched_through_graphql(dagster_dev):
    port, keys = dagster_dev
    client = DagsterGraphQLClient("127.0.0.1", port_number=port)
    deadline = time.monotonic() + 60
    while True:  # the code location may still be loading right after the server answers
        try:
            run_id = client.submit_job_execution("ingest_job", tags={"dagster/partition": keys[0]})
            break
        except DagsterGraphQLClientError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    status = client.get_run_status(run_id)
    while (
        status
        not in (
            dg.DagsterRunStatus.SUCCESS,
            dg.DagsterRunStatus.FAILURE,
            dg.DagsterRunStatus.CANCELED,
        )
        and time.monotonic() < deadline
    ):
        time.sleep(2)
        status = client.get_run_status(run_id)
    assert status == dg.DagsterRunStatus.SUCCESS


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_asset_graph_page_renders_the_main_assets_in_headless_chromium(dagster_dev, tmp_path):
    if CHROMIUM is None:
        skip_or_fail_without("Debian's chromium is not installed (.ci/run installs it)")
    port, _ = dagster_dev
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=20000",
            "--window-size=1600,6000",  # the asset list is virtualized: show every row
            "--dump-dom",
            f"http://127.0.0.1:{port}/assets",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    for asset in ("raw_events", "transition_kernels", "divergence_scores", "separability_report"):
        assert asset in dom, f"{asset} is not on the rendered assets page"


def test_the_ui_command_binds_the_webserver_to_localhost_only():
    makefile = (REPO_ROOT / "Makefile").read_text()
    (ui_line,) = [line for line in makefile.splitlines() if "dagster dev" in line]
    assert "-h 127.0.0.1" in ui_line
