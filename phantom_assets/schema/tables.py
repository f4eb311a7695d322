"""Columns of a whoclickedit table (CSV or Parquet) as staging text fields.

The contract's columns map onto staging fields one to one (`staging.TABLE_COLUMNS`). Two edges
of real exports are handled here so that no value is dropped silently:

- `metadata_<key>` columns whose key is outside `METADATA_KEYS` become `md_extra` (a JSON object
  text), so they survive in the canonical `metadata`;
- Parquet list/array/struct columns are written as JSON text; a non-null nested value in one of
  the contract's (scalar) columns marks the row `non_scalar_value`, naming the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import polars as pl

from phantom_assets.schema.detect import UnreadableFileError
from phantom_assets.schema.fields import json_object
from phantom_assets.schema.payloads import NON_SCALAR_VALUE
from phantom_assets.schema.raw_formats import METADATA_KEYS
from phantom_assets.schema.staging import TABLE_COLUMNS

REQUIRED_TABLE_COLUMNS: Final[tuple[str, ...]] = ("sessionId", "storeMode", "ts", "eventName")
METADATA_PREFIX: Final[str] = "metadata_"
_NESTED: Final[tuple[type[pl.DataType], ...]] = (pl.List, pl.Array, pl.Struct)
_SNIPPET: Final[int] = 80


def check_header(path: Path, header: list[str]) -> None:
    """Raise UnreadableFileError when the header repeats a column or lacks a required one."""
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise UnreadableFileError(path, f"the header repeats the columns {duplicated}")
    missing = [name for name in REQUIRED_TABLE_COLUMNS if name not in header]
    if missing:
        raise UnreadableFileError(path, f"the table lacks the required columns {missing}")


def extra_metadata_columns(columns: list[str]) -> dict[str, str]:
    """`metadata_<key>` columns whose key is not in `METADATA_KEYS`: key -> column, sorted."""
    extras = {
        column.removeprefix(METADATA_PREFIX): column
        for column in columns
        if column.startswith(METADATA_PREFIX)
        and column.removeprefix(METADATA_PREFIX) not in METADATA_KEYS
    }
    return dict(sorted(extras.items()))


def table_fields(frame: pl.DataFrame) -> list[pl.Expr]:
    """Map whoclickedit columns onto staging fields (absent optional columns become null)."""
    extras = extra_metadata_columns(frame.columns)
    md_extra = json_object(extras) if extras else pl.lit(None, pl.String)
    return [
        *(
            (pl.col(column) if column in frame.columns else pl.lit(None, pl.String)).alias(name)
            for name, column in TABLE_COLUMNS.items()
        ),
        md_extra.alias("md_extra"),
    ]


def _json_text(name: str) -> pl.Expr:
    """JSON text of a nested column (null stays null)."""
    encoded = pl.struct(pl.col(name).alias("v")).struct.json_encode()
    return pl.when(pl.col(name).is_not_null()).then(
        encoded.str.strip_prefix('{"v":').str.strip_suffix("}")
    )


def parquet_as_text(path: Path, table: pl.DataFrame) -> pl.DataFrame:
    """Every column of a Parquet table as text, plus `pre_reason`/`pre_detail` for non-scalars.

    Datetimes become epoch milliseconds, nested values JSON text, everything else its text.

    Raises:
        UnreadableFileError: a column cannot be turned into text (the message names the file).
    """
    nested = [name for name, dtype in table.schema.items() if isinstance(dtype, _NESTED)]
    as_epoch = [
        pl.col(name).dt.epoch("ms")
        for name, dtype in table.schema.items()
        if isinstance(dtype, pl.Datetime)
    ]
    try:
        table = (
            table.with_columns(as_epoch)
            .with_columns(_json_text(name).alias(name) for name in nested)
            .with_columns(pl.all().cast(pl.String))
        )
    except pl.exceptions.PolarsError as error:
        raise UnreadableFileError(path, f"a column cannot be read as text ({error})") from error
    scalar = [name for name in nested if name in TABLE_COLUMNS.values()]
    if not scalar:
        return table.with_columns(pre_reason=pl.lit(None, pl.String), pre_detail=pl.lit(None))
    first = pl.coalesce(pl.when(pl.col(name).is_not_null()).then(pl.lit(name)) for name in scalar)
    value = pl.coalesce(pl.col(name) for name in scalar).str.slice(0, _SNIPPET)
    return table.with_columns(
        pre_reason=pl.when(first.is_not_null()).then(pl.lit(NON_SCALAR_VALUE)),
        pre_detail=pl.format("{} is a nested Parquet value, not a single value: {}", first, value),
    )
