"""A non-editable `pip install .` works without the checkout around it.

The wheel (`pip wheel --no-build-isolation`: what `pip install .` builds and installs) goes into
a fresh virtualenv that borrows the already-installed dependencies (a `.pth` line to this
interpreter's site-packages: no network). From a directory outside the repository, the code
location must load and the warehouse must build from the installed package's own dbt project,
manifest and dagster.yaml template.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.pipeline_helpers import REPO_ROOT, TINY_CONFIG

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# What `pip install .` reads. Built from a copy: an in-tree build writes build/ and *.egg-info
# into the checkout, and a stale build/lib would put deleted modules into the wheel.
BUILD_INPUTS = ("pyproject.toml", "README.md", "phantom_assets", "orchestration", "dbt_project")
# Run by the new interpreter: where each part of the install comes from.
WHERE_FROM = """
import json, phantom_assets, orchestration
from orchestration.resources import DAGSTER_YAML_TEMPLATE
from phantom_assets.assets.dbt_project import phantom_dbt_project as project
print(json.dumps({
    "phantom_assets": phantom_assets.__file__,
    "orchestration": orchestration.__file__,
    "dbt_project": str(project.project_dir),
    "manifest": str(project.manifest_path) if project.manifest_path.exists() else None,
    "dagster_yaml": str(DAGSTER_YAML_TEMPLATE) if DAGSTER_YAML_TEMPLATE.exists() else None,
}))
"""


def _ignore_build_products(folder: str, names: list[str]) -> set[str]:
    """Skip caches, logs and dbt's run products; keep the parsed manifest."""
    ignored = {n for n in names if n in ("__pycache__", "logs") or n.endswith(".egg-info")}
    if Path(folder).name == "target":
        ignored |= set(names) - {"manifest.json"}
    return ignored


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{args}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A venv holding the wheel of this tree (deps borrowed), and a work dir outside the repo."""
    tmp = tmp_path_factory.mktemp("packaging")
    source = tmp / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        origin = REPO_ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=_ignore_build_products)
        else:
            shutil.copy2(origin, source / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", "dist", str(source)],
        tmp,
        env,
    )
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    python = venv / "bin" / "python"
    pip_venv = [*pip, "--python", str(python)]
    # Installed before the dependencies are borrowed, so pip sees no other phantom-assets.
    _run(
        [*pip_venv, "install", "-q", "--no-deps", *map(str, (tmp / "dist").glob("*.whl"))], tmp, env
    )
    site_packages = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site_packages /= "site-packages"
    borrowed = "\n".join(site.getsitepackages())
    (site_packages / "borrowed_dependencies.pth").write_text(borrowed + "\n")
    # Console scripts of the borrowed dependencies: the dbt resource runs the dbt beside python.
    (venv / "bin" / "dbt").symlink_to(Path(sys.executable).parent / "dbt")
    work = tmp / "work"
    (work / "dagster_home").mkdir(parents=True)  # `phantom` adds the packaged dagster.yaml
    env |= {
        "PHANTOM_DATA_DIR": str(work / "data"),
        "DAGSTER_HOME": str(work / "dagster_home"),
        "PHANTOM_CONFIG": str(work / "tiny.toml"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
    }
    (work / "tiny.toml").write_text(TINY_CONFIG)
    return {
        "source": source,
        "venv": venv,
        "site_packages": site_packages,
        "work": work,
        "env": env,
        "pip": pip_venv,
    }


def test_install_imports_everything_from_its_own_site_packages(installed):
    venv, site_packages, work = installed["venv"], installed["site_packages"], installed["work"]
    found = json.loads(
        _run([str(venv / "bin" / "python"), "-c", WHERE_FROM], work, installed["env"])
    )
    assert Path(found["phantom_assets"]).parent == site_packages / "phantom_assets"
    assert Path(found["orchestration"]).parent == site_packages / "orchestration"
    assert Path(found["dbt_project"]) == site_packages / "phantom_assets" / "dbt_project"
    assert found["manifest"] and Path(found["manifest"]).is_relative_to(site_packages)
    assert found["dagster_yaml"] and Path(found["dagster_yaml"]).is_relative_to(site_packages)


def test_install_holds_every_module_of_the_tree(installed):
    source, site_packages = installed["source"], installed["site_packages"]
    packages = (source / "phantom_assets", source / "orchestration")
    modules = [p.relative_to(source) for package in packages for p in package.rglob("*.py")]
    missing = sorted(str(path) for path in modules if not (site_packages / path).exists())
    assert not missing, f"list their packages under [tool.setuptools] in pyproject: {missing}"


def test_install_passes_pip_check(installed):
    _run([*installed["pip"], "check"], installed["work"], installed["env"])


def test_installed_definitions_validate_outside_the_repository(installed):
    python, work = installed["venv"] / "bin" / "python", installed["work"]
    validate = "-m dagster definitions validate -m orchestration.definitions".split()
    _run([str(python), *validate], work, installed["env"])


def test_installed_phantom_builds_the_warehouse_from_the_packaged_dbt_project(installed):
    venv, work, env = installed["venv"], installed["work"], installed["env"]
    _run([str(venv / "bin" / "phantom"), "simulate"], work, env)
    # The ingest and the first dbt model: enough to run dbt from the package, and quick.
    _run(
        [str(venv / "bin" / "phantom"), "run", "--select", "*stg_events", "--workers", "0"],
        work,
        env,
    )
    with duckdb.connect(str(work / "data" / "warehouse.duckdb"), read_only=True) as conn:
        assert conn.execute("select count(*) from stg_events").fetchone()[0] > 0
    assert (work / "dagster_home" / "dagster.yaml").exists()
    # dbt ran in the installed project: its run products sit beside the packaged manifest.
    target = installed["site_packages"] / "phantom_assets" / "dbt_project" / "target"
    assert any(path.name.startswith("warehouse_models-") for path in target.iterdir())
