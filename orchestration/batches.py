"""`phantom batches list | drop KEY | reset [--demo]` and the checks `phantom run` makes before it
registers anything: the demo kept apart from a user's data, rows of unsupported stores announced.

A batch is removed everywhere a run reads it from: its `raw_events` and quarantine partition
files, its registry record and its dynamic partition key. dbt reads every
`lake/raw_events/batch=*`, so the next `phantom run` rebuilds the warehouse, and everything
downstream, from the batches that remain. The source file leaves the drop zone too (or it would be
registered again): a user's file is moved to `<data>/dropped/`, never deleted; a demo file
(simulated, reproducible) is deleted.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import polars as pl

from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.batches import (
    DROPPED_FOLDER,
    BatchRecord,
    BatchRegistry,
    candidate_files,
    demo_dir,
    is_demo_file,
    own_sidecar,
)
from phantom_assets.config import Settings
from phantom_assets.constants import LEGACY_STORE, STORES
from phantom_assets.schema import UnreadableFileError, store_counts

RESET_DEMO = "phantom batches reset --demo"


@dataclass(frozen=True)
class BatchInfo:
    """One registered batch as `phantom batches list` shows it (counts None: not ingested yet)."""

    record: BatchRecord
    stores: tuple[str, ...]
    rows: int | None
    quarantined: int | None

    @property
    def ingested(self) -> bool:
        return self.rows is not None

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.record.key,
            "source": self.record.path,
            "demo": self.record.demo,
            "registered_at": self.record.registered_at,
            "stores": list(self.stores),
            "rows": self.rows,
            "quarantined": self.quarantined,
            "source_present": self.record.source.exists(),
        }


def _rows(path: Path) -> int | None:
    return pl.scan_parquet(path).select(pl.len()).collect().item() if path.exists() else None


def batch_infos(settings: Settings) -> list[BatchInfo]:
    """Every registered batch with its stores and row counts from the lake, by key."""
    infos = []
    for record in BatchRegistry(settings.lake_dir).records():
        events = settings.lake.events(record.key)
        stores = (
            tuple(
                pl.scan_parquet(events).select(pl.col("store").unique().sort()).collect()["store"]
            )
            if events.exists()
            else ()
        )
        quarantine = settings.lake.quarantine(record.key)
        infos.append(BatchInfo(record, stores, _rows(events), _rows(quarantine)))
    return infos


def render_batches(infos: Iterable[BatchInfo], data_dir: Path) -> str:
    """`phantom batches list` as a table (source paths relative to the data root)."""
    rows = [("key", "kind", "source", "stores", "rows", "quarantined", "registered (UTC)")]
    for info in infos:
        record = info.record
        source, root = record.source, data_dir.resolve()
        shown = str(source.relative_to(root) if source.is_relative_to(root) else source)
        rows.append(
            (
                record.key,
                "demo" if record.demo else "own",
                shown + ("" if source.exists() else " (file gone)"),
                ",".join(info.stores) or "-",
                "-" if info.rows is None else f"{info.rows:,}",
                "-" if info.quarantined is None else f"{info.quarantined:,}",
                (record.registered_at or "-")[:19].replace("T", " "),
            )
        )
    if len(rows) == 1:
        return f"no batches registered in {data_dir}"
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _move_aside(source: Path, folder: Path) -> Path:
    """Move a user's file into `folder` (never overwriting a file there) and return where."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    index = 1
    while target.exists():
        target = folder / f"{source.stem}.{index}{source.suffix}"
        index += 1
    shutil.move(source, target)
    return target


def drop_batch(settings: Settings, instance: dg.DagsterInstance, key: str) -> list[str]:
    """Remove batch `key` everywhere; return what was done, one line each.

    Raises:
        KeyError: `key` is not registered (the message lists the registered keys).
    """
    registry = BatchRegistry(settings.lake_dir)
    try:
        record = registry.get(key)
    except KeyError:
        known = ", ".join(r.key for r in registry.records()) or "none"
        raise KeyError(f"batch {key!r} is not registered (registered: {known})") from None
    done = []
    for folder in (settings.lake.events(key).parent, settings.lake.quarantine(key).parent):
        if folder.exists():
            shutil.rmtree(folder)
            done.append(f"removed {folder}")
    incoming = settings.incoming_dir.resolve()
    for source in (record.source, own_sidecar(record.source)):
        if source is None or not source.exists():
            continue
        if not source.resolve().is_relative_to(incoming):  # e.g. a copied root's registry
            done.append(f"left {source} alone: it is not in this data root's {incoming}")
        elif record.demo:
            source.unlink()
            done.append(f"deleted demo file {source}")
        else:
            moved = _move_aside(source, settings.data_dir / DROPPED_FOLDER)
            done.append(f"moved your file {source} to {moved}")
    registry.remove(key)
    if instance.has_dynamic_partition(BATCH_PARTITIONS_NAME, key):
        instance.delete_dynamic_partition(BATCH_PARTITIONS_NAME, key)
    done.append(f"dropped batch {key}: the next `phantom run` rebuilds without it")
    return done


def reset_batches(
    settings: Settings, instance: dg.DagsterInstance, *, demo_only: bool
) -> list[str]:
    """Drop every batch (or every demo batch) and, for the demo, its folder in the drop zone;
    return a short account (the files of yours that moved are named one by one)."""
    records = [r for r in BatchRegistry(settings.lake_dir).records() if r.demo or not demo_only]
    done = [drop_batch(settings, instance, record.key) for record in records]
    moved = [line for lines in done for line in lines if line.startswith("moved")]
    deleted = sum(line.startswith("deleted demo file") for lines in done for line in lines)
    kind = "demo " if demo_only else ""
    summary = [
        f"dropped {len(records)} {kind}batch(es): lake partitions, registry records and "
        f"partition keys removed; {deleted} demo file(s) deleted",
        *moved,
    ]
    demo = demo_dir(settings.incoming_dir)
    if demo.exists():
        shutil.rmtree(demo)
        summary.append(f"removed {demo}")
    if is_empty_root(settings):
        summary.append(
            "no batches left: the next `phantom run` simulates the demo again, "
            f"unless you drop files into {settings.incoming_dir} first"
        )
    return summary


def is_empty_root(settings: Settings) -> bool:
    """No batch registered and no file waiting in the drop zone: the demo may be simulated."""
    return not BatchRegistry(settings.lake_dir).records() and not candidate_files(
        settings.incoming_dir
    )


def allowed_stores(settings: Settings) -> tuple[str, ...]:
    return (*STORES, LEGACY_STORE) if settings.accept_legacy_store else STORES


def mixing_problem(settings: Settings) -> str | None:
    """A message when the demo's batches and the user's own data would be analysed together
    (`phantom run` stops, the drop-zone sensor skips its tick)."""
    records = BatchRegistry(settings.lake_dir).records()
    files = candidate_files(settings.incoming_dir)
    registered = {r.path for r in records}
    incoming = settings.incoming_dir
    demo = [r for r in records if r.demo] + [
        f for f in files if is_demo_file(f, incoming) and str(f.resolve()) not in registered
    ]
    own = [r.source for r in records if not r.demo] + [
        f for f in files if not is_demo_file(f, incoming) and str(f.resolve()) not in registered
    ]
    if not demo or not own:
        return None
    names = ", ".join(p.name for p in own[:3]) + (", ..." if len(own) > 3 else "")
    return (
        f"{settings.data_dir} holds the demo ({len(demo)} simulated batches in "
        f"{demo_dir(incoming)}) and {len(own)} file(s) of your own ({names}); analysing them "
        f"together would pool the demo's simulated sessions with yours. Remove the demo with "
        f"`{RESET_DEMO}` (your files stay), then `phantom run` again."
    )


def idle_tick_reason(
    incoming: Path, current: dict[str, list[int]], previous: dict[str, list[int]]
) -> str:
    """Why a drop-zone tick that found no new batch requests nothing, and what resolves it.

    Args:
        incoming: the drop zone.
        current: `file_signatures` of its files now.
        previous: their signatures at the previous tick (the sensor's cursor).
    """
    if not current:
        return (
            f"no data file in {incoming}: drop an export there (one file = one batch; "
            "`phantom run` simulates the demo into an empty data root)"
        )
    first_seen = sum(path not in previous for path in current)
    writing = sum(path in previous and previous[path] != sig for path, sig in current.items())
    if first_seen or writing:
        return (
            f"no new file in {incoming} ready yet (still being written: {writing}, seen for the "
            f"first time: {first_seen}): a file is registered once its size and modification "
            "time stay the same from one tick to the next"
        )
    return (
        f"no new file in {incoming}: its {len(current)} file(s) are registered batches "
        "(`phantom batches list` shows them); drop a new export there to ingest it"
    )


def _store_notes(settings: Settings, files: list[Path]) -> list[str]:
    """Warnings about the `storeMode` values of files that were never registered: their rows of
    unsupported stores will be quarantined (bad rows never stop a run, even all of a file's)."""
    allowed = allowed_stores(settings)
    notes = []
    for path in files:
        try:
            counts = store_counts(path)
        except UnreadableFileError:
            continue  # its ingest run fails with the reader's message
        unknown = {store: n for store, n in counts.items() if store not in allowed}
        if not unknown:
            continue
        found = ", ".join(
            f"{s!r} ({n:,} rows)" if s else f"missing ({n:,} rows)"
            for s, n in sorted(unknown.items(), key=lambda kv: -kv[1])
        )
        hint = f"storeMode must be one of {', '.join(allowed)}"
        if LEGACY_STORE in unknown:
            hint += f" ('{LEGACY_STORE}' is accepted with `accept_legacy_store = true`)"
        if sum(unknown.values()) == sum(counts.values()):
            notes.append(
                f"{path}: no row has a supported store: storeMode {found} will be "
                f"quarantined as unknown_store and the file adds 0 events; {hint}. "
                "Fix the column or remove the file."
            )
        else:
            notes.append(f"{path}: storeMode {found} will be quarantined as unknown_store; {hint}")
    return notes


def preflight(settings: Settings) -> tuple[list[str], list[str]]:
    """What `phantom run` checks before registering anything: (errors that stop it, notes).

    Errors: the demo and the user's own files would be pooled. Notes: rows of unsupported stores
    that will be quarantined (all of a file's, too); registered batches whose file left the drop
    zone (still analysed until dropped).
    """
    records = BatchRegistry(settings.lake_dir).records()
    files = candidate_files(settings.incoming_dir)
    registered = {r.path for r in records}
    new_files = [f for f in files if str(f.resolve()) not in registered]
    notes = _store_notes(settings, new_files)
    mixing = mixing_problem(settings)
    errors = [mixing] if mixing else []
    notes += [
        f"batch {r.key}: its file {r.path} is gone from the drop zone; the batch is still "
        f"analysed (`phantom batches drop {r.key}` removes it)"
        for r in records
        if not r.source.exists() and not r.demo
    ]
    return errors, notes
