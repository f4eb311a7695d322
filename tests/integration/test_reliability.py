"""Reliability: concurrent warehouse runs, killed writers, and secrets that never leak."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import huggingface_hub.constants
import pytest

from orchestration.resources import HubResource, build_resources
from orchestration.runner import run_pipeline
from phantom_assets.config import Settings
from phantom_assets.simulate import simulate_to_incoming
from tests.integration.fake_hub import FakeHub
from tests.pipeline_helpers import REPO_ROOT

pytestmark = pytest.mark.integration

TOKEN = "hf_ReliabilitySecret0123456789abcdefXYZ"


# Two whole `phantom run` processes racing for the warehouse (90 s): a deployment test, in `make
# test-all` (CI) with the other process-level ones.
@pytest.mark.slow
def test_two_runs_touching_the_warehouse_at_once_both_succeed(settings: Settings, tmp_path: Path):
    """DuckDB allows one writer: the `duckdb` pool (limit 1 in dagster.yaml) serialises them."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO_ROOT / "orchestration" / "dagster.yaml").read_text())
    simulate_to_incoming(settings, settings.incoming_dir)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        ingest = run_pipeline(settings, instance, "raw_events")
    assert not ingest.failed
    env = {**os.environ, "DAGSTER_HOME": str(home), "PHANTOM_DATA_DIR": str(settings.data_dir)}
    command = [str(Path(sys.executable).parent / "phantom"), "run", "--select", "group:warehouse"]
    runs = [
        subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs[0][-2000:] + outputs[1][-2000:]


def test_killed_writer_leaves_no_partial_artifact_and_the_next_run_recovers(
    settings: Settings, tmp_path: Path
):
    target = settings.lake_dir / "raw_events" / "batch=x" / "events.parquet"
    writer = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from phantom_assets.storage import atomic_write\n"
        "def slow(handle):\n"
        "    handle.write(b'half a parquet file')\n"
        "    handle.flush()\n"
        "    time.sleep(60)\n"
        "atomic_write(Path(sys.argv[1]), slow)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", writer, str(target)], cwd=REPO_ROOT)
    deadline = time.monotonic() + 30
    while not list(target.parent.glob(".*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    assert not target.exists()  # never a partial artifact under the real name
    assert list(target.parent.glob(".*.tmp"))  # the killed writer's temp file is left behind
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, "raw_events")
    assert not report.failed
    assert not list(settings.data_dir.rglob(".*.tmp"))


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server = FakeHub().start()
    yield server
    server.stop()


def test_publishing_commits_once_privately_and_the_token_reaches_no_log_metadata_or_file(
    settings: Settings, hub: FakeHub
):
    """Session data (user agents, session ids) must land in a private repo by default."""
    simulate_to_incoming(settings, settings.incoming_dir)
    resources = {
        **build_resources(settings),
        "hub": HubResource(repo_id="lab/sessions", token=TOKEN, endpoint=hub.url),
    }
    with dg.instance_for_test() as instance:
        # Sessions only: the kernels and contaminated configs are absent, as `phantom publish`
        # allows (it never checks the instance for upstream runs).
        report = run_pipeline(
            settings,
            instance,
            resources=resources,
            selection="key:raw_events or key:hf_dataset",
            check_upstream=False,
        )
        assert not report.failed
        events = [
            str(entry) for run in instance.get_runs() for entry in instance.all_logs(run.run_id)
        ]
    assert len(hub.state.commits) == 1
    assert hub.state.repos["lab/sessions"].private is True
    plan = json.loads((settings.publish_dir / "last_publish.json").read_text())
    assert (plan["private"], plan["repo_private"], plan["warnings"]) == (True, True, [])
    assert events and not [e for e in events if TOKEN in e]
    for path in settings.data_dir.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
