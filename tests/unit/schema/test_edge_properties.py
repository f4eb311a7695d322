"""Properties of the ingest over generated odd exports: encodings, metadata, non-scalars, ids, ts.

Every property also checks that no row is lost (rows_in == rows_kept + rows_quarantined).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from phantom_assets.schema import IngestResult, parse_batch
from phantom_assets.schema.encoding import INVALID_BYTES_MARK
from phantom_assets.schema.raw_formats import METADATA_KEYS

from .conftest import (
    ENCODINGS,
    T0,
    TEXT_FORMATS,
    assert_accounted,
    flat_row,
    payload,
    write_csv,
    write_jsonl,
    write_kafka,
)

# Modest budgets keep the file under ~30 s: one parse costs ~0.1 s, mostly polars planning.
ENCODING_PROPERTY = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCALAR_FIELDS = (
    "sessionId",
    "experimentId",
    "storeMode",
    "ts",
    "page",
    "eventName",
    "productId",
    "userAgent",
    "price",
)
ID_FIELDS = ("sessionId", "experimentId", "productId")
PAYLOAD_T0 = T0 + 60_000  # payload times, apart from the envelope times T0 + i
SUFFIX = {"jsonl": ".jsonl", "kafka_json": ".json", "whoclickedit_csv": ".csv"}

# Text as people type it: any character but lone surrogates (not encodable) and controls.
# Not the noncharacter the reader marks undecodable bytes with: a value holding it is quarantined
# as invalid_encoding, by design.
PLAIN_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=INVALID_BYTES_MARK),
    max_size=8,
)
ID = PLAIN_TEXT.filter(lambda s: s.strip() != "")
JSON_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    PLAIN_TEXT,
)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(PLAIN_TEXT, inner, max_size=3)
    ),
    max_leaves=8,
)
NON_SCALAR = st.one_of(
    st.lists(JSON_VALUE, max_size=3), st.dictionaries(PLAIN_TEXT, JSON_VALUE, max_size=3)
)
EXTRA_METADATA = st.dictionaries(
    PLAIN_TEXT.filter(lambda key: key not in METADATA_KEYS), JSON_VALUE, max_size=4
)
KNOWN_METADATA = st.dictionaries(
    st.sampled_from(METADATA_KEYS), st.one_of(st.integers(0, 99), PLAIN_TEXT), max_size=3
)
# Mostly valid records, with every odd edge mixed in now and then.
RECORD = st.builds(
    lambda session, product, ts, event, agent, metadata, extra: payload(
        sessionId=session,
        productId=product,
        ts=ts,
        eventName=event,
        userAgent=agent,
        metadata={**metadata, **extra},
    ),
    session=st.one_of(ID, st.just("s\x00x"), st.none()),
    product=st.one_of(st.none(), ID, NON_SCALAR),
    ts=st.one_of(st.integers(T0, T0 + 10_000), st.none(), st.just("nope")),
    event=st.sampled_from(["page_view", "view", "search", "bogus"]),
    agent=PLAIN_TEXT,
    metadata=KNOWN_METADATA,
    extra=st.one_of(st.just({}), EXTRA_METADATA),
)


def _write(fmt: str, folder: Path, name: str, records: list[dict], encoding: str) -> Path:
    path = folder / f"{name}{SUFFIX[fmt]}"
    if fmt == "jsonl":
        return write_jsonl(path, records, encoding)
    if fmt == "kafka_json":
        return write_kafka(path, records, encoding)
    return write_csv(path, [flat_row(r, "agent") for r in records], encoding)


def _ingest(fmt: str, records: list[dict], encoding: str = "utf-8") -> IngestResult:
    with tempfile.TemporaryDirectory() as folder:
        result = parse_batch(_write(fmt, Path(folder), "batch", records, encoding), "b1")
    assert_accounted(result)
    assert result.counts["rows_in"] == len(records)
    return result


def _quarantined(result: IngestResult, row: int) -> tuple[str, str]:
    reasons = result.quarantine.filter(source_row=row).select("reason", "detail").rows()
    assert len(reasons) == 1, f"source_row {row} is not quarantined"
    return reasons[0]


def _with(records: list[dict], index: int, make: Callable[[dict], dict]) -> list[dict]:
    """`records` with the one at `index % len` replaced by `make(record)`."""
    position = index % len(records)
    return [make(r) if i == position else r for i, r in enumerate(records)]


def _distinct(sessions: list[str]) -> list[dict[str, Any]]:
    """Valid records, one per distinct session id (no duplicates between them)."""
    return [payload(sessionId=f"s{i}-{s}", ts=T0 + i) for i, s in enumerate(sessions)]


GOOD_BATCH = st.lists(ID, min_size=1, max_size=6).map(_distinct)


@ENCODING_PROPERTY
@given(
    fmt=st.sampled_from(TEXT_FORMATS),
    encoding=st.sampled_from([e for e in ENCODINGS if e != "utf-8"]),
    records=st.lists(RECORD, min_size=1, max_size=8),
)
def test_ingest_of_an_encoded_export_equals_the_utf8_one(
    fmt: str, encoding: str, records: list[dict]
) -> None:
    reference, result = _ingest(fmt, records), _ingest(fmt, records, encoding)
    assert_frame_equal(result.events, reference.events)
    assert_frame_equal(result.quarantine, reference.quarantine)
    assert result.counts == reference.counts


@PROPERTY
@given(
    fmt=st.sampled_from(["jsonl", "kafka_json"]),
    records=GOOD_BATCH,
    known=KNOWN_METADATA,
    extra=EXTRA_METADATA.filter(bool),
    index=st.integers(0, 10),
)
def test_extra_metadata_keys_survive_exactly(
    fmt: str, records: list[dict], known: dict, extra: dict, index: int
) -> None:
    batch = _with(records, index, lambda r: r | {"metadata": {**known, **extra}})
    result = _ingest(fmt, batch)
    assert result.quarantine.is_empty()
    metadata = result.events["metadata"][index % len(batch)]
    loaded = json.loads(metadata)
    assert {key: loaded[key] for key in extra} == extra
    assert set(loaded) == {k for k, v in known.items() if v not in ("", None)} | set(extra)


@PROPERTY
@given(
    fmt=st.sampled_from(["jsonl", "kafka_json"]),
    records=GOOD_BATCH,
    field=st.sampled_from([*SCALAR_FIELDS, *(f"metadata.{key}" for key in METADATA_KEYS)]),
    value=NON_SCALAR,
    index=st.integers(0, 10),
)
def test_a_non_scalar_value_in_a_scalar_field_is_quarantined(
    fmt: str, records: list[dict], field: str, value: Any, index: int
) -> None:
    def put(record: dict) -> dict:
        if field.startswith("metadata."):
            return record | {"metadata": {field.removeprefix("metadata."): value}}
        return record | {field: value}

    batch = _with(records, index, put)
    result = _ingest(fmt, batch)
    reason, detail = _quarantined(result, index % len(batch))
    assert reason == "non_scalar_value"
    assert detail.startswith(f"{field} is a JSON ")
    assert result.quarantine.height == 1


@PROPERTY
@given(
    fmt=st.sampled_from(TEXT_FORMATS),
    records=GOOD_BATCH,
    field=st.sampled_from(ID_FIELDS),
    parts=st.tuples(ID, st.characters(whitelist_categories=("Cc",)), PLAIN_TEXT),
    index=st.integers(0, 10),
)
def test_a_control_character_in_an_id_is_quarantined(
    fmt: str, records: list[dict], field: str, parts: tuple[str, str, str], index: int
) -> None:
    batch = _with(records, index, lambda r: r | {field: "".join(parts)})
    result = _ingest(fmt, batch)
    reason, detail = _quarantined(result, index % len(batch))
    assert reason == "control_character_in_id"
    assert detail.startswith(f"{field}=")
    assert result.quarantine.height == 1


@PROPERTY
@given(records=GOOD_BATCH, dropped=st.sets(st.integers(0, 5)), as_null=st.booleans())
def test_kafka_envelopes_without_ts_take_the_record_timestamp(
    records: list[dict], dropped: set[int], as_null: bool
) -> None:
    def ts_of(i: int, record: dict) -> dict:
        if i not in dropped:
            return record | {"ts": PAYLOAD_T0 + i}
        return record | {"ts": None} if as_null else {k: v for k, v in record.items() if k != "ts"}

    result = _ingest("kafka_json", [ts_of(i, r) for i, r in enumerate(records)])
    assert result.quarantine.is_empty()
    for row, ts, source in result.events.select("source_row", "ts", "ts_source").iter_rows():
        from_record = row in dropped
        expected_ms = T0 + row if from_record else PAYLOAD_T0 + row  # envelope i: T0 + i
        assert ts == datetime.fromtimestamp(expected_ms / 1000, tz=UTC)
        assert source == ("kafka_record" if from_record else "payload")
