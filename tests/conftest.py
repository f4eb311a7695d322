"""Shared fixtures: settings rooted in a temp dir, a small simulated drop zone, the dbt manifest."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from phantom_assets.config import Settings, load_settings
from tests.pipeline_helpers import MANIFEST, TINY_SIMULATION


def pytest_sessionstart(session: pytest.Session) -> None:
    """`@dbt_assets` needs a manifest at import time; `make setup` makes it, plain pytest too."""
    if not MANIFEST.exists():
        from dbt.cli.main import dbtRunner

        result = dbtRunner().invoke(
            [
                "parse",
                "--quiet",
                "--project-dir",
                str(MANIFEST.parents[1]),
                "--profiles-dir",
                str(MANIFEST.parents[1]),
            ]
        )
        if not result.success:
            raise RuntimeError(f"dbt parse failed: {result.exception}")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Demo settings with a tiny simulation, rooted at a fresh temp data dir."""
    base = load_settings("demo", data_dir=tmp_path / "data")
    return dataclasses.replace(base, simulation=TINY_SIMULATION)
