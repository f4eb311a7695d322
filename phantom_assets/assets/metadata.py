"""Shared helpers for asset metadata and code versions (used by every asset module)."""

from __future__ import annotations

import ast
import base64
import functools
import hashlib
import importlib.util
import io
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import polars as pl

from phantom_assets.columns import COLUMN_DESCRIPTIONS
from phantom_assets.storage import combined_digest, write_bytes_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def code_version_of(*module_names: str) -> str:
    """Hash of the logic of the source files behind the named modules/packages, without
    importing them.

    The asset body plus the pure modules it calls define its logic, so any edit to them changes
    the asset's code version (and marks its materializations stale in the UI). Only the logic
    counts: each file is hashed as its syntax tree without docstrings, so reformatting, comments
    and documentation leave every version -- and every materialization's freshness -- as it was.
    """
    digest = hashlib.sha256()
    for name in sorted(module_names):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"cannot version unknown module {name!r}")
        origin = Path(spec.origin)
        files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
        for path in files:
            digest.update(path.relative_to(PACKAGE_ROOT.parent).as_posix().encode())
            digest.update(logic_of(path))
    return digest.hexdigest()[:16]


@functools.cache
def logic_of(path: Path) -> bytes:
    """The syntax tree of a Python file without docstrings, as bytes: equal for two files that
    differ only in formatting, comments or docstrings."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False).encode()


def column_schema(frame: pl.DataFrame) -> dg.TableSchema:
    """Dagster column schema of a polars frame, each column with its description."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(name, str(dtype), description=COLUMN_DESCRIPTIONS.get(name))
            for name, dtype in frame.schema.items()
        ]
    )


def table_metadata(frame: pl.DataFrame, path: Path, **extra: object) -> dict[str, object]:
    """Row count, column schema and location of a stored table, plus `extra` entries."""
    return {
        "dagster/row_count": frame.height,
        "dagster/column_schema": column_schema(frame),
        "path": dg.MetadataValue.path(str(path)),
        **extra,
    }


def counts_table_markdown(counts: dict[str, int], header: tuple[str, str]) -> str:
    """A two-column markdown table of counts (for asset descriptions in the UI)."""
    rows = "\n".join(f"| {key} | {value:,} |" for key, value in sorted(counts.items()))
    return f"| {header[0]} | {header[1]} |\n|---|---:|\n{rows}"


def figure_markdown(figure: Figure, path: Path, title: str) -> dg.MetadataValue:
    """Save `figure` as PNG at `path` (atomically), close it, and return it as markdown.

    The image is embedded as a data URI so the UI shows it without serving local files.
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    figure.clear()
    png = buffer.getvalue()
    write_bytes_atomic(png, path)
    encoded = base64.b64encode(png).decode()
    return dg.MetadataValue.md(
        f"**{title}** (`{path}`)\n\n![{title}](data:image/png;base64,{encoded})"
    )


def artifact_version(*paths: Path) -> tuple[dg.DataVersion, dict[str, dg.MetadataValue]]:
    """Data version = digest over the stored files (`combined_digest`), plus metadata naming them.

    `phantom audit` re-hashes exactly the files listed under `artifacts` and compares the result
    with the recorded data version, so every asset must go through this helper.
    """
    return dg.DataVersion(combined_digest(paths)), {
        "artifacts": dg.MetadataValue.json(sorted(str(p) for p in paths))
    }
