"""Shared fixtures: settings in a temp dir, the session's built pipeline, the dbt manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from phantom_assets.config import Settings
from tests.built_pipeline import BuiltPipeline, shared_build
from tests.pipeline_helpers import MANIFEST, PLANTED_CONFIG, tiny_settings


def _parse_manifest_if_stale() -> None:
    """`@dbt_assets` needs a current manifest when definitions are built; `make setup` makes it,
    plain pytest too (again whenever a model or YAML file is newer than the manifest)."""
    project = MANIFEST.parents[1]
    sources = [
        *project.glob("models/**/*"),
        *project.glob("*.yml"),
        *project.glob("macros/**/*"),
        *project.glob("tests/**/*"),
    ]
    newest = max((p.stat().st_mtime for p in sources if p.is_file()), default=0.0)
    if MANIFEST.exists() and MANIFEST.stat().st_mtime >= newest:
        return
    from dbt.cli.main import dbtRunner

    args = ["parse", "--quiet", "--project-dir", str(project), "--profiles-dir", str(project)]
    result = dbtRunner().invoke(args)
    if not result.success:
        raise RuntimeError(f"dbt parse failed: {result.exception}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Parse once, before collection and before any xdist worker starts (workers skip it)."""
    if not hasattr(config, "workerinput"):
        _parse_manifest_if_stale()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Demo settings with a tiny simulation, rooted at a fresh temp data dir."""
    return tiny_settings(tmp_path / "data")


@pytest.fixture(scope="session")
def built_pipeline(tmp_path_factory: pytest.TempPathFactory) -> BuiltPipeline:
    """`phantom run` on the tiny config, once per session (read it; change only `copy_to`)."""
    built = shared_build(tmp_path_factory.getbasetemp())
    assert built.returncode == 0, built.stderr[-4000:]
    return built


@pytest.fixture(scope="session")
def planted_pipeline(tmp_path_factory: pytest.TempPathFactory) -> BuiltPipeline:
    """`phantom run` on the planted world where a defence pays (`PLANTED_CONFIG`), once per
    session: the build whose certificates the tests expect to pass."""
    built = shared_build(tmp_path_factory.getbasetemp(), "planted_pipeline", PLANTED_CONFIG)
    assert built.returncode == 0, built.stderr[-4000:]
    return built
