"""Atomic writes and content digests."""

from pathlib import Path

import polars as pl
import pytest

from phantom_assets.storage import (
    atomic_write,
    file_digest,
    partition_dir,
    read_partitions,
    remove_stale_temp_files,
    write_json_atomic,
    write_parquet_atomic,
)


def test_partition_dir_is_hive_style(tmp_path: Path):
    path = partition_dir(tmp_path, "transition_kernels", store="hotel", actor="human")
    assert path == tmp_path / "transition_kernels" / "store=hotel" / "actor=human"


def test_write_parquet_atomic_is_deterministic_and_returns_the_file_digest(tmp_path: Path):
    frame = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    first = write_parquet_atomic(frame, tmp_path / "one" / "t.parquet")
    second = write_parquet_atomic(frame, tmp_path / "two" / "t.parquet")
    assert first == second == file_digest(tmp_path / "one" / "t.parquet")
    assert pl.read_parquet(tmp_path / "one" / "t.parquet").equals(frame)


def test_failed_write_leaves_neither_partial_file_nor_temp(tmp_path: Path):
    target = tmp_path / "bad.parquet"

    def half_then_fail(handle) -> None:
        handle.write(b"half a file")
        raise RuntimeError("writer died")

    with pytest.raises(RuntimeError, match="writer died"):
        atomic_write(target, half_then_fail)
    assert list(tmp_path.iterdir()) == []


def test_failed_rewrite_keeps_the_previous_version(tmp_path: Path):
    target = tmp_path / "kept.json"
    write_json_atomic({"version": 1}, target)

    def fail(handle) -> None:
        handle.write(b'{"version": 2')
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, fail)
    assert '"version": 1' in target.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json"]


def test_remove_stale_temp_files_cleans_leftovers_of_killed_writers(tmp_path: Path):
    leftover = tmp_path / "lake" / ".events.parquet.abc.tmp"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"partial")
    keep = tmp_path / "lake" / "events.parquet"
    keep.write_bytes(b"ok")
    assert remove_stale_temp_files(tmp_path) == [leftover]
    assert keep.exists() and not leftover.exists()


def test_read_partitions_adds_hive_dimensions_without_clobbering_columns(tmp_path: Path):
    lake = tmp_path / "lake"
    for store, alpha in [("hotel", 0.0), ("airline", 0.5)]:
        folder = partition_dir(
            lake, "contaminated", store=store, alpha=f"a{round(alpha * 100):03d}"
        )
        write_parquet_atomic(pl.DataFrame({"alpha": [alpha], "n": [1]}), folder / "s.parquet")
    frame = read_partitions(lake, "contaminated", "store=*/alpha=*/s.parquet").sort("store")
    assert frame["store"].to_list() == ["airline", "hotel"]
    assert frame["alpha"].to_list() == [0.5, 0.0]  # the file's float, not the folder's "a050"
    assert read_partitions(lake, "missing", "*.parquet") is None
