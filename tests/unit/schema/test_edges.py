"""Regression examples for odd exports found by fuzzing (encodings, metadata, non-scalars, ...)."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from phantom_assets.schema import UnreadableFileError, detect_format, parse_batch
from phantom_assets.schema.encoding import decode_text

from .conftest import (
    ENCODINGS,
    RECORDS,
    T0,
    TEXT_FORMATS,
    assert_accounted,
    csv_text,
    encode,
    flat_row,
    jsonl_text,
    payload,
    write_csv,
    write_jsonl,
    write_kafka,
    write_sidecar,
)

WRITERS: dict[str, Callable[..., Path]] = {
    "jsonl": write_jsonl,
    "kafka_json": write_kafka,
    "whoclickedit_csv": lambda path, records, encoding="utf-8": write_csv(
        path, [flat_row(r, "human") for r in records], encoding
    ),
}
SUFFIX = {"jsonl": ".jsonl", "kafka_json": ".json", "whoclickedit_csv": ".csv"}


def _ms(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


# --- encodings ---------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", [e for e in ENCODINGS if e != "utf-8"])
@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_parse_batch_reads_bom_encoded_exports_like_utf8(
    tmp_path: Path, fmt: str, encoding: str
) -> None:
    # Regression: a UTF-16 (BOM) JSON Lines export was refused as "binary content".
    records = [*RECORDS, payload(sessionId="s-ü-€-😀", userAgent="Mozilla/5.0 (Ω)")]
    write_sidecar(tmp_path / "experiments.csv", {"xp-h": "human", "xp-a": "agent"})
    reference = parse_batch(WRITERS[fmt](tmp_path / f"a{SUFFIX[fmt]}", records), "b1")
    result = parse_batch(WRITERS[fmt](tmp_path / f"b{SUFFIX[fmt]}", records, encoding), "b1")
    assert result.format == fmt
    assert_frame_equal(result.events, reference.events)
    assert_frame_equal(result.quarantine, reference.quarantine)
    assert result.counts == reference.counts
    assert result.events.height == len(records)


@pytest.mark.parametrize(("bom", "codec"), [(codecs.BOM_UTF32_LE, "utf-32-le")])
def test_parse_batch_reads_utf32_with_a_bom(tmp_path: Path, bom: bytes, codec: str) -> None:
    # Why: the UTF-32-LE mark starts with the UTF-16-LE one; the longer mark must win.
    path = tmp_path / "b.jsonl"
    path.write_bytes(bom + jsonl_text([payload()]).encode(codec))
    assert parse_batch(path, "b1").events["session_id"].to_list() == ["s9"]


def test_parse_batch_quarantines_invalid_utf16_units_only_in_their_record(tmp_path: Path) -> None:
    # Why: a lone surrogate in one UTF-16 line must not fail the file nor pass as text.
    good, bad = json.dumps(payload()), json.dumps(payload(sessionId="s-bad"))
    data = codecs.BOM_UTF16_LE + f"{good}\n".encode("utf-16-le")
    data += bad.encode("utf-16-le").replace("s-bad".encode("utf-16-le"), b"\x00\xd8x\x00")
    path = tmp_path / "b.jsonl"
    path.write_bytes(data + "\n".encode("utf-16-le"))
    result = parse_batch(path, "b1")
    assert_accounted(result)
    assert result.quarantine.select("source_row", "reason").rows() == [(1, "invalid_encoding")]


def test_detect_format_names_utf16_without_a_bom(tmp_path: Path) -> None:
    # Why: without a mark UTF-16 is indistinguishable from binary; the message says how to fix.
    path = tmp_path / "b.jsonl"
    path.write_bytes(("\n" + jsonl_text([payload()])).encode("utf-16-le"))
    with pytest.raises(UnreadableFileError, match=r"b\.jsonl.*without a byte-order mark"):
        detect_format(path)


def test_parse_batch_reads_a_utf16_experiments_sidecar(tmp_path: Path) -> None:
    # Why: the sidecar is a CSV export too; saved from Excel it is often UTF-16 or BOM-prefixed.
    path = write_jsonl(tmp_path / "b.jsonl", [payload(experimentId="xp-1")])
    sidecar = "experimentId,xp_human_only\nxp-1,false\n"
    (tmp_path / "experiments.csv").write_bytes(encode(sidecar, "utf-16-be-bom"))
    assert parse_batch(path, "b1").events["actor"].to_list() == ["agent"]


def test_decode_text_marks_invalid_utf8_and_drops_the_bom() -> None:
    assert decode_text(codecs.BOM_UTF8 + b"ab") == "ab"
    assert decode_text(b"a\xff\xfeb") == "a\U0010fffeb"


# --- metadata keys outside the known list ------------------------------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "kafka_json"])
def test_parse_batch_keeps_unknown_metadata_keys(tmp_path: Path, fmt: str) -> None:
    # Regression: metadata with keys outside METADATA_KEYS was reduced to {} (data lost).
    extra = {"abTest": "B", "scroll": {"depth": [0.5, None]}, "flag": True, "none": None}
    record = payload(metadata={"nights": "2", **extra})
    events = parse_batch(WRITERS[fmt](tmp_path / f"b{SUFFIX[fmt]}", [record]), "b1").events
    metadata = events["metadata"].item()
    assert json.loads(metadata) == {"nights": 2, **extra}
    assert metadata.startswith('{"nights":2,')  # known keys first, as before


def test_parse_batch_keeps_metadata_columns_outside_the_contract(tmp_path: Path) -> None:
    # Why: a table with an extra metadata_<key> column must not lose it either.
    row = flat_row(payload(metadata={"nights": 3}), "human") | {"metadata_zoom": "1.25"}
    columns = [*row.keys()]
    path = tmp_path / "b.csv"
    path.write_bytes(encode(csv_text([row], columns)))
    metadata = parse_batch(path, "b1").events["metadata"].item()
    assert json.loads(metadata) == {"nights": 3, "zoom": 1.25}


# --- non-scalar values in scalar fields --------------------------------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "kafka_json"])
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"productId": ["a", "b"]}, "productId"),
        ({"sessionId": {"id": "s1"}}, "sessionId"),
        ({"ts": [T0]}, "ts"),
        ({"price": []}, "price"),
        ({"metadata": {"nights": [1, 2]}}, "metadata.nights"),
    ],
)
def test_parse_batch_quarantines_non_scalar_values(
    tmp_path: Path, fmt: str, changes: dict, field: str
) -> None:
    # Regression: a list-valued productId was kept as the text '["a","b"]'.
    records = [payload(sessionId="s-ok"), payload(**changes)]
    result = parse_batch(WRITERS[fmt](tmp_path / f"b{SUFFIX[fmt]}", records), "b1")
    assert_accounted(result)
    assert result.quarantine.select("source_row", "reason").rows() == [(1, "non_scalar_value")]
    assert result.quarantine["detail"].item().startswith(f"{field} is a JSON ")


def test_parse_batch_keeps_strings_that_look_like_json(tmp_path: Path) -> None:
    # Why: only a JSON array/object is non-scalar; the *string* '["a"]' is a valid product id.
    path = write_jsonl(tmp_path / "b.jsonl", [payload(productId='["a"]', page="{x}")])
    assert parse_batch(path, "b1").events["product_id"].to_list() == ['["a"]']


def test_parse_batch_quarantines_nested_parquet_values(tmp_path: Path) -> None:
    # Why: a list column in a Parquet table used to fail the whole file ("cannot be read as text").
    table = pl.DataFrame(
        {
            "sessionId": ["s1", "s2"],
            "storeMode": ["hotel", "hotel"],
            "ts": [T0, T0],
            "eventName": ["page_view", "page_view"],
            "productId": [["a", "b"], None],
        }
    )
    table.write_parquet(tmp_path / "b.parquet")
    result = parse_batch(tmp_path / "b.parquet", "b1")
    assert_accounted(result)
    assert result.quarantine.select("source_row", "reason").rows() == [(0, "non_scalar_value")]
    assert result.quarantine["detail"].item().startswith("productId ")


# --- control characters in ids -----------------------------------------------------------------
@pytest.mark.parametrize("field", ["sessionId", "experimentId", "productId"])
@pytest.mark.parametrize("char", ["\x00", "\x1b", "\n", "\x7f", "\x85"])
def test_parse_batch_quarantines_control_characters_in_ids(
    tmp_path: Path, field: str, char: str
) -> None:
    # Regression: a NUL inside a session id passed through into raw_events.
    records = [payload(sessionId="s-ok"), payload(**{field: f"id{char}x"})]
    result = parse_batch(write_jsonl(tmp_path / "b.jsonl", records), "b1")
    assert_accounted(result)
    assert result.quarantine.select("source_row", "reason").rows() == [
        (1, "control_character_in_id")
    ]
    assert result.quarantine["detail"].item().startswith(f"{field}=")


def test_parse_batch_quarantines_a_nul_in_a_csv_session_id(tmp_path: Path) -> None:
    rows = [flat_row(payload(sessionId="s\x00"), "human"), flat_row(payload(), "human")]
    result = parse_batch(write_csv(tmp_path / "b.csv", rows), "b1")
    assert result.quarantine.select("source_row", "reason").rows() == [
        (0, "control_character_in_id")
    ]
    assert result.quarantine["detail"].item() == 'sessionId="s\\u0000" holds a control character'


# --- Kafka record timestamp as the fallback for a missing ts -----------------------------------
def test_parse_batch_falls_back_to_the_kafka_record_timestamp(tmp_path: Path) -> None:
    # Regression: an envelope whose payload lacked ts was quarantined despite its timestamp.
    without_ts = {k: v for k, v in payload(sessionId="s-a").items() if k != "ts"}
    records = [payload(ts=T0 + 500), without_ts, payload(sessionId="s-b", ts=None)]
    events = parse_batch(write_kafka(tmp_path / "b.json", records), "b1").events
    assert events.select("ts", "ts_source").rows() == [
        (_ms(T0 + 500), "payload"),
        (_ms(T0 + 1), "kafka_record"),
        (_ms(T0 + 2), "kafka_record"),
    ]


def test_parse_batch_does_not_hide_a_bad_ts_behind_the_record_timestamp(tmp_path: Path) -> None:
    # Why: only a *missing* ts falls back; an unparseable one is bad data and stays quarantined.
    records = [payload(ts="yesterday")]
    result = parse_batch(write_kafka(tmp_path / "b.json", records), "b1")
    assert result.quarantine["reason"].to_list() == ["unparseable_timestamp"]


def test_parse_batch_names_both_timestamps_when_neither_parses(tmp_path: Path) -> None:
    envelope = {"timestamp": -1, "value": {"payload": payload(ts=None)}}
    path = tmp_path / "b.json"
    path.write_text(json.dumps([envelope]), encoding="utf-8")
    result = parse_batch(path, "b1")
    assert result.quarantine.select("reason", "detail").row(0) == (
        "unparseable_timestamp",
        "ts missing; kafka_timestamp='-1'",
    )


def test_parse_batch_takes_a_tables_kafka_timestamp_for_a_missing_ts(tmp_path: Path) -> None:
    # Why: a whoclickedit table flattened from Kafka carries the record time as kafka_timestamp.
    row = flat_row(payload(), "human") | {"ts": "", "kafka_timestamp": str(T0 + 7)}
    events = parse_batch(write_csv(tmp_path / "b.csv", [row]), "b1").events
    assert events.select("ts", "ts_source").row(0) == (_ms(T0 + 7), "kafka_record")


def test_parse_batch_marks_jsonl_timestamps_as_from_the_payload(tmp_path: Path) -> None:
    events = parse_batch(write_jsonl(tmp_path / "b.jsonl", [payload()]), "b1").events
    assert events["ts_source"].to_list() == ["payload"]
