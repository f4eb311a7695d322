"""Actor labels of raw records: experiment sidecar first, then actor columns, else unknown.

The sidecar (`raw_formats` docstring) lies beside the batch file: `<stem>.experiments.csv`, else
`experiments.csv` in the same folder. `xp_human_only = true` labels the experiment's sessions
human, `false` agent; an experiment listed with both values is left unlabeled rather than guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import polars as pl

from phantom_assets.constants import ACTORS, UNKNOWN_ACTOR
from phantom_assets.schema.detect import UnreadableFileError
from phantom_assets.schema.encoding import INVALID_BYTES_MARK, decode_text
from phantom_assets.schema.raw_formats import (
    EXPERIMENTS_SIDECAR_NAME,
    EXPERIMENTS_SIDECAR_SUFFIX,
)

_TRUE: Final[tuple[str, ...]] = ("true", "1", "yes")
_FALSE: Final[tuple[str, ...]] = ("false", "0", "no")
HUMAN, AGENT = ACTORS
SIDECAR_SCHEMA: Final[dict[str, pl.DataType]] = {
    "experiment_id": pl.String(),
    "sidecar_actor": pl.String(),
}


def find_sidecar(path: Path) -> Path | None:
    """Return the experiments sidecar that applies to the batch file `path`, if one exists."""
    for candidate in (
        path.with_name(path.stem + EXPERIMENTS_SIDECAR_SUFFIX),
        path.with_name(EXPERIMENTS_SIDECAR_NAME),
    ):
        if candidate.is_file() and candidate.resolve() != path.resolve():
            return candidate
    return None


def _flag(expr: pl.Expr, when_true: str, when_false: str) -> pl.Expr:
    """Map a textual boolean onto two labels (null when it is neither)."""
    text = expr.str.strip_chars().str.to_lowercase()
    return (
        pl.when(text.is_in(_TRUE))
        .then(pl.lit(when_true))
        .when(text.is_in(_FALSE))
        .then(pl.lit(when_false))
    )


def read_sidecar(path: Path) -> pl.DataFrame:
    """Experiment labels beside `path` as (`experiment_id`, `sidecar_actor`); empty if none.

    Raises:
        UnreadableFileError: a sidecar exists but is not text (UTF-8, or UTF-16/32 with a BOM)
            nor a CSV with `experimentId` and `xp_human_only` columns (the message names it).
    """
    sidecar = find_sidecar(path)
    if sidecar is None:
        return pl.DataFrame(schema=SIDECAR_SCHEMA)
    try:
        text = decode_text(sidecar.read_bytes())  # BOM-aware, like the batch files
    except OSError as error:
        raise UnreadableFileError(sidecar, f"cannot read the file ({error.strerror})") from error
    if INVALID_BYTES_MARK in text:
        raise UnreadableFileError(sidecar, "experiments sidecar holds bytes that are not text")
    try:
        table = pl.read_csv(text.encode(), infer_schema=False)
    except Exception as error:  # polars raises several types for unparseable CSV
        raise UnreadableFileError(sidecar, f"experiments sidecar not readable ({error})") from error
    missing = [c for c in ("experimentId", "xp_human_only") if c not in table.columns]
    if missing:
        raise UnreadableFileError(sidecar, f"experiments sidecar lacks the columns {missing}")
    labels = table.select(
        experiment_id=pl.col("experimentId").str.strip_chars(),
        sidecar_actor=_flag(pl.col("xp_human_only"), HUMAN, AGENT),
    ).drop_nulls()
    return (
        labels.group_by("experiment_id", maintain_order=True)
        .agg(
            sidecar_actor=pl.when(pl.col("sidecar_actor").n_unique() == 1).then(
                pl.col("sidecar_actor").first()
            )
        )
        .drop_nulls()
        .select(pl.col(name).cast(dtype) for name, dtype in SIDECAR_SCHEMA.items())
    )


def label_exprs() -> list[pl.Expr]:
    """`actor` and `label_source` from `sidecar_actor`, `actor_type` and `is_agent` columns."""
    actor_type = pl.col("actor_type").str.strip_chars().str.to_lowercase()
    column_actor = (
        pl.when(actor_type.is_in(ACTORS))
        .then(actor_type)
        .otherwise(_flag(pl.col("is_agent"), AGENT, HUMAN))
    )
    has_sidecar = pl.col("sidecar_actor").is_not_null()
    return [
        pl.coalesce(pl.col("sidecar_actor"), column_actor, pl.lit(UNKNOWN_ACTOR)).alias("actor"),
        pl.when(has_sidecar)
        .then(pl.lit("experiment"))
        .when(column_actor.is_not_null())
        .then(pl.lit("actor_column"))
        .otherwise(pl.lit("none"))
        .alias("label_source"),
    ]
