"""What `phantom run` tells a user when something is wrong: stage lines in order, a failed run's
cause, a skip's reason, one line for a misspelled selection or a bad config value."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from orchestration.failures import failed_lines, skipped_lines
from orchestration.planning import SelectionError, plan_stages
from orchestration.progress import Progress
from orchestration.runner import Status, run_pipeline
from phantom_assets.config import Settings
from tests.pipeline_helpers import REPO_ROOT, TINY_CONFIG, demo_definitions

pytestmark = pytest.mark.integration

PHANTOM = str(Path(sys.executable).parent / "phantom")
STORES = dg.StaticPartitionsDefinition(["airline", "hotel"])


def test_stage_lines_print_in_stage_order_when_a_later_stage_finishes_first():
    lines: list[str] = []
    progress = Progress.of(["kernels", "scores", "market"], [2, 1, 1], 2, lines.append)
    progress.live = False
    progress.finished(1, "skipped", 0.0)  # skipped as soon as one kernel run failed
    progress.finished(0, "failed", 1.0)
    assert lines == []  # stage 1 is done, but stage 0 still has a run in flight
    progress.finished(0, "ok", 1.0)
    progress.finished(2, "ok", 1.0)
    assert [line.split("]")[0] for line in lines] == ["[1/3", "[2/3", "[3/3"]


def test_a_stage_without_partitions_says_there_is_nothing_to_run():
    lines: list[str] = []
    progress = Progress.of(["raw_events", "warehouse"], [0, 1], 1, lines.append)
    progress.live = False
    progress.finished(1, "ok", 1.0)
    assert lines[0] == "[1/2] raw_events: nothing to run" and lines[1].startswith("[2/2]")


def test_a_failed_run_prints_its_error_and_its_downstream_says_why_it_was_skipped(
    settings: Settings,
):
    @dg.asset(partitions_def=STORES)
    def kernels(context: dg.AssetExecutionContext):
        if context.partition_key == "hotel":
            raise ValueError("kappa must be a finite number >= 0, got -1.0")

    @dg.asset(deps=[kernels])  # unpartitioned: waits for every store's kernels
    def scores(): ...

    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, defs=dg.Definitions(assets=[kernels, scores]))
        (failed,) = report.failed
        cause = failed_lines(instance, failed)
    assert cause[0] == f"FAILED: kernels [hotel] (run {failed.run_id[:8]})"
    assert "    ValueError: kappa must be a finite number >= 0, got -1.0" in cause
    assert any(line.strip().startswith("at ") and "in kernels" in line for line in cause)
    (skipped,) = report.skipped
    assert (skipped.stage, skipped.status) == ("scores", Status.SKIPPED)
    assert skipped_lines(report.skipped) == [
        "SKIPPED: scores: 1 run not run: upstream kernels [hotel] failed"
    ]


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ("*labeled_sesions", "'labeled_sesions' (did you mean 'labeled_sessions'"),
        ("group:warehous", "'warehous' (did you mean 'warehouse'"),
        ("*labeled_sessions +++", "Invalid selection string"),
    ],
)
def test_a_bad_selection_is_one_line_naming_the_closest_asset(selection: str, expected: str):
    with pytest.raises(SelectionError) as raised:
        plan_stages(demo_definitions(), selection)
    message = str(raised.value)
    assert expected in message and "\n" not in message


def _phantom(tmp_path: Path, *args: str, config: str = "") -> subprocess.CompletedProcess:
    (tmp_path / "phantom.toml").write_text(config)
    env = {
        **os.environ,
        "PHANTOM_DATA_DIR": str(tmp_path / "data"),
        "DAGSTER_HOME": str(tmp_path / "home"),
        "PHANTOM_CONFIG": str(tmp_path / "phantom.toml"),
    }
    return subprocess.run(
        [PHANTOM, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_phantom_run_with_a_misspelled_selection_exits_with_one_line_and_simulates_nothing(
    tmp_path: Path,
):
    result = _phantom(tmp_path, "run", "--select", "*labeled_sesions")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "did you mean 'labeled_sessions'" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data" / "incoming").exists()  # no demo for a typo


def test_phantom_run_with_a_mistyped_config_value_fails_at_load_naming_key_and_type(
    tmp_path: Path,
):
    result = _phantom(tmp_path, "run", config='[fingerprint]\nkappa = "half"\n')
    assert result.returncode == 2
    assert "[fingerprint] kappa: expected a number, got 'half'" in result.stderr
    assert str(tmp_path / "phantom.toml") in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()  # nothing simulated, registered or run


def test_phantom_run_with_an_unknown_store_exits_naming_the_closest_and_simulates_nothing(
    tmp_path: Path,
):
    result = _phantom(tmp_path, "run", "--store", "hotel,airlne")
    assert result.returncode == 2
    assert "no store 'airlne' (did you mean 'airline'? stores: hotel, airline)" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_phantom_run_writes_library_warnings_to_its_log_file_not_the_terminal(tmp_path: Path):
    # Why: Dagster's BetaWarnings (partition mappings, observable_source_asset) printed on the
    # terminal, then were silenced outright; in process (`--workers 0`) as in a worker.
    result = _phantom(
        tmp_path, "run", "--select", "raw_events", "--workers", "0", config=TINY_CONFIG
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not [line for line in result.stderr.splitlines() if "Warning" in line], result.stderr
    (log,) = (tmp_path / "data" / "logs").glob("*.log")
    assert "BetaWarning: Class `MultiPartitionMapping`" in log.read_text()
    assert f"library warning(s): {log} (--verbose shows them here)" in result.stderr
