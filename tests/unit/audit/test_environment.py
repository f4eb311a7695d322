"""Environment snapshot: package versions and git state."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from phantom_assets.audit import environment_snapshot
from phantom_assets.audit.environment import PACKAGES

GIT = ["git", "-c", "user.name=audit", "-c", "user.email=audit@example.invalid"]


def test_environment_snapshot_records_python_and_every_package(tmp_path):
    snapshot = environment_snapshot(tmp_path)
    assert snapshot["python"] == ".".join(map(str, sys.version_info[:3]))
    assert set(snapshot["packages"]) == set(PACKAGES)
    assert snapshot["packages"]["numpy"] == np.__version__


def test_environment_snapshot_tolerates_a_folder_outside_git(tmp_path):
    snapshot = environment_snapshot(tmp_path)
    assert snapshot["git_revision"] is None and snapshot["git_dirty"] is None


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git executable")
def test_environment_snapshot_records_revision_and_dirty_flag(tmp_path: Path):
    def git(*args: str) -> str:
        return subprocess.run(
            [*GIT, *args], cwd=tmp_path, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "file.txt").write_text("one\n")
    git("add", "file.txt")
    git("commit", "-q", "--no-gpg-sign", "-m", "first")
    clean = environment_snapshot(tmp_path)
    assert clean["git_revision"] == git("rev-parse", "HEAD")
    assert len(clean["git_revision"]) == 40 and clean["git_dirty"] is False
    (tmp_path / "file.txt").write_text("two\n")
    assert environment_snapshot(tmp_path)["git_dirty"] is True
