"""A live `dagster dev` on 127.0.0.1: the UI renders the asset graph and the launchpad's typed
settings in a real browser, the launchpad's config schema (over GraphQL) types, describes and
defaults every setting, and a run launched over GraphQL succeeds."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest
import requests
from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

from orchestration.devserver import dagster_dev_command, wait_until_serving
from orchestration.runner import register_batches
from orchestration.scale_out.deployment import child_env, free_port
from phantom_assets.simulate import simulate_to_incoming
from tests.pipeline_helpers import (
    REPO_ROOT,
    skip_or_fail_without,
    tiny_settings,
)

# A live `dagster dev` (and chromium): a UI deployment test, run by `make test-all` and CI.
pytestmark = [pytest.mark.integration, pytest.mark.slow]

STARTUP_TIMEOUT_S = 120
RUN_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def dagster_dev(tmp_path_factory: pytest.TempPathFactory):
    """Start `dagster dev` once per module, in its own process group, on temp state."""
    tmp_path = tmp_path_factory.mktemp("dagster_dev")
    settings = tiny_settings(tmp_path / "data")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(REPO_ROOT / "orchestration" / "dagster.yaml", home / "dagster.yaml")
    simulate_to_incoming(settings, settings.incoming_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        keys, _ = register_batches(settings, instance)
    port = free_port()
    # `dagster dev` re-parses the dbt project with the `dbt` beside this interpreter: first on PATH.
    env = child_env({"DAGSTER_HOME": str(home), "PHANTOM_DATA_DIR": str(settings.data_dir)})
    log_path = tmp_path / "dagster_dev.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        dagster_dev_command(port),
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until_serving(port, process, log_path, STARTUP_TIMEOUT_S)
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


def _dump_dom(url: str, profile: Path, height: int = 6000) -> str:
    """The page at `url` as headless Chromium renders it."""
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            f"--window-size=1600,{height}",  # virtualized lists: show every row
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


def test_asset_graph_page_renders_the_main_assets_in_headless_chromium(dagster_dev, tmp_path):
    if CHROMIUM is None:
        skip_or_fail_without("Debian's chromium is not installed (.ci/run installs it)")
    port, _ = dagster_dev
    dom = _dump_dom(f"http://127.0.0.1:{port}/assets", tmp_path / "profile")
    for asset in ("raw_events", "transition_kernels", "divergence_scores", "separability_report"):
        assert asset in dom, f"{asset} is not on the rendered assets page"


LAUNCHPAD_JOB = "defense_evaluation_job"  # trains and evaluates: settings and training config
CONFIG_SCHEMA_QUERY = """
query LaunchpadSchema($selector: PipelineSelector!) {
  runConfigSchemaOrError(selector: $selector) {
    __typename
    ... on RunConfigSchema {
      rootDefaultYaml
      allConfigTypes {
        key
        ... on CompositeConfigType {
          fields { name description configTypeKey defaultValueAsJson }
        }
      }
    }
  }
}
"""


def _launchpad_schema(port: int) -> dict:
    selector = {
        "repositoryLocationName": "phantom",
        "repositoryName": "__repository__",
        "pipelineName": LAUNCHPAD_JOB,
    }
    response = requests.post(
        f"http://127.0.0.1:{port}/graphql",
        json={"query": CONFIG_SCHEMA_QUERY, "variables": {"selector": selector}},
        timeout=60,
    )
    response.raise_for_status()
    schema = response.json()["data"]["runConfigSchemaOrError"]
    assert schema["__typename"] == "RunConfigSchema", schema
    return schema


def _config_field(schema: dict, name: str, *siblings: str) -> dict:
    """The field `name` of the config type that also has the fields `siblings`."""
    for config_type in schema["allConfigTypes"]:
        fields = {f["name"]: f for f in config_type.get("fields") or []}
        if name in fields and all(s in fields for s in siblings):
            return fields[name]
    raise AssertionError(f"no config type with the fields {name, *siblings}")


def test_the_launchpad_config_schema_has_typed_described_settings_with_defaults(dagster_dev):
    port, _ = dagster_dev
    schema = _launchpad_schema(port)
    yaml = schema["rootDefaultYaml"]
    assert "settings_json" not in yaml  # the settings were one JSON string
    assert "kappa: 0.5" in yaml and "alpha_grid:" in yaml and "ppo_n_steps: 250" in yaml
    kappa = _config_field(schema, "kappa", "folds", "temperature")
    assert kappa["configTypeKey"].endswith("Float") and kappa["defaultValueAsJson"] == "0.5"
    assert "smoothing" in kappa["description"]
    net_arch = _config_field(schema, "net_arch", "ppo_n_steps")  # trained_policies' config
    assert net_arch["defaultValueAsJson"] == "[64, 64]" and net_arch["description"]


def test_the_launchpad_page_renders_the_settings_as_typed_fields_with_defaults(
    dagster_dev, tmp_path
):
    if CHROMIUM is None:
        skip_or_fail_without("Debian's chromium is not installed (.ci/run installs it)")
    port, _ = dagster_dev
    url = f"http://127.0.0.1:{port}/locations/phantom/jobs/{LAUNCHPAD_JOB}/playground"
    text = re.sub(r"<[^>]+>", "", _dump_dom(url, tmp_path / "profile"))  # the editor's lines
    for line in ("kappa: 0.5", "ppo_n_steps: 250", "max_human_harm: 0.02"):
        assert line in text, f"the launchpad's config editor does not show {line!r}"
    assert "settings_json" not in text


def test_the_ui_command_binds_the_webserver_to_localhost_only():
    makefile = (REPO_ROOT / "Makefile").read_text()
    (ui_line,) = [line for line in makefile.splitlines() if "dagster dev" in line]
    assert "-h 127.0.0.1" in ui_line
