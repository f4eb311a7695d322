"""Shared fixtures: settings rooted in a temp dir, a small simulated drop zone, the dbt manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from phantom_assets.config import Settings
from tests.pipeline_helpers import MANIFEST, tiny_settings


def pytest_sessionstart(session: pytest.Session) -> None:
    """`@dbt_assets` needs a current manifest at import time; `make setup` makes it, plain pytest
    too (again whenever a model or YAML file is newer than the manifest)."""
    sources = [*MANIFEST.parents[1].glob("models/**/*"), *MANIFEST.parents[1].glob("*.yml")]
    newest = max((p.stat().st_mtime for p in sources if p.is_file()), default=0.0)
    if not MANIFEST.exists() or MANIFEST.stat().st_mtime < newest:
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
