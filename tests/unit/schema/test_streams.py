"""Reading a raw file piece by piece gives what reading it whole gives: decoding, line splits,
JSON array elements, and `parse_batch` / `store_counts` at any read size."""

from __future__ import annotations

import codecs
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from phantom_assets.schema import parse_batch, store_counts
from phantom_assets.schema.encoding import decode_text, iter_decoded
from phantom_assets.schema.streams import (
    ReadSizes,
    batches,
    json_array_items,
    split_lines,
    universal_lines,
)

from .conftest import (
    RECORDS,
    T0,
    encode,
    flat_rows,
    jsonl_text,
    kafka_text,
    payload,
    write_csv,
    write_parquet,
    write_sidecar,
)

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BOMS = (b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE)
# Byte runs that decode, half-decode or fail in UTF-8 and UTF-16/32.
BYTE_PIECES = (b"a", b"\n", b"\r", b"\xff", b"\xfe", b"\x80", b"\xc3\xa9", b"\xe2\x82", b"\x00")
TEXT_PIECES = ("a", "\n", "\r", "\r\n", " ", ",", "[", "]", "{", "}", '"', "\\", "1", "-", "é")


def _cut(data, cuts: list[int]):
    """`data` cut at the given positions (sorted, deduplicated, within bounds)."""
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@PROPERTY
@given(
    bom=st.sampled_from(BOMS),
    body=st.lists(st.sampled_from(BYTE_PIECES), max_size=12),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_decoding_in_blocks_equals_decoding_the_whole_file(
    bom: bytes, body: list[bytes], cuts: list[int]
) -> None:
    data = bom + b"".join(body)
    assert "".join(iter_decoded(_cut(data, cuts))) == decode_text(data)


def test_a_run_of_invalid_bytes_cut_by_a_block_end_gets_one_mark() -> None:
    assert "".join(iter_decoded([b"a\xff", b"\xfeb"])) == decode_text(b"a\xff\xfeb")
    assert decode_text(b"a\xff\xfeb").count("\U0010fffe") == 1


@PROPERTY
@given(
    pieces=st.lists(st.sampled_from(TEXT_PIECES), max_size=20),
    cuts=st.lists(st.integers(0, 30), max_size=6),
)
def test_line_splits_of_a_cut_text_equal_those_of_the_whole_text(
    pieces: list[str], cuts: list[int]
) -> None:
    text = "".join(pieces)
    assert list(split_lines(_cut(text, cuts))) == text.split("\n")
    assert list(universal_lines(_cut(text, cuts))) == list(io.StringIO(text, newline=""))


JSON_VALUE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=4),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)


@PROPERTY
@given(
    items=st.lists(JSON_VALUE, max_size=5),
    indent=st.sampled_from([None, 1]),
    damage=st.one_of(st.none(), st.tuples(st.integers(0, 200), st.sampled_from(TEXT_PIECES))),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_a_cut_json_array_yields_json_loads_elements_or_fails_like_it(
    items: list, indent: int | None, damage: tuple[int, str] | None, cuts: list[int]
) -> None:
    text = json.dumps(items, indent=indent)
    if damage is not None:
        at, piece = damage
        text = text[:at] + piece + text[at + 1 :]
    try:
        expected = json.loads(text)
    except ValueError:
        expected = None
    if isinstance(expected, list):
        assert list(json_array_items(_cut(text, cuts))) == expected
    else:
        with pytest.raises(ValueError):
            list(json_array_items(_cut(text, cuts)))


def test_batches_are_full_but_the_last_and_never_none() -> None:
    assert [list(b) for b in (batches([], 2), batches([1, 2], 2), batches([1, 2, 3], 2))] == [
        [[]],
        [[1, 2]],
        [[1, 2], [3]],
    ]


# Every edge a chunk or block end can cut: duplicates of earlier rows (also across chunks), a
# quarantined row, a quoted CSV field holding a newline (RECORDS[4]), bad lines and bytes.
ODD_RECORDS = [*RECORDS, RECORDS[1], payload(storeMode="mars"), RECORDS[3], payload(eventName="x")]


def _odd_batch(folder: Path, fmt: str, encoding: str) -> Path:
    labels = {"xp-h": "human", "xp-a": "agent"}
    if fmt == "jsonl":
        write_sidecar(folder / "experiments.csv", labels)
        text = jsonl_text(ODD_RECORDS) + "\n{not json\r\n\n" + jsonl_text([payload(ts=T0 + 9)])
        path = folder / "batch.jsonl"
        path.write_bytes(encode(text, encoding) + b"\xff\xfe{}\n")
        return path
    if fmt == "kafka_json":
        write_sidecar(folder / "experiments.csv", labels)
        path = folder / "batch.json"
        path.write_bytes(encode(kafka_text([*ODD_RECORDS, 42, "x", -1.5e-3]), encoding))
        return path
    if fmt == "whoclickedit_csv":
        path = write_csv(folder / "batch.csv", flat_rows(ODD_RECORDS), encoding)
        path.write_bytes(path.read_bytes() + encode('"too","few"\r\n', encoding))
        return path
    return write_parquet(folder / "batch.parquet", flat_rows(ODD_RECORDS))


@pytest.mark.parametrize(
    ("fmt", "encoding"),
    [
        ("jsonl", "utf-8"),
        ("jsonl", "utf-16-le-bom"),
        ("kafka_json", "utf-8-bom"),
        ("whoclickedit_csv", "utf-8"),
        ("whoclickedit_csv", "utf-16-be-bom"),
        ("whoclickedit_parquet", "utf-8"),
    ],
)
@pytest.mark.parametrize(
    "sizes", [ReadSizes(rows=1, block_bytes=1), ReadSizes(rows=2, block_bytes=7)], ids=repr
)
def test_parse_batch_and_store_counts_do_not_depend_on_the_read_sizes(
    tmp_path: Path, fmt: str, encoding: str, sizes: ReadSizes
) -> None:
    path = _odd_batch(tmp_path, fmt, encoding)
    whole, chunked = parse_batch(path, "b1"), parse_batch(path, "b1", sizes=sizes)
    assert_frame_equal(chunked.events, whole.events)
    assert_frame_equal(chunked.quarantine, whole.quarantine)
    assert chunked.counts == whole.counts
    assert whole.counts["duplicate_event"] == 2 and whole.counts["rows_quarantined"] >= 4
    assert store_counts(path, sizes) == store_counts(path)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'[\n {"value": {"payload": {}}},\n {"a": 1,,}\n]', "line 3 column 10"),
        (b'[{"value": 1}] [2]', "Extra data: line 1 column 16"),
        (b'{\n  "sessionId": "s1",\n  "ts": 1\n}\n', "one JSON object spread over several"),
    ],
    ids=["kafka-malformed-element", "kafka-extra-data", "jsonl-pretty-object"],
)
@pytest.mark.parametrize("block_bytes", [1, 5, 1 << 20])
def test_an_unreadable_file_names_its_problem_at_any_block_size(
    tmp_path: Path, content: bytes, problem: str, block_bytes: int
) -> None:
    path = tmp_path / "export.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=problem) as caught:
        parse_batch(path, "b1", sizes=ReadSizes(rows=1, block_bytes=block_bytes))
    assert str(path) in str(caught.value)


def test_read_sizes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="read sizes must be >= 1"):
        ReadSizes(rows=0)
