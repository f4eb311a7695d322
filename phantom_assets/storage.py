"""Atomic, content-addressed file storage for the lake (docs/architecture.md#lake-layout).

Every artifact is written to a temporary file in the destination folder and renamed into place,
so a killed run never leaves a partial artifact; the content hash of what was written becomes the
asset's data version.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from phantom_assets.reads import record_asset_read

HASH_CHUNK_BYTES = 1 << 20


def partition_dir(lake: Path, asset: str, **dims: str) -> Path:
    """Hive-style folder of one partition: `lake/<asset>/<dim>=<value>/...` (dims in call order)."""
    record_asset_read(asset)
    path = lake / asset
    for dim, value in dims.items():
        path = path / f"{dim}={value}"
    return path


def file_digest(path: Path) -> str:
    """SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def combined_digest(paths: Iterable[Path]) -> str:
    """One digest over several files (names relative to their parent + content digests)."""
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.as_posix()):
        digest.update(path.name.encode())
        digest.update(file_digest(path).encode())
    return digest.hexdigest()


def atomic_write(path: Path, write: Callable[[BinaryIO], Any]) -> Path:
    """Write `path` through a temp file beside it (fsynced), then rename it into place.

    The one atomic writer of the project: a killed or failing writer never leaves a partial file
    under the real name; its `.<name>.*.tmp` leftover is removed here on failure, or by
    `remove_stale_temp_files` on the next run after a kill.

    Args:
        path: Destination (its folder is created).
        write: Writes the content to the binary handle it is given.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_parquet_atomic(frame: pl.DataFrame, path: Path) -> str:
    """Write `frame` as parquet atomically; return the file's content digest.

    Statistics and compression are fixed so the same frame always gives the same bytes.
    """
    atomic_write(
        path, lambda handle: frame.write_parquet(handle, compression="zstd", statistics=True)
    )
    return file_digest(path)


def write_json_atomic(payload: Any, path: Path) -> str:
    """Write `payload` as canonical (sorted, indented) JSON atomically; return the digest."""
    text = json.dumps(payload, sort_keys=True, indent=2, default=str) + "\n"
    return write_bytes_atomic(text.encode(), path)


def write_bytes_atomic(data: bytes, path: Path) -> str:
    """Write raw bytes atomically; return the digest."""
    atomic_write(path, lambda handle: handle.write(data))
    return file_digest(path)


def remove_stale_temp_files(folder: Path) -> list[Path]:
    """Delete leftovers of killed writers (`.<name>.*.tmp`) below `folder`; return them."""
    if not folder.exists():
        return []
    stale = [p for p in folder.rglob(".*.tmp") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def read_partitions(lake: Path, asset: str, pattern: str) -> pl.DataFrame | None:
    """Every partition file of a lake asset as one frame, or None if there is none.

    Hive dimensions (`store=hotel/…`) become string columns unless the file already has a column
    of that name (contaminated datasets carry a float `alpha`; their folder says `alpha=a050`).
    """
    record_asset_read(asset)
    files = sorted((lake / asset).glob(pattern))
    if not files:
        return None
    frames = []
    for path in files:  # one iteration per partition file, never per row
        frame = pl.read_parquet(path)
        dims = dict(part.split("=", 1) for part in path.parent.relative_to(lake / asset).parts)
        frames.append(
            frame.with_columns(
                pl.lit(v).alias(k) for k, v in dims.items() if k not in frame.columns
            )
        )
    return pl.concat(frames, how="diagonal_relaxed")
