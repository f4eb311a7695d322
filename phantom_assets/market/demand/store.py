"""A store's demand (`store_demand`): both classes fitted from the decisions of its price logs, the
conversion surface with its intervals, and the files of the contract
(docs/architecture.md#column-contracts): `demand.json`, `conversion.parquet`, `replicates.parquet`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.constants import ACTORS, ENGAGEMENT_SIGNALS
from phantom_assets.lake import CONVERSION_FILE, DEMAND_MODEL_FILE, DEMAND_REPLICATES_FILE
from phantom_assets.market.demand.model import (
    PARAMETERS,
    ClassDemand,
    DemandFitParams,
    conversion_probability,
    fit_class,
)
from phantom_assets.market.prices.features import signal_column
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

__all__ = [
    "CONVERSION_SCHEMA",
    "DEMAND_SOURCES",
    "ENGAGEMENT_GRID",
    "MODEL",
    "RATIO_GRID",
    "REPLICATE_SCHEMA",
    "DemandRecord",
    "StoreDemand",
    "conversion_surface",
    "demand_markdown",
    "fit_store_demand",
    "observed_conversion",
    "read_store_demand",
    "replicate_table",
    "write_store_demand",
]

DEMAND_SOURCES = ("logs", "declared")
MODEL = "P(buy | r, s) = pi * Phi((mu + beta * g(s) - r) / sigma), g(s) = 1 - exp(-s / s0)"
ENGAGEMENT_GRID = np.arange(13, dtype=np.float64)
"""Engagement values of the conversion surface (signal units, 0 … 12)."""
RATIO_GRID = np.round(np.arange(0.5, 2.0 + 1e-9, 0.05), 2)
"""Price / anchor values of the conversion surface (0.50, 0.55, …, 2.00)."""
CONVERSION_SCHEMA: dict[str, pl.DataType] = {
    "class": pl.String(),
    "engagement": pl.Float64(),
    "ratio": pl.Float64(),
    "p_buy": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
}
REPLICATE_SCHEMA: dict[str, pl.DataType] = {
    "replicate": pl.Int64(),
    "class": pl.String(),
    **{name: pl.Float64() for name in PARAMETERS},
}


@dataclass(frozen=True)
class StoreDemand:
    """A store's demand, as `store_demand` writes it.

    Attributes:
        store: The store.
        source: "logs" when the human class is identified, else "declared" (the market then
            calibrates by revealed preference: `revealed.revealed_preference`).
        reason: Why it is declared ("" when from the logs).
        signal: The engagement signal s is measured in (the store's pricing signal).
        scale: s0 of g(s) = 1 − exp(−s/s0) (the market's).
        classes: The fit of each class that has decisions.
        conversion: Share of human decisions that bought (None without any).
        params: The fit's knobs.
    """

    store: str
    source: str
    reason: str
    signal: str
    scale: float
    classes: dict[str, ClassDemand]
    conversion: float | None
    params: DemandFitParams

    def __post_init__(self) -> None:
        """Raises ValueError for an unknown source."""
        if self.source not in DEMAND_SOURCES:
            raise ValueError(f"source must be one of {DEMAND_SOURCES}, got {self.source!r}")

    @property
    def human(self) -> ClassDemand | None:
        """The human class's fit, if any."""
        return self.classes.get(ACTORS[0])

    def to_json(self) -> dict[str, Any]:
        """`demand.json` payload."""
        return {
            "store": self.store,
            "source": self.source,
            "reason": self.reason,
            "signal": self.signal,
            "scale": self.scale,
            "model": MODEL,
            "conversion": self.conversion,
            "replicates": self.params.replicates,
            "level": self.params.level,
            "ci_method": "profile likelihood (chi-square(1) deviance); the replicates (Poisson "
            "bootstrap by experiment, each refitted) drive the market's episodes",
            "identification": {
                "min_decisions": self.params.min_decisions,
                "min_purchases": self.params.min_purchases,
                "min_experiments": self.params.min_experiments,
                "min_price_variation": self.params.min_price_variation,
            },
            "n_decisions": sum(c.diagnostics["n_decisions"] for c in self.classes.values()),
            "n_experiments": sum(c.diagnostics["n_experiments"] for c in self.classes.values()),
            "classes": {actor: fit.to_json() for actor, fit in self.classes.items()},
        }


def _decisions(quotes: pl.DataFrame, anchors: pl.DataFrame, signal: str) -> pl.DataFrame:
    """`actor, experiment_id, s, r, bought` per usable decision quote with an anchor."""
    s = pl.col(signal_column(signal)) if signal in ENGAGEMENT_SIGNALS else pl.lit(0.0)
    return (
        quotes.filter(pl.col("decision"), pl.col("reason").is_null())
        .join(anchors.select("product_id", "anchor"), on="product_id", how="inner")
        .select(
            "actor",
            pl.col("experiment_id").fill_null(pl.col("session_id")),
            s.cast(pl.Float64).alias("s"),
            (pl.col("price") / pl.col("anchor")).alias("r"),
            pl.col("bought").fill_null(False),
        )
    )


def fit_store_demand(
    store: str,
    quotes: pl.DataFrame,
    anchors: pl.DataFrame,
    signal: str,
    scale: float,
    params: DemandFitParams | None = None,
) -> StoreDemand:
    """Fit both classes of a store (module docstring of `demand.model`).

    Args:
        store: The store.
        quotes: Its `quote_features` rows (the `decision` rows are fitted).
        anchors: `product_id, anchor` of its price model (relative quotes r = price / anchor);
            empty for a store with declared prices (nothing is fitted then).
        signal: The engagement signal of its price model.
        scale: s0 of g(s) in that signal (the market's).
        params: The fit's knobs.
    """
    params = params or DemandFitParams()
    if not scale > 0:
        raise ValueError(f"the engagement scale s0 must be > 0, got {scale!r}")
    decisions = _decisions(quotes, anchors, signal) if anchors.height else None
    classes: dict[str, ClassDemand] = {}
    for actor in ACTORS:
        rows = None if decisions is None else decisions.filter(pl.col("actor") == actor)
        if rows is None or rows.is_empty():
            continue
        s = rows["s"].to_numpy()
        classes[actor] = fit_class(
            actor,
            -np.expm1(-s / scale),
            s,
            rows["r"].to_numpy(),
            rows["bought"].to_numpy(),
            rows["experiment_id"].to_numpy(),
            params,
        )
    human = classes.get(ACTORS[0])
    reason = (
        "no decisions at quoted prices (no usable price logs)"
        if human is None
        else ""
        if human.identified
        else f"humans: {human.reason}"
    )
    conversion = (
        None
        if human is None
        else human.diagnostics["n_purchases"] / human.diagnostics["n_decisions"]
    )
    return StoreDemand(
        store,
        "declared" if reason else "logs",
        reason,
        signal,
        float(scale),
        classes,
        conversion,
        params,
    )


def conversion_surface(demand: StoreDemand) -> pl.DataFrame:
    """P(buy) by class on `ENGAGEMENT_GRID` × `RATIO_GRID` at the estimate, with the
    `params.level` percentile interval over the replicates (`CONVERSION_SCHEMA`); a class
    without a finite fit has no rows."""
    g = -np.expm1(-ENGAGEMENT_GRID / demand.scale)
    e, r = np.meshgrid(ENGAGEMENT_GRID, RATIO_GRID, indexing="ij")
    gg = np.broadcast_to(g[:, None], e.shape)
    tail = (1.0 - demand.params.level) / 2.0
    frames = []
    for actor, fit in demand.classes.items():
        if not np.all(np.isfinite(fit.estimate)):
            continue
        point = conversion_probability(fit.estimate, gg, r)
        finite = fit.replicates[np.isfinite(fit.replicates).all(axis=1)]
        if finite.shape[0] >= 2:
            draws = np.stack([conversion_probability(row, gg, r) for row in finite])
            low, high = np.quantile(draws, [tail, 1.0 - tail], axis=0)
        else:
            low = high = np.full(point.shape, math.nan)
        frames.append(
            pl.DataFrame(
                {
                    "class": actor,
                    "engagement": e.ravel(),
                    "ratio": r.ravel(),
                    "p_buy": point.ravel(),
                    "ci_low": low.ravel(),
                    "ci_high": high.ravel(),
                },
                schema=CONVERSION_SCHEMA,
            )
        )
    return pl.concat(frames) if frames else pl.DataFrame(schema=CONVERSION_SCHEMA)


def replicate_table(demand: StoreDemand) -> pl.DataFrame:
    """Every class's replicate estimates (`REPLICATE_SCHEMA`; NaN where a refit failed)."""
    frames = [
        pl.DataFrame(
            {
                "replicate": np.arange(fit.replicates.shape[0]),
                "class": actor,
                **{name: fit.replicates[:, i] for i, name in enumerate(PARAMETERS)},
            },
            schema=REPLICATE_SCHEMA,
        )
        for actor, fit in demand.classes.items()
    ]
    return pl.concat(frames) if frames else pl.DataFrame(schema=REPLICATE_SCHEMA)


def write_store_demand(demand: StoreDemand, folder: Path) -> list[Path]:
    """Write `demand.json`, `conversion.parquet` and `replicates.parquet` atomically."""
    folder = Path(folder)
    paths = [folder / DEMAND_MODEL_FILE, folder / CONVERSION_FILE, folder / DEMAND_REPLICATES_FILE]
    write_json_atomic(demand.to_json(), paths[0])
    write_parquet_atomic(conversion_surface(demand), paths[1])
    write_parquet_atomic(replicate_table(demand), paths[2])
    return paths


@dataclass(frozen=True)
class DemandRecord:
    """What the market reads back of a store's demand (`read_store_demand`).

    Attributes:
        source: "logs" or "declared".
        reason: why declared ("" from the logs).
        scale: s0 of g(s).
        conversion: share of human decisions that bought (None without any).
        estimates: per class with a finite fit, its (4,) `PARAMETERS` estimate.
        identified: per class, whether it is identified.
        replicates: per class, its (B, 4) replicate estimates.
        ci: per class, its (2, 4) interval.
    """

    source: str
    reason: str
    scale: float
    conversion: float | None
    estimates: dict[str, np.ndarray]
    identified: dict[str, bool]
    replicates: dict[str, np.ndarray]
    ci: dict[str, np.ndarray]


def read_store_demand(folder: Path) -> DemandRecord:
    """Read a store's `demand.json` and `replicates.parquet`.

    Raises:
        ValueError: naming the file that is missing, unreadable or breaks the contract.
    """
    folder = Path(folder)
    path = folder / DEMAND_MODEL_FILE
    try:
        payload = json.loads(path.read_text())
        replicates = pl.read_parquet(folder / DEMAND_REPLICATES_FILE)
    except (OSError, ValueError, pl.exceptions.PolarsError) as error:
        raise ValueError(
            f"{folder}: cannot read the store's demand ({error}); re-materialize store_demand"
        ) from error
    if payload.get("source") not in DEMAND_SOURCES or "classes" not in payload:
        raise ValueError(f"{path}: not a store_demand file (source {payload.get('source')!r})")

    def values(entry: dict[str, Any], suffix: str = "") -> np.ndarray:
        return np.array(
            [
                math.nan
                if entry.get(f"{name}{suffix}") is None
                else float(entry[f"{name}{suffix}"])
                for name in PARAMETERS
            ]
        )

    classes = payload["classes"]
    return DemandRecord(
        source=payload["source"],
        reason=payload["reason"],
        scale=float(payload["scale"]),
        conversion=payload.get("conversion"),
        estimates={actor: values(entry) for actor, entry in classes.items()},
        identified={actor: bool(entry["identified"]) for actor, entry in classes.items()},
        replicates={
            actor: replicates.filter(pl.col("class") == actor)
            .sort("replicate")
            .select(PARAMETERS)
            .to_numpy()
            for actor in classes
        },
        ci={
            actor: np.vstack([values(entry, "_ci_low"), values(entry, "_ci_high")])
            for actor, entry in classes.items()
        },
    )


def observed_conversion(
    quotes: pl.DataFrame, anchors: pl.DataFrame, signal: str, bins: int = 8
) -> pl.DataFrame:
    """`class, ratio, conversion, n`: the decisions' purchase share in quantile bins of
    price / anchor per class (the plot's dots; ratio = the bin's mean)."""
    if not anchors.height:
        return pl.DataFrame(
            schema={
                "class": pl.String,
                "ratio": pl.Float64,
                "conversion": pl.Float64,
                "n": pl.UInt32,
            }
        )
    decisions = _decisions(quotes, anchors, signal)
    binned = decisions.with_columns(
        pl.col("r")
        .qcut(bins, labels=[str(i) for i in range(bins)], allow_duplicates=True)
        .over("actor")
        .alias("bin")
    )
    return (
        binned.group_by("actor", "bin")
        .agg(ratio=pl.col("r").mean(), conversion=pl.col("bought").mean(), n=pl.len())
        .rename({"actor": "class"})
        .select("class", "ratio", "conversion", "n")
        .sort("class", "ratio")
    )


def demand_markdown(demand: StoreDemand) -> str:
    """The fit as a markdown table: per class each parameter with its interval, the
    identification diagnostics and the verdict."""
    lines = [
        f"**source: {demand.source}**" + (f" ({demand.reason})" if demand.reason else ""),
        "",
        f"Model: `{MODEL}`, s in `{demand.signal}`, s0 = {demand.scale:.3g}.",
        "",
        "| class | μ | β | σ | π | decisions / purchases / experiments | price variation at "
        "equal engagement | corr(g, r) | identified |",
        "|---|---|---|---|---|---|---:|---:|---|",
    ]
    for actor, fit in demand.classes.items():
        cells = [
            f"{fit.estimate[i]:.3g} [{fit.ci[0, i]:.3g}, {fit.ci[1, i]:.3g}]"
            for i in range(len(PARAMETERS))
        ]
        d = fit.diagnostics
        corr = "—" if d["corr_g_r"] is None else f"{d['corr_g_r']:.2f}"
        verdict = "yes" if fit.identified else f"no: {fit.reason}"
        lines.append(
            f"| {actor} | {' | '.join(cells)} | {d['n_decisions']} / "
            f"{d['n_purchases']} / {d['n_experiments']} | "
            f"{d['price_variation']:.3g} | {corr} | {verdict} |"
        )
    return "\n".join(lines) + "\n"
