"""Format detection by content, file fingerprints and files that cannot be read at all."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from phantom_assets.schema import (
    FORMATS,
    UnreadableFileError,
    detect_format,
    file_sha256,
    parse_batch,
    store_counts,
)

from .conftest import RECORDS, flat_rows, payload, write_lines, write_parquet


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("new_name", ["renamed.json", "renamed.csv", "renamed"])
def test_detect_format_reads_content_not_suffix(
    batch_files: Callable[[str], Path], fmt: str, new_name: str
) -> None:
    source = batch_files(fmt)
    renamed = source.rename(source.with_name(new_name))
    assert detect_format(renamed) == fmt


def test_detect_format_takes_jsonl_with_a_damaged_first_line(tmp_path: Path) -> None:
    lines = ["garbage that is not json", *(json.dumps(r) for r in RECORDS)]
    path = write_lines(tmp_path / "b.jsonl", lines)
    result = parse_batch(path, "b1")
    assert result.format == "jsonl"
    assert result.quarantine["reason"].to_list() == ["malformed_json"]
    assert result.counts["rows_in"] == len(RECORDS) + 1


def test_file_sha256_matches_hashlib(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    data = bytes(range(256)) * 5000
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


PRETTY_OBJECT = json.dumps({"events": [payload()]}, indent=2)
UNREADABLE = [
    pytest.param(b"", "empty", id="empty-file"),
    pytest.param(b"  \n\n\t\n", "empty", id="blank-file"),
    pytest.param(b"\x00\x01\x02\xff\xfegarbage\x00", "binary", id="binary-garbage"),
    pytest.param(b"hello world\nthis is not data\n", "not a known raw format", id="text-garbage"),
    pytest.param(PRETTY_OBJECT.encode(), "one JSON object", id="pretty-json-object"),
    pytest.param(b'{"events": []}\n', "without any event field", id="json-object-no-fields"),
    pytest.param(b'[{"partitionID": 0, "value": ', "not valid JSON", id="truncated-array"),
    pytest.param(b"sessionId,eventName\ns1,view\n", "required columns", id="csv-missing-columns"),
    pytest.param(b"sessionId,eventName,ts,storeMode,ts\n", "repeats", id="csv-duplicate-header"),
]


@pytest.mark.parametrize(("content", "problem"), UNREADABLE)
def test_parse_batch_raises_unreadable_naming_the_file(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "weird-export-2024.json"
    path.write_bytes(content)
    with pytest.raises(UnreadableFileError, match=problem) as caught:
        parse_batch(path, "b1")
    assert "weird-export-2024.json" in str(caught.value)
    assert caught.value.path == path


def test_parse_batch_raises_unreadable_for_truncated_parquet(
    batch_files: Callable[[str], Path],
) -> None:
    path = batch_files("whoclickedit_parquet")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UnreadableFileError, match="Parquet") as caught:
        parse_batch(path, "b1")
    assert path.name in str(caught.value)


def test_a_parquet_file_whose_data_pages_are_missing_fails_naming_the_file(
    tmp_path: Path,
) -> None:
    # Why: its footer points past the file's end and polars panics (a BaseException, which no
    # `except Exception` stops) with "called `Result::unwrap()` on an `Err` value", naming no
    # file. A column chunk longer than the footer is what makes it point past the end.
    rows = [
        {**row, "userAgent": hashlib.sha256(str(i).encode()).hexdigest() * 2}
        for i in range(200)
        for row in flat_rows(RECORDS)
    ]
    path = write_parquet(tmp_path / "export.parquet", rows)
    data = path.read_bytes()
    footer = int.from_bytes(data[-8:-4], "little") + 8  # the metadata, its length, "PAR1"
    path.write_bytes(data[:4] + data[-footer:])  # the data pages lost, the footer kept
    for read in (lambda: parse_batch(path, "b1"), lambda: store_counts(path)):
        with pytest.raises(UnreadableFileError, match="truncated or corrupt") as caught:
            read()
        assert caught.value.path == path and str(path) in str(caught.value)


def test_parse_batch_raises_unreadable_for_a_broken_sidecar(
    batch_files: Callable[[str], Path],
) -> None:
    path = batch_files("jsonl")
    sidecar = path.with_name("experiments.csv")
    sidecar.write_text("subject,label\nx,y\n", encoding="utf-8")
    with pytest.raises(UnreadableFileError, match="experiments sidecar") as caught:
        parse_batch(path, "b1")
    assert "experiments.csv" in str(caught.value)


def test_unreadable_file_error_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "missing.jsonl"
    with pytest.raises(ValueError, match=r"missing\.jsonl"):
        detect_format(path)
