"""Stage the Hub dataset folder: session table, extra configs and the card
(docs/architecture.md#publishing).

`stage_dataset` writes everything into a temp sibling of the target and renames it into place,
so a reader sees either the previous complete folder or the new complete folder, never a mix.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import polars as pl

from phantom_assets.publish.card import CardParams, ConfigInfo, check_card, render_card
from phantom_assets.publish.table import uncastable_metadata, whoclickedit_table

__all__ = [
    "CARD_PATH",
    "CONFIG_PATHS",
    "CONTAMINATED_COLUMNS",
    "KERNEL_COLUMNS",
    "SESSIONS_CSV",
    "PublishInputs",
    "StagedDataset",
    "stage_dataset",
]

logger = logging.getLogger(__name__)

CONFIG_PATHS: Final[dict[str, str]] = {
    "sessions": "data/sessions/sessions.parquet",
    "kernels": "data/kernels/kernels.parquet",
    "contaminated": "data/contaminated/contaminated.parquet",
}
SESSIONS_CSV: Final[str] = "data/sessions/sessions.csv"
CARD_PATH: Final[str] = "README.md"
KERNEL_COLUMNS: Final[tuple[str, ...]] = ("store", "actor", "src", "dst", "count", "prob")
CONTAMINATED_COLUMNS: Final[tuple[str, ...]] = (
    "session_id",
    "source",
    "actor",
    "alpha",
    "n_events",
    "f",
    "trajectory",
)
_DESCRIPTIONS: Final[dict[str, str]] = {
    "sessions": "One row per event or price quote, `whoclickedit` layout; `ts` in epoch ms (UTC).",
    "kernels": "Transition kernels per store and actor class: `count` transitions `src -> dst` "
    "and smoothed probability `prob` (rows over `src` sum to 1; `<start>`/`<end>` included).",
    "contaminated": "Generator G(alpha): real human sessions plus synthetic agent sessions at "
    "contamination level `alpha`, one row per session with its detector score `f`.",
}


@dataclass(frozen=True, eq=False)
class PublishInputs:
    """Frames to publish; the optional ones add a config when present.

    Attributes:
        events: Canonical events (`raw_events` rows, `schema.CANONICAL_SCHEMA`).
        kernels: Transition kernels with `store, actor, src, dst, count, prob` (+ e.g. `fold`).
        contaminated: Contaminated datasets with `session_id, source, actor, alpha, n_events, f,
            trajectory` (+ e.g. `store`, `product_ids`, `ts`).
        card: What the card says besides counts.
    """

    events: pl.DataFrame
    kernels: pl.DataFrame | None = None
    contaminated: pl.DataFrame | None = None
    card: CardParams = field(default_factory=CardParams)


@dataclass(frozen=True)
class StagedDataset:
    """A complete staged folder.

    Attributes:
        path: The folder.
        files: Paths of every file inside, relative and POSIX-style, sorted.
        configs: Config names present, the default (`sessions`) first.
        counts: `rows`, `sessions`, `rows_<config>` per config and
            `metadata_values_dropped`.
    """

    path: Path
    files: tuple[str, ...]
    configs: tuple[str, ...]
    counts: dict[str, int]


def _require(frame: pl.DataFrame, columns: tuple[str, ...], what: str) -> pl.DataFrame:
    """Return `frame` with `columns` first; ValueError naming any missing column."""
    missing = [name for name in columns if name not in frame.columns]
    if missing:
        raise ValueError(f"{what} frame lacks columns {missing}; it has {frame.columns}")
    rest = [name for name in frame.columns if name not in columns]
    return frame.select(*columns, *rest)


def _extra_configs(inputs: PublishInputs) -> dict[str, pl.DataFrame]:
    """The optional configs present, validated and sorted deterministically."""
    extra: dict[str, pl.DataFrame] = {}
    if inputs.kernels is not None:
        kernels = _require(inputs.kernels, KERNEL_COLUMNS, "kernels")
        keys = [c for c in ("store", "actor", "fold") if c in kernels.columns]
        # Stable sort: within one kernel the (src, dst) order of the input is kept.
        extra["kernels"] = kernels.sort(keys, nulls_last=True, maintain_order=True)
    if inputs.contaminated is not None:
        frame = _require(inputs.contaminated, CONTAMINATED_COLUMNS, "contaminated")
        keys = [c for c in ("store", "alpha", "source", "session_id") if c in frame.columns]
        extra["contaminated"] = frame.sort(keys, nulls_last=True, maintain_order=True)
    return extra


def _groups(table: pl.DataFrame) -> list[dict[str, object]]:
    """Sessions and rows per store x actor (`unknown` for unlabeled)."""
    return (
        table.group_by(
            pl.col("storeMode").fill_null("unknown").alias("store"),
            pl.col("actor_type").fill_null("unknown").alias("actor"),
        )
        .agg(sessions=pl.col("sessionId").n_unique(), rows=pl.len())
        .sort("store", "actor")
        .to_dicts()
    )


def _columns(frame: pl.DataFrame) -> tuple[tuple[str, str], ...]:
    """(name, dtype) pairs for the card's schema table."""
    return tuple((name, str(dtype)) for name, dtype in frame.schema.items())


def _write_folder(
    folder: Path, table: pl.DataFrame, extra: dict[str, pl.DataFrame], card: str
) -> list[str]:
    """Write every file of the dataset into `folder`; return their relative paths."""
    frames = {"sessions": table, **extra}
    for name, frame in frames.items():
        target = folder / CONFIG_PATHS[name]
        target.parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(target)
    table.write_csv(folder / SESSIONS_CSV)
    (folder / CARD_PATH).write_text(card, encoding="utf-8")
    return sorted([CARD_PATH, SESSIONS_CSV, *(CONFIG_PATHS[name] for name in frames)])


def write_folder_atomically(out_dir: Path, write: Callable[[Path], list[str]]) -> list[str]:
    """Let `write` fill a fresh temp folder beside `out_dir` (returning the files it wrote), then
    swap it into place whole; on any failure the temp folder is removed and `out_dir` is left as
    it was."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.tmp."))
    try:
        files = write(staging)
        _swap_into_place(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return files


def _swap_into_place(staging: Path, out_dir: Path) -> None:
    """Rename `staging` to `out_dir`, replacing an existing folder there."""
    if not out_dir.exists():
        os.replace(staging, out_dir)
        return
    if not out_dir.is_dir():
        raise ValueError(f"publish target {out_dir} exists and is not a folder")
    retired = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.old."))
    os.replace(out_dir, retired / "previous")
    os.replace(staging, out_dir)
    shutil.rmtree(retired)


def stage_dataset(inputs: PublishInputs, out_dir: Path) -> StagedDataset:
    """Write the Hub dataset folder `out_dir` atomically and describe what it holds.

    Layout: `data/sessions/sessions.{parquet,csv}` (default config), optional
    `data/kernels/kernels.parquet` and `data/contaminated/contaminated.parquet`, and `README.md`
    (the dataset card whose `configs` name exactly the configs written).

    Args:
        inputs: Frames and card parameters.
        out_dir: Target folder; its parent is created; an existing folder is replaced whole.

    Returns:
        The `StagedDataset` (files, configs, counts).

    Raises:
        ValueError: no events, an input frame lacks required columns, or the card fails
            `check_card` (e.g. an empty tag list).
    """
    if inputs.events.height == 0:
        raise ValueError("events frame is empty; there is no session table to publish")
    table = whoclickedit_table(inputs.events)
    extra = _extra_configs(inputs)
    dropped = sum(uncastable_metadata(inputs.events).values())
    counts = {
        "rows": table.height,
        "sessions": table["sessionId"].n_unique(),
        "rows_sessions": table.height,
        **{f"rows_{name}": frame.height for name, frame in extra.items()},
        "metadata_values_dropped": dropped,
    }
    configs = [
        ConfigInfo(name, CONFIG_PATHS[name], frame.height, _columns(frame), _DESCRIPTIONS[name])
        for name, frame in {"sessions": table, **extra}.items()
    ]
    card = render_card(inputs.card, configs, counts, _groups(table))
    problems = check_card(card)
    if problems:
        raise ValueError(f"the dataset card fails the offline card checks: {problems}")
    out_dir = Path(out_dir)
    files = write_folder_atomically(
        out_dir, lambda folder: _write_folder(folder, table, extra, card)
    )
    logger.info("staged %s: %s", out_dir, counts)
    return StagedDataset(
        path=out_dir,
        files=tuple(files),
        configs=tuple(c.name for c in configs),
        counts=counts,
    )
