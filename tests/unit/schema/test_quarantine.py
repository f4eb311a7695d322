"""Bad input lands in the quarantine with the right reason and no row is ever lost."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phantom_assets.constants import (
    EVENT_ALIASES,
    MAX_FIELD_CHARS,
    QUARANTINE_REASONS,
    STORES,
    VOCABULARY,
)
from phantom_assets.schema import ALL_REASONS, IngestResult, parse_batch
from phantom_assets.schema.raw_formats import METADATA_KEYS, WHOCLICKEDIT_COLUMNS

from .conftest import T0, assert_accounted, flat_row, payload, write_csv, write_lines

GOOD = json.dumps(payload())


JSONL_CORPUS = [
    pytest.param(json.dumps(payload(sessionId=None)), "missing_session_id", id="null-session"),
    pytest.param(json.dumps(payload(sessionId="  ")), "missing_session_id", id="blank-session"),
    pytest.param(json.dumps(payload(ts="yesterday")), "unparseable_timestamp", id="bad-ts"),
    pytest.param(json.dumps(payload(ts=T0 // 1000)), "unparseable_timestamp", id="epoch-seconds"),
    pytest.param(json.dumps(payload(ts=None)), "unparseable_timestamp", id="missing-ts"),
    pytest.param(json.dumps(payload(eventName="teleport")), "unknown_event", id="unknown-event"),
    pytest.param(json.dumps(payload(eventName=None)), "unknown_event", id="missing-event"),
    pytest.param(json.dumps(payload(storeMode="mall")), "unknown_store", id="unknown-store"),
    pytest.param(json.dumps(payload(storeMode=None)), "unknown_store", id="missing-store"),
    pytest.param(json.dumps(payload(storeMode="SHOP")), "legacy_store", id="legacy-store"),
    pytest.param('{"sessionId": "s1", "ts": ', "malformed_json", id="truncated-line"),
    pytest.param("[1, 2, 3]", "malformed_json", id="array-line"),
    pytest.param('{"a": 1} trailing', "malformed_json", id="trailing-junk"),
    pytest.param(json.dumps(payload(metadata="oops")), "malformed_json", id="metadata-not-object"),
    pytest.param(GOOD, "duplicate_event", id="duplicate"),
    pytest.param(
        GOOD.replace('"ua"', '"ua\xff"').encode("latin-1"), "invalid_encoding", id="latin-1"
    ),
    pytest.param(
        json.dumps(payload(userAgent="x" * (MAX_FIELD_CHARS + 1))), "field_too_long", id="huge"
    ),
    pytest.param(json.dumps(payload(page="/Admin/users")), "admin_page", id="admin-page"),
    pytest.param(
        json.dumps(payload(eventName="price_quote", price=-1)), "invalid_price", id="negative"
    ),
    pytest.param(
        json.dumps(payload(eventName="price_quote", price="cheap")), "invalid_price", id="text"
    ),
    pytest.param(json.dumps(payload(eventName="price_quote")), "invalid_price", id="no-price"),
]


@pytest.mark.parametrize(("bad_line", "reason"), JSONL_CORPUS)
def test_parse_batch_quarantines_bad_jsonl_lines(
    tmp_path: Path, bad_line: str | bytes, reason: str
) -> None:
    trailer = json.dumps(payload(sessionId="s-last"))
    result = parse_batch(write_lines(tmp_path / "b.jsonl", [GOOD, bad_line, trailer]), "b1")
    assert_accounted(result)
    assert result.quarantine.select("source_row", "reason").rows() == [(1, reason)]
    assert result.events["source_row"].to_list() == [0, 2]
    assert result.counts[reason] == 1
    assert result.quarantine["detail"].str.len_chars().item() > 0


def test_parse_batch_quarantine_keeps_the_raw_line_and_names_the_field(tmp_path: Path) -> None:
    bad = json.dumps(payload(storeMode="mall"))
    result = parse_batch(write_lines(tmp_path / "b.jsonl", [bad]), "b1")
    assert result.quarantine.row(0, named=True) == {
        "source_row": 0,
        "raw": bad,
        "reason": "unknown_store",
        "detail": "storeMode='mall'",
        "batch_id": "b1",
    }


def test_parse_batch_keeps_the_legacy_store_when_accepted(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "b.jsonl", [json.dumps(payload(storeMode=" Shop"))])
    assert parse_batch(path, "b1").quarantine["reason"].to_list() == ["legacy_store"]
    result = parse_batch(path, "b1", accept_legacy_store=True)
    assert result.events["store"].to_list() == ["shop"]
    assert_accounted(result)


def test_parse_batch_keeps_the_first_of_duplicates(tmp_path: Path) -> None:
    other = json.dumps(payload(productId="room-2"))
    path = write_lines(tmp_path / "b.jsonl", [other, GOOD, other, GOOD, GOOD])
    result = parse_batch(path, "b1")
    assert result.events["source_row"].to_list() == [0, 1]
    assert result.quarantine["detail"].to_list() == [
        "same event as source_row 0",
        "same event as source_row 1",
        "same event as source_row 1",
    ]


def test_parse_batch_keeps_price_quotes_that_differ_only_in_price(tmp_path: Path) -> None:
    quotes = [json.dumps(payload(eventName="price_quote", price=p)) for p in (10, 11, 10)]
    result = parse_batch(write_lines(tmp_path / "b.jsonl", quotes), "b1")
    assert result.events["price"].to_list() == [10.0, 11.0]
    assert result.quarantine["reason"].to_list() == ["duplicate_event"]


def _csv_text(rows: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=WHOCLICKEDIT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def test_parse_batch_quarantines_csv_rows_with_the_wrong_column_count(tmp_path: Path) -> None:
    good = _csv_text([flat_row(payload(), actor="human")])
    text = good + "s1,too,few\n" + good.splitlines()[1] + ",extra\n"
    path = tmp_path / "b.csv"
    path.write_text(text, encoding="utf-8")
    result = parse_batch(path, "b1")
    assert_accounted(result)
    assert result.quarantine["reason"].to_list() == ["malformed_row", "malformed_row"]
    width = len(WHOCLICKEDIT_COLUMNS)
    assert result.quarantine["detail"].to_list() == [
        f"row has 3 fields, the header has {width}",
        f"row has {width + 1} fields, the header has {width}",
    ]
    assert json.loads(result.quarantine["raw"][0]) == {"_fields": ["s1", "too", "few"]}


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"sessionId": ""}, "missing_session_id"),
        ({"ts": "30/11/2024"}, "unparseable_timestamp"),
        ({"eventName": "warp"}, "unknown_event"),
        ({"storeMode": "shop"}, "legacy_store"),
        ({"record_type": "clickstream"}, "malformed_row"),
        ({"record_type": "price_log", "eventName": "price_quote", "price": ""}, "invalid_price"),
        ({"record_type": "price_log", "eventName": "view"}, "unknown_event"),
        ({"page": "/admin/"}, "admin_page"),
        ({"userAgent": "y" * (MAX_FIELD_CHARS + 5)}, "field_too_long"),
    ],
)
def test_parse_batch_quarantines_bad_csv_rows(
    tmp_path: Path, changes: dict[str, str], reason: str
) -> None:
    good = flat_row(payload(), actor="agent")
    rows = [good, good | {"sessionId": "s-other"} | changes]
    result = parse_batch(write_csv(tmp_path / "b.csv", rows), "b1")
    assert_accounted(result)
    assert result.quarantine.select("source_row", "reason").rows() == [(1, reason)]


def test_parse_batch_quarantines_csv_rows_with_invalid_bytes(tmp_path: Path) -> None:
    text = _csv_text([flat_row(payload(sessionId=f"s{i}"), actor="human") for i in range(3)])
    data = text.encode().replace(b"s1,", b"s\xff\xfe1,")
    path = tmp_path / "b.csv"
    path.write_bytes(data)
    result = parse_batch(path, "b1")
    assert_accounted(result)
    assert result.quarantine.select("source_row", "reason").rows() == [(1, "invalid_encoding")]
    assert "\ufffd" in result.quarantine["raw"].item()


def test_parse_batch_quarantines_broken_kafka_envelopes(tmp_path: Path) -> None:
    envelopes = [{"value": {"payload": payload()}}, 42, {"value": {}}, {"value": "not json"}]
    path = tmp_path / "b.json"
    path.write_text(json.dumps(envelopes), encoding="utf-8")
    result = parse_batch(path, "b1")
    assert_accounted(result)
    assert result.quarantine["reason"].to_list() == ["malformed_json"] * 3
    assert result.quarantine["raw"].to_list()[0] == "42"


def test_parse_batch_reads_kafka_values_holding_json_text(tmp_path: Path) -> None:
    envelope = {"partitionID": 0, "value": json.dumps({"payload": payload()})}
    path = tmp_path / "b.json"
    path.write_text(json.dumps([envelope]), encoding="utf-8")
    assert parse_batch(path, "b1").events["session_id"].to_list() == ["s9"]


def test_quarantine_reasons_extend_the_shared_ones() -> None:
    assert ALL_REASONS[: len(QUARANTINE_REASONS)] == QUARANTINE_REASONS
    assert ALL_REASONS[-1] == "admin_page"


# --- properties: random mixes of good and bad records never raise and lose nothing ----------
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
RECORD = st.fixed_dictionaries(
    {
        "sessionId": st.one_of(st.none(), st.sampled_from(["s1", "s2", " "]), TEXT),
        "experimentId": st.one_of(st.none(), st.sampled_from(["xp-h", "xp-a"])),
        "storeMode": st.sampled_from([*STORES, "Hotel", "shop", "mall", "", None]),
        "ts": st.one_of(
            st.integers(T0, T0 + 5_000),
            st.integers(-(2**63), 2**63 - 1),
            st.sampled_from(["2024-11-30T10:00:00Z", "2024-13-45", "", "now"]),
            st.none(),
        ),
        "page": st.sampled_from(["/", "/rooms/1", "/admin/x", "", None]),
        "eventName": st.sampled_from([*VOCABULARY[:4], *list(EVENT_ALIASES)[:4], "bogus", None]),
        "productId": st.one_of(st.none(), st.sampled_from(["p1", "p2"])),
        "metadata": st.one_of(
            st.none(),
            st.dictionaries(st.sampled_from(METADATA_KEYS), st.one_of(TEXT, st.integers())),
        ),
        "userAgent": st.one_of(st.none(), TEXT),
        "price": st.one_of(st.none(), st.floats(allow_nan=True), TEXT),
    }
)
BROKEN_LINES = st.sampled_from(
    [b'{"sessionId": ', b"{not json}", b'{"a": 1} x', b'{"sessionId": "\xff\xfe"}', b"{}"]
)
JSONL_LINE = st.one_of(RECORD.map(lambda r: json.dumps(r).encode()), BROKEN_LINES)
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _assert_events_are_canonical(result: IngestResult) -> None:
    events = result.events
    assert (events["session_id"].str.strip_chars().str.len_chars() > 0).all()
    assert events["store"].is_in(STORES).all()
    assert events["ts"].null_count() == 0
    assert events["event"].is_in([*VOCABULARY, "price_quote"]).all()


@PROPERTY
@given(first=RECORD, lines=st.lists(JSONL_LINE, max_size=25))
def test_parse_batch_accounts_for_every_jsonl_line(first: dict, lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write_lines(Path(folder) / "b.jsonl", [json.dumps(first).encode(), *lines])
        result = parse_batch(path, "b1")
    assert_accounted(result)
    assert result.counts["rows_in"] == len(lines) + 1
    _assert_events_are_canonical(result)


def _csv_row(record: dict) -> list[str]:
    row = flat_row(record, actor=None)
    return [row[c] for c in WHOCLICKEDIT_COLUMNS]


CSV_ROW = st.one_of(
    RECORD.map(_csv_row),
    st.lists(TEXT, min_size=1, max_size=5),  # wrong column count
)


@PROPERTY
@given(rows=st.lists(CSV_ROW, max_size=25), corrupt=st.booleans())
def test_parse_batch_accounts_for_every_csv_row(rows: list[list[str]], corrupt: bool) -> None:
    buffer = io.StringIO()
    # QUOTE_ALL: the stdlib writer leaves a lone "\r" unquoted, which splits the record.
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerows([list(WHOCLICKEDIT_COLUMNS), *rows])
    data = buffer.getvalue().encode()
    if corrupt:
        data = data.replace(b"p1", b"p\xff1")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "b.csv"
        path.write_bytes(data)
        result = parse_batch(path, "b1")
    assert_accounted(result)
    assert result.counts["rows_in"] == len(rows)
    _assert_events_are_canonical(result)
