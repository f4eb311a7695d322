"""One tiny pipeline, built once per test session by the README's command and shared.

`phantom run` on a fresh data root (the demo simulated into it) with `TINY_CONFIG`: every stage,
tier and mode runs, on budgets small enough for seconds-long runs. Tests that only read "a
built lake" (files, metadata, the instance's event log) share it read-only; a test that changes
anything works on `copy_to(tmp_path)`. Under pytest-xdist the first worker that asks builds it
under a file lock in the session's shared temp folder; the others wait for it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import dagster as dg
from filelock import FileLock

from phantom_assets.config import Settings, load_settings
from tests.pipeline_helpers import REPO_ROOT, TINY_CONFIG

PHANTOM = str(Path(sys.executable).parent / "phantom")
BUILD_TIMEOUT_S = 1800
_DONE, _STDOUT, _STDERR, _RC = "built.ok", "run.stdout", "run.stderr", "run.returncode"
SQLITE_LOGS = ("*.db-wal", "*.db-shm", "*.db-journal")  # a copy takes each database whole


@dataclass(frozen=True)
class BuiltPipeline:
    """A data root, DAGSTER_HOME and config file after `phantom run` (see the module docstring).

    Attributes:
        root: Folder holding `data/`, `dagster_home/`, `phantom.toml` and the run's output.
    """

    root: Path

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    @property
    def config_file(self) -> Path:
        return self.root / "phantom.toml"

    @cached_property
    def settings(self) -> Settings:
        return load_settings("demo", data_dir=self.data_dir, config_file=self.config_file)

    @property
    def env(self) -> dict[str, str]:
        """The environment `phantom` commands on this root run with."""
        return {
            **os.environ,
            "PHANTOM_DATA_DIR": str(self.data_dir),
            "DAGSTER_HOME": str(self.dagster_home),
            "PHANTOM_CONFIG": str(self.config_file),
        }

    @property
    def returncode(self) -> int:
        return int((self.root / _RC).read_text())

    @property
    def stdout(self) -> str:
        return (self.root / _STDOUT).read_text()

    @property
    def stderr(self) -> str:
        return (self.root / _STDERR).read_text()

    @contextlib.contextmanager
    def instance(self) -> Iterator[dg.DagsterInstance]:
        """The run's instance (read it; write only to a copy's)."""
        with dg.DagsterInstance.from_config(str(self.dagster_home)) as instance:
            yield instance

    def phantom(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """Run `phantom ARGS` on this root."""
        return subprocess.run(
            [PHANTOM, *args],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def copy_to(self, folder: Path) -> BuiltPipeline:
        """A private copy to change (lake, warehouse, instance and config; the run's output).

        Other xdist workers read the same instance meanwhile, and SQLite's `-wal`/`-shm` files
        come and go with their connections: each database is copied as one consistent snapshot
        (SQLite's backup API, the log included), the log files themselves not at all.
        """
        target = Path(folder) / "built"
        shutil.copytree(
            self.root,
            target,
            copy_function=_copy_snapshot,
            ignore=shutil.ignore_patterns(*SQLITE_LOGS),
        )
        return BuiltPipeline(target)


def _copy_snapshot(source: str, target: str) -> None:
    if not source.endswith(".db"):
        shutil.copy2(source, target)
        return
    with (
        contextlib.closing(sqlite3.connect(source)) as reader,
        contextlib.closing(sqlite3.connect(target)) as writer,
    ):
        reader.backup(writer)


def build(root: Path, config: str = TINY_CONFIG) -> BuiltPipeline:
    """Run `phantom run` with `config` on a fresh `root` (the demo is simulated into its empty
    drop zone)."""
    built = BuiltPipeline(root)
    root.mkdir(parents=True, exist_ok=True)
    built.config_file.write_text(config)
    run = built.phantom("run", timeout=BUILD_TIMEOUT_S)
    (root / _STDOUT).write_text(run.stdout)
    (root / _STDERR).write_text(run.stderr)
    (root / _RC).write_text(str(run.returncode))
    (root / _DONE).touch()
    return built


def shared_build(
    basetemp: Path, name: str = "built_pipeline", config: str = TINY_CONFIG
) -> BuiltPipeline:
    """The session's build `name` of `config`, made by whichever process asks first (xdist
    workers share the parent of their own temp folders)."""
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    root = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not (root / _DONE).exists():
            if root.exists():
                shutil.rmtree(root)  # a build interrupted earlier in this session
            build(root, config)
    return BuiltPipeline(root)
