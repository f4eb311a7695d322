"""The import graph: layers point one way, no module circle, Dagster internals in one adapter.

Read from the source with `ast` (every import, module-level or inside a function), so a run-time
import counts as much as a top-level one: an asset module importing the module that collects
every asset is a circle even when the import is deferred.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.pipeline_helpers import REPO_ROOT

PACKAGES = ("phantom_assets", "orchestration")
ADAPTER = "phantom_assets.assets.dagster_internals"
# The Dagster layer; everything else under phantom_assets is pure methodology
# (docs/architecture.md#layers).
DAGSTER_LAYER = "phantom_assets.assets"
PURE_FORBIDDEN = ("dagster", "dagster_dbt", "dagster_duckdb", "orchestration")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(*roots: str) -> dict[str, Path]:
    return {_module_name(p): p for root in roots for p in sorted((REPO_ROOT / root).rglob("*.py"))}


def _imports(path: Path, module: str, known: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Absolute names of the modules `path` imports (relative imports resolved).

    `from package import name` imports `package.name` when that is a module of `known` (Python
    then needs none of the package's own names, so it is no edge to the package), else `package`.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                names.add(submodule if submodule in known else base)
    return names


def _project_graph(sources: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports."""
    known = set(sources)
    return {
        module: {name for name in _imports(path, module, known) if name in known and name != module}
        for module, path in sources.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in sorted(graph[node]):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return _project_graph(_sources(*PACKAGES))


def test_the_project_has_no_import_circle(graph):
    assert _cycles(graph) == []


def test_the_circle_finder_finds_a_planted_circle(graph):
    # The check can fail: the v2 audit imported the module that collects every asset.
    planted = {
        **graph,
        "phantom_assets.assets.audit": {
            *graph["phantom_assets.assets.audit"],
            "phantom_assets.assets.graph",
        },
    }
    assert any("phantom_assets.assets.audit" in c for c in _cycles(planted))


def test_only_the_adapter_imports_dagster_internals():
    offenders = sorted(
        f"{module}: {name}"
        for module, path in _sources(*PACKAGES, "tests").items()
        if module != ADAPTER
        for name in _imports(path, module)
        if name.startswith("dagster._")
    )
    assert offenders == []


def test_layers_point_one_way(graph):
    upward = sorted(
        f"{module} -> {name}"
        for module, names in graph.items()
        if module.startswith("phantom_assets")
        for name in names
        if name.startswith("orchestration")
        or (not module.startswith(DAGSTER_LAYER) and name.startswith(DAGSTER_LAYER))
    )
    assert upward == []


def test_pure_packages_import_no_dagster_or_orchestration():
    sources = _sources("phantom_assets")
    offenders = sorted(
        f"{module}: {name}"
        for module, path in sources.items()
        if not module.startswith(DAGSTER_LAYER)
        for name in _imports(path, module)
        if name.split(".")[0] in PURE_FORBIDDEN
    )
    assert offenders == []


def test_private_imports_are_found_at_any_depth(tmp_path: Path):
    source = tmp_path / "planted.py"
    source.write_text("def f():\n    from dagster._core.event_api import PartitionKeyFilter\n")
    assert "dagster._core.event_api" in _imports(source, "planted")
