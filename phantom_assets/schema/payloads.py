"""Staging fields of flat JSON event payloads (JSON Lines rows, Kafka `value.payload`).

polars pulls every field out as text. Two things text alone cannot tell are settled by reading
the raw record with Python's json, only for rows a vectorized test cannot clear:

- a JSON array or object in a scalar field (`productId: ["a", "b"]` reads as the text
  `["a","b"]`, just like the *string* `"[\\"a\\",\\"b\\"]"`): rows whose field text starts
  with `[` or `{` are re-read, and the record gets `pre_reason = non_scalar_value` with a detail
  naming the field. Known metadata keys are scalar too (they are the flattened `metadata_*`
  columns of the whoclickedit table).
- metadata keys outside `METADATA_KEYS` (rows whose metadata is not `PLAIN_METADATA`): kept, as
  `md_extra` (a JSON object text, keys sorted, values exactly as in the raw text), so that the
  canonical `metadata` keeps the whole object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import polars as pl

from phantom_assets.schema.raw_formats import METADATA_KEYS
from phantom_assets.schema.staging import PAYLOAD_KEYS

NON_SCALAR_VALUE: Final[str] = "non_scalar_value"
MALFORMED_JSON: Final[str] = "malformed_json"
_SNIPPET: Final[int] = 80
_KNOWN_METADATA: Final[frozenset[str]] = frozenset(METADATA_KEYS)
_SCALAR: Final[str] = r'(?:"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)'
_KNOWN_ENTRY: Final[str] = '"(?:' + "|".join(METADATA_KEYS) + ')":' + _SCALAR
# A compact object of known keys with scalar values (a regular language, so a regex decides it
# exactly): such metadata needs no reading in Python -- the common case, kept vectorized.
PLAIN_METADATA: Final[str] = rf"(?s)^\{{(?:{_KNOWN_ENTRY}(?:,{_KNOWN_ENTRY})*)?\}}$"
_CHECK_SCHEMA: Final[dict[str, pl.DataType]] = {
    "md_extra": pl.String(),
    "__problem_reason": pl.String(),
    "__problem_detail": pl.String(),
}
PayloadLocator = Callable[[Any], Any]


def payload_fields(payload: pl.Expr, metadata: pl.Expr) -> list[pl.Expr]:
    """Expressions pulling every staging field out of a JSON payload text column.

    Args:
        payload: a Utf8 expression holding one flat event payload object per row as JSON text.
        metadata: the payload's `metadata` object as JSON text (extracted once by the caller).

    Returns:
        One aliased Utf8 expression per payload key and known metadata key (record/actor fields
        are null: a payload does not carry them). Non-string JSON values come back as JSON text.
    """
    exprs = [
        payload.str.json_path_match(f"$.{key}").alias(name) for name, key in PAYLOAD_KEYS.items()
    ]
    exprs += [metadata.str.json_path_match(f"$.{key}").alias(f"md_{key}") for key in METADATA_KEYS]
    exprs += [
        pl.lit(None, pl.String).alias(name) for name in ("record_type", "actor_type", "is_agent")
    ]
    return exprs


def _kind(value: Any) -> str | None:
    """'array' or 'object' for a non-scalar JSON value, else None."""
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else None


def _non_scalar(field: str, value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"))[:_SNIPPET]
    return f"{field} is a JSON {_kind(value)}, not a single value: {shown}"


def _load(text: str) -> tuple[Any, str | None]:
    """The JSON value of `text`, or a problem when it is not JSON."""
    try:
        return json.loads(text, strict=False), None
    except ValueError as error:
        return None, f"not readable as JSON ({error})"


def _payload_problem(fields: dict[str, Any]) -> tuple[str | None, str | None]:
    """(reason, detail) for the first scalar payload field holding an array or object."""
    for key in PAYLOAD_KEYS.values():
        if _kind(fields.get(key)) is not None:
            return NON_SCALAR_VALUE, _non_scalar(key, fields[key])
    return None, None


def _split_metadata(metadata: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(`md_extra`, reason, detail) of one metadata object (see `check_record`)."""
    extras = {key: item for key, item in metadata.items() if key not in _KNOWN_METADATA}
    extra_text = None
    if extras:
        try:
            extra_text = json.dumps(
                extras, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
            )
        except ValueError:
            return None, MALFORMED_JSON, "metadata holds a number JSON cannot represent"
    for key in METADATA_KEYS:
        if _kind(metadata.get(key)) is not None:
            return extra_text, NON_SCALAR_VALUE, _non_scalar(f"metadata.{key}", metadata[key])
    return extra_text, None, None


def check_record(raw: str, locate: PayloadLocator) -> tuple[str | None, str | None, str | None]:
    """(`md_extra`, reason, detail) of one raw record read by Python's json.

    Args:
        raw: the record's text (a JSON Lines line, a Kafka envelope).
        locate: returns the flat payload object inside the parsed record.

    Returns:
        `md_extra` is the JSON text of the metadata entries outside `METADATA_KEYS` (keys sorted,
        values exactly as in the raw text, nulls included), None when there are none. The reason
        is `non_scalar_value` for the first scalar field (payload first, then known metadata
        keys) holding an array or object, with a detail that starts with the field's name.
    """
    record, problem = _load(raw)
    payload = None
    if problem is None:
        try:
            payload = locate(record)
        except ValueError as error:  # a Kafka value holding JSON text that is not JSON
            problem = f"not readable as JSON ({error})"
    if problem is not None or not isinstance(payload, dict):
        return None, MALFORMED_JSON, f"record {problem or 'has no payload object'}"
    reason, detail = _payload_problem(payload)
    metadata = payload.get("metadata")
    if not isinstance(metadata, dict):
        return None, reason, detail  # no metadata, or not an object (flagged by the reader)
    extra_text, md_reason, md_detail = _split_metadata(metadata)
    return (extra_text, reason, detail) if reason else (extra_text, md_reason, md_detail)


def _suspect() -> pl.Expr:
    """Rows where a scalar field or the metadata *might* hold an array, object or unknown key."""
    starts = [
        pl.col(name).str.starts_with("[") | pl.col(name).str.starts_with("{")
        for name in PAYLOAD_KEYS
    ]
    metadata = pl.col("__metadata")
    plain = ~metadata.str.starts_with("{") | metadata.str.contains(PLAIN_METADATA)
    return (pl.any_horizontal(starts) | ~plain).fill_null(False)


def add_json_checks(frame: pl.DataFrame, locate: PayloadLocator) -> pl.DataFrame:
    """Add `md_extra` and `__problem_reason`/`__problem_detail` (see `check_record`).

    Args:
        frame: has `source_row`, `raw`, `__payload` and `__metadata` (JSON texts) and the
            payload fields of `payload_fields`.
        locate: returns the payload object inside a record parsed by `json.loads`.

    Returns:
        `frame` with the three columns added (null where there is nothing to say).
    """
    # polars cannot type a JSON value (array vs string) nor list an object's open-ended keys
    # (json_decode needs one fixed struct schema), and its JSON re-serialisation may round
    # floats, so those questions go to the C json parser -- only for the rows the vectorized
    # `_suspect` test cannot clear, which a clean batch does not have.
    rows = frame.filter(_suspect() & pl.col("__payload").str.starts_with("{"))
    checked = [check_record(raw, locate) for raw in rows["raw"]]
    found = pl.DataFrame(
        {
            "source_row": rows["source_row"],
            "md_extra": [row[0] for row in checked],
            "__problem_reason": [row[1] for row in checked],
            "__problem_detail": [row[2] for row in checked],
        },
        schema={"source_row": frame.schema["source_row"], **_CHECK_SCHEMA},
    )
    return frame.join(found, on="source_row", how="left", maintain_order="left")
