"""The batch registry: one record per ingested raw file, keyed `<YYYYMMDD>_<sha256[:10]>`.

A batch key names the content, not the file: re-registering the same bytes (even renamed or copied
again later) returns the existing key, so re-ingest is idempotent (docs/method.md#bad-input). The
date part is the file's modification day (UTC) at first registration, which keeps keys sortable by
arrival.

The demo's simulated files live in their own folder, `incoming/demo/`, and their records carry
`demo: true`, so a user's own exports are never mistaken for (or pooled with) the demo.

A record stores its file's path relative to the data root, so a copied or moved root keeps its
batches (`BatchRegistry`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path

from phantom_assets.schema.raw_formats import EXPERIMENTS_SIDECAR_NAME, EXPERIMENTS_SIDECAR_SUFFIX
from phantom_assets.storage import file_digest, write_bytes_atomic, write_json_atomic

BATCH_KEY_PATTERN = re.compile(r"^\d{8}_[0-9a-f]{10}$")
REGISTRY_FOLDER = "batch_registry"
LAST_DROP_FILE = "last_drop.txt"  # when a batch was last dropped: what read it must rebuild
DEMO_FOLDER = "demo"  # incoming/demo/: where `phantom run` simulates the demo into an empty root
DROPPED_FOLDER = "dropped"  # <data>/dropped/: a user's files of dropped batches (never deleted)
# In-flight uploads and editor droppings are never batches.
_IGNORED_SUFFIXES = (".tmp", ".part", ".partial", ".crdownload", ".swp")


@dataclass(frozen=True)
class BatchRecord:
    """Where a batch's bytes live and what they hash to."""

    key: str
    path: str
    sha256: str
    size: int
    registered_at: str | None = None  # ISO-8601 UTC; None for records of older versions
    demo: bool = False  # simulated by `phantom run` into incoming/demo/

    @property
    def source(self) -> Path:
        return Path(self.path)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def batch_key(sha256: str, modified: datetime) -> str:
    """Batch key from a content digest and a modification time: `20250602_1a2b3c4d5e`."""
    if len(sha256) < 10:
        raise ValueError(f"sha256 digest too short: {sha256!r}")
    return f"{modified.astimezone(UTC):%Y%m%d}_{sha256[:10]}"


def is_candidate_file(path: Path) -> bool:
    """True for files in the drop zone that are data batches (not sidecars, hidden or partial)."""
    name = path.name
    return (
        path.is_file()
        and not name.startswith(".")
        and not name.endswith(_IGNORED_SUFFIXES)
        and name != EXPERIMENTS_SIDECAR_NAME
        and not name.endswith(EXPERIMENTS_SIDECAR_SUFFIX)
        and name.lower() != "readme.md"
    )


def demo_dir(incoming: Path) -> Path:
    """The demo's own folder inside the drop zone."""
    return incoming / DEMO_FOLDER


def is_demo_file(path: Path, incoming: Path) -> bool:
    """True for a file under `incoming/demo/` (simulated by `phantom run`, not the user's)."""
    return path.resolve().is_relative_to(demo_dir(incoming).resolve())


def own_sidecar(path: Path) -> Path | None:
    """The experiments sidecar that belongs to `path` alone (`<stem>.experiments.csv`), if any.

    A folder-wide `experiments.csv` serves several files and is never moved with one of them.
    """
    sidecar = path.with_name(path.stem + EXPERIMENTS_SIDECAR_SUFFIX)
    return sidecar if sidecar.is_file() else None


def candidate_files(incoming: Path) -> list[Path]:
    """Data files in the drop zone, sorted by path for a deterministic order."""
    if not incoming.exists():
        return []
    return sorted(p for p in incoming.rglob("*") if is_candidate_file(p))


class BatchRegistry:
    """JSON records under `lake/batch_registry/<key>.json` (atomic writes).

    A record stores its file's path relative to the data root (the lake's parent folder); the
    records read back carry the absolute path under the current root, so a copied root (`cp -r
    data /tmp/copy`) counts each file once and points at its own files. Records of older versions
    hold absolute paths: one under another root names the file at the same path under this root
    when that file has the record's content hash (that record is then rewritten relative, so the
    hash is computed once); otherwise it keeps its absolute path.
    """

    def __init__(self, lake: Path) -> None:
        self.root = lake / REGISTRY_FOLDER
        self.data_dir = lake.parent  # stored paths are relative to it

    def records(self) -> list[BatchRecord]:
        if not self.root.exists():
            return []
        return [self._read(p) for p in sorted(self.root.glob("*.json"))]

    def get(self, key: str) -> BatchRecord:
        path = self.root / f"{key}.json"
        if not path.exists():
            raise KeyError(f"batch {key!r} is not registered (no {path})")
        return self._read(path)

    def register(
        self, path: Path, *, demo: bool = False, registered_at: datetime | None = None
    ) -> tuple[BatchRecord, bool]:
        """Register `path`; return its record and whether it is new (unseen content).

        Args:
            path: the batch file.
            demo: tag the record as the demo's (a new record only; the content decides the key).
            registered_at: when, for the record (the caller's clock; None leaves it unset).
        """
        digest, source = file_digest(path), str(path.resolve())
        for record in self.records():
            if record.sha256 == digest:
                if record.path != source and not record.source.exists():
                    record = replace(record, path=source)
                    self._write(record)
                return record, False
        modified = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        when = None if registered_at is None else registered_at.astimezone(UTC).isoformat()
        record = BatchRecord(
            batch_key(digest, modified),
            source,
            digest,
            path.stat().st_size,
            registered_at=when,
            demo=demo,
        )
        self._write(record)
        return record, True

    def remove(self, key: str) -> BatchRecord:
        """Delete the record of `key` and return it (KeyError naming the key if unregistered)."""
        record = self.get(key)
        (self.root / f"{key}.json").unlink()
        write_bytes_atomic(datetime.now(UTC).isoformat().encode(), self.root / LAST_DROP_FILE)
        return record

    def last_drop(self) -> datetime | None:
        """When a batch was last removed (None: never). A removed partition leaves what read it
        looking up to date to Dagster (nothing upstream is newer), so `phantom run` compares."""
        path = self.root / LAST_DROP_FILE
        return datetime.fromisoformat(path.read_text()) if path.exists() else None

    def _write(self, record: BatchRecord) -> None:
        """Store `record` with its path relative to the data root (absolute if outside it)."""
        source, base = record.source, self.data_dir.resolve()
        stored = source.relative_to(base).as_posix() if source.is_relative_to(base) else record.path
        write_json_atomic({**record.to_json(), "path": stored}, self.root / f"{record.key}.json")

    def _read(self, path: Path) -> BatchRecord:
        """The record stored at `path`, its path made absolute under the current data root."""
        payload = json.loads(path.read_text())
        known = {f.name for f in fields(BatchRecord)}
        record = BatchRecord(**{k: v for k, v in payload.items() if k in known})
        stored, base = record.source, self.data_dir.resolve()
        if not stored.is_absolute():
            return replace(record, path=str(base / stored))
        if stored.is_relative_to(base):  # an older version's record of this root
            return record
        here = self._same_file_here(record)
        if here is None:
            return record
        record = replace(record, path=str(here))
        self._write(record)  # now relative: the next read hashes nothing
        return record

    def _same_file_here(self, record: BatchRecord) -> Path | None:
        """The file under this data root that an older record's absolute path under another root
        names: the longest tail of that path that exists here with the record's content hash."""
        base, stored = self.data_dir.resolve(), record.source
        parts = stored.relative_to(stored.anchor).parts
        for start in range(len(parts)):
            here = base.joinpath(*parts[start:])
            if (
                here.is_file()
                and here.stat().st_size == record.size
                and file_digest(here) == record.sha256
            ):
                return here
        return None


def file_signatures(files: list[Path]) -> dict[str, list[int]]:
    """(size, mtime_ns) per file path: what the drop-zone sensor compares between ticks."""
    return {str(p): [p.stat().st_size, p.stat().st_mtime_ns] for p in files}


def settled_files(current: dict[str, list[int]], previous: dict[str, list[int]]) -> list[Path]:
    """Files whose size and modification time did not change since the previous look.

    A file still being written changes between two looks and is skipped until it settles; a file
    seen for the first time waits one look. Needs no clock, so sensor ticks stay deterministic.
    """
    return [Path(path) for path, sig in sorted(current.items()) if previous.get(path) == sig]
