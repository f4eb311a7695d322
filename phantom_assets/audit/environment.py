"""Snapshot of the software a certification ran with (docs/method.md#lineage-audit).

Python, key package versions and the git revision of the repository. Reads installed metadata
and runs `git`; imports nothing heavy (versions come from `importlib.metadata`).
"""

from __future__ import annotations

import logging
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PACKAGES = (
    "dagster",
    "dagster-dbt",
    "dbt-core",
    "duckdb",
    "polars",
    "numpy",
    "torch",
    "stable-baselines3",
    "gymnasium",
)
GIT_TIMEOUT_S = 10


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (None when it is not installed)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git(repo_root: Path, *args: str) -> str | None:
    try:
        completed = subprocess.run(
            ["git", *args],
            cwd=repo_root,
            capture_output=True,
            text=True,
            check=True,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        logger.info("git %s unavailable in %s: %s", " ".join(args), repo_root, error)
        return None
    return completed.stdout


def git_state(repo_root: Path) -> dict[str, Any]:
    """`{"git_revision": sha | None, "git_dirty": bool | None}` of the repository at `repo_root`.

    Without git (or outside a repository) both are None rather than an error.
    """
    revision = _git(repo_root, "rev-parse", "HEAD")
    if revision is None:
        return {"git_revision": None, "git_dirty": None}
    status = _git(repo_root, "status", "--porcelain", "--untracked-files=no")
    return {
        "git_revision": revision.strip(),
        "git_dirty": None if status is None else bool(status.strip()),
    }


def environment_snapshot(repo_root: Path) -> dict[str, Any]:
    """Python version, platform, key package versions and git revision + dirty flag.

    Args:
        repo_root: Folder of the repository whose revision is recorded.

    Returns:
        A JSON-able dict: `python`, `platform`, `packages` {name: version | None},
        `git_revision`, `git_dirty`.
    """
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": package_versions(),
        **git_state(repo_root),
    }
