"""Shared fixtures: settings rooted in a temp dir, a small simulated drop zone, the dbt manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from phantom_assets.config import Settings
from tests.pipeline_helpers import MANIFEST, tiny_settings


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
    return tiny_settings(tmp_path / "data")
