"""Files of the `store_prices` contract (docs/architecture.md#column-contracts): `anchors.parquet` +
`price_model.json`.

Both are written atomically (`phantom_assets.storage`); the reader validates both and fails with
a `ValueError` naming the file and what is wrong with it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from phantom_assets.lake import ANCHORS_FILE, PRICE_MODEL_FILE
from phantom_assets.market.prices.result import ANCHOR_SCHEMA, PRICE_SOURCES, PriceModel
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

__all__ = ["read_store_prices", "write_store_prices"]
_REQUIRED = (
    "store",
    "source",
    "reason",
    "quote_noise",
    "noise_sd",
    "noise_sd_ci_low",
    "noise_sd_ci_high",
    "markup",
    "markup_ci_low",
    "markup_ci_high",
    "markup_source",
    "s0",
    "s0_ci_low",
    "s0_ci_high",
    "s0_source",
    "signal",
    "cv_rmse",
    "n_quotes",
    "n_sessions",
    "n_experiments",
    "excluded",
    "level",
    "ci_method",
)


def write_store_prices(model: PriceModel, folder: Path) -> dict[str, str]:
    """Write `model` under `folder` (e.g. `lake/store_prices/store=hotel`).

    Returns:
        File name -> content digest (SHA-256) of `anchors.parquet` and `price_model.json`.
    """
    folder = Path(folder)
    return {
        ANCHORS_FILE: write_parquet_atomic(model.anchors, folder / ANCHORS_FILE),
        PRICE_MODEL_FILE: write_json_atomic(model.to_json(), folder / PRICE_MODEL_FILE),
    }


def _num(value: Any) -> float:
    """JSON number or null -> float (null -> NaN)."""
    return math.nan if value is None else float(value)


def _read_json(path: Path) -> dict[str, Any]:
    """The validated payload of `price_model.json`."""
    try:
        payload = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read the price model ({e})") from e
    if not isinstance(payload, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(payload).__name__}")
    missing = [key for key in _REQUIRED if key not in payload]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}; rewrite it with write_store_prices")
    if payload["source"] not in PRICE_SOURCES:
        raise ValueError(
            f"{path}: source must be one of {PRICE_SOURCES}, got {payload['source']!r}"
        )
    return payload


def _read_anchors(path: Path) -> pl.DataFrame:
    """The validated `anchors.parquet`."""
    try:
        frame = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise ValueError(f"{path}: cannot read the anchors ({e})") from e
    missing = [c for c in ANCHOR_SCHEMA if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {list(ANCHOR_SCHEMA)}")
    frame = frame.select(list(ANCHOR_SCHEMA))
    if dict(frame.schema) != ANCHOR_SCHEMA:
        raise ValueError(f"{path}: column types {dict(frame.schema)} differ from {ANCHOR_SCHEMA}")
    bad = frame.filter(
        pl.col("product_id").is_null() | ~(pl.col("anchor") > 0) | pl.col("anchor").is_nan()
    )
    if bad.height or frame["product_id"].is_duplicated().any():
        raise ValueError(
            f"{path}: anchors must be positive with one row per product_id; "
            f"bad rows: {bad.head(3).to_dicts()}"
        )
    return frame


def read_store_prices(folder: Path) -> PriceModel:
    """Read and validate the `store_prices` files of one store.

    Raises:
        ValueError: naming the file that is missing, unreadable or breaks the contract.
    """
    folder = Path(folder)
    payload = _read_json(folder / PRICE_MODEL_FILE)
    anchors = _read_anchors(folder / ANCHORS_FILE)
    if payload["source"] == "logs" and anchors.height == 0:
        raise ValueError(f"{folder / ANCHORS_FILE}: no anchors, but price_model.json says logs")
    try:
        return PriceModel(
            store=payload["store"],
            source=payload["source"],
            reason=payload["reason"],
            anchors=anchors,
            signal=payload["signal"],
            cv_rmse={k: _num(v) for k, v in payload["cv_rmse"].items()},
            markup=_num(payload["markup"]),
            markup_ci=(_num(payload["markup_ci_low"]), _num(payload["markup_ci_high"])),
            markup_source=payload["markup_source"],
            s0=None if payload["s0"] is None else float(payload["s0"]),
            s0_ci=(_num(payload["s0_ci_low"]), _num(payload["s0_ci_high"])),
            s0_source=payload["s0_source"],
            noise_sd=_num(payload["noise_sd"]),
            noise_sd_ci=(_num(payload["noise_sd_ci_low"]), _num(payload["noise_sd_ci_high"])),
            n_quotes=int(payload["n_quotes"]),
            n_sessions=int(payload["n_sessions"]),
            n_experiments=int(payload["n_experiments"]),
            excluded={k: int(v) for k, v in payload["excluded"].items()},
            level=float(payload["level"]),
            ci_method=payload["ci_method"],
            arm_sd=_num(payload.get("arm_sd")),
            arm_p=_num(payload.get("arm_p")),
        )
    except (TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"{folder / PRICE_MODEL_FILE}: invalid price model ({e})") from e
