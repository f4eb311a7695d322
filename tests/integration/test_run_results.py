"""What a finished tiny `phantom run` leaves: a self-contained data root (moved after the run,
`phantom audit` verifies the moved root, a byte flipped in a copy fails naming the file,
`--replay` re-runs a training step there)."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pipeline_helpers import REPO_ROOT, TINY_CONFIG

pytestmark = pytest.mark.integration

PHANTOM = str(Path(sys.executable).parent / "phantom")
KERNEL = Path("lake/transition_kernels/store=hotel/actor=agent/kernel.parquet")


@dataclass
class Built:
    root: Path
    moved: Path  # the data root after the run, moved away from where it was written
    env: dict[str, str]
    run: subprocess.CompletedProcess


def _phantom(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PHANTOM, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=1500)  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """One tiny `phantom run`, then its data root moved to another path."""
    root = tmp_path_factory.mktemp("portable")
    (root / "phantom.toml").write_text(TINY_CONFIG)
    env = {
        **os.environ,
        "PHANTOM_DATA_DIR": str(root / "data"),
        "DAGSTER_HOME": str(root / "home"),
        "PHANTOM_CONFIG": str(root / "phantom.toml"),
    }
    run = _phantom(env, "run")
    assert run.returncode == 0, run.stderr[-4000:]
    moved = root / "moved" / "data"
    moved.parent.mkdir()
    (root / "data").rename(moved)  # nothing is left where the report was written
    return Built(root, moved, {**env, "PHANTOM_DATA_DIR": str(moved)}, run)


def test_the_report_records_artifact_paths_relative_to_the_data_root(built: Built):
    report = json.loads((built.moved / "lake/certification_report/store=hotel/report.json")
                        .read_text())  # fmt: skip
    artifacts = [a for record in report["records"] for a in record["artifacts"]]
    assert artifacts and not [a for a in artifacts if Path(a).is_absolute()]
    assert all((built.moved / a).is_file() for a in artifacts)
    assert str(KERNEL) in artifacts


def test_audit_verifies_the_root_it_is_pointed_at_and_says_which(built: Built):
    audit = _phantom(built.env, "audit", "--store", "hotel")
    assert audit.returncode == 0, audit.stderr[-3000:]
    assert f"auditing the data root {built.moved}" in audit.stderr


def test_a_byte_flipped_in_a_copy_fails_the_audit_of_the_copy_naming_the_file(built: Built):
    copy = built.root / "copy" / "data"
    shutil.copytree(built.moved, copy)
    target = copy / KERNEL
    tampered = bytearray(target.read_bytes())
    tampered[len(tampered) // 2] ^= 0x01
    target.write_bytes(bytes(tampered))
    failed = _phantom(built.env, "audit", "--store", "hotel", "--data-dir", str(copy))
    assert failed.returncode == 1
    assert f"auditing the data root {copy}" in failed.stderr
    assert "transition_kernels [agent|hotel]: kernel.parquet changed" in failed.stderr
    assert str(copy / KERNEL) in failed.stderr
    assert _phantom(built.env, "audit", "--store", "hotel").returncode == 0  # the moved original


def test_replay_of_a_training_step_works_in_the_moved_root(built: Built):
    replay = _phantom(built.env, "audit", "--store", "hotel", "--replay", "trained_policies")
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert "reproduces data version" in replay.stderr
