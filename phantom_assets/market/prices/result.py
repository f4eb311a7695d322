"""`PriceModel`, the record `store_prices` writes, and the declared defaults
(docs/method.md#store-prices-from-the-price-logs).

A store without enough price logs gets `declared_price_model`: no fitted anchors (the market falls
back to its declared anchors, `market.compile.anchor_prices`: uniform in the declared range), the
declared markup and quote noise (`MarketConfig.declared_markup`, `declared_quote_noise`), the
demand-proxy signal and no s0 (the market's engagement-scale rule applies), each
with source "declared" and `reason` saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from phantom_assets.config import MarketConfig
from phantom_assets.constants import ENGAGEMENT_SIGNALS

__all__ = [
    "ANCHOR_SCHEMA",
    "DECLARED_MARKUP",
    "DECLARED_QUOTE_NOISE",
    "DECLARED_SIGNAL",
    "PRICE_SOURCES",
    "PriceModel",
    "declared_price_model",
    "price_model_markdown",
    "uniform_half_width",
]

PRICE_SOURCES = ("logs", "declared")
ANCHOR_SCHEMA: dict[str, Any] = {
    "product_id": pl.String,
    "anchor": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n_quotes": pl.Int64,
    "n_sessions": pl.Int64,
    "n_experiments": pl.Int64,
    "pooled": pl.Boolean,
}
"""Columns of `anchors.parquet` (docs/architecture.md#column-contracts): product_id, anchor,
n_quotes, n_sessions + CI, pooling."""
_MARKET = MarketConfig()
DECLARED_MARKUP = _MARKET.declared_markup
DECLARED_QUOTE_NOISE = _MARKET.declared_quote_noise
DECLARED_SIGNAL = "demand_proxy"  # the market's engagement without price logs
_NAN2 = (math.nan, math.nan)


def uniform_half_width(sd: float) -> float:
    """Half-width w of the uniform relative noise with standard deviation `sd`: w = √3·sd."""
    return math.sqrt(3.0) * sd


@dataclass(frozen=True)
class PriceModel:
    """One store's prices as the logs show them (or declared when they cannot).

    Attributes:
        store: The store.
        source: "logs" (fitted) or "declared" (defaults; `reason` says why).
        reason: Why the model is declared ("" when fitted).
        anchors: `ANCHOR_SCHEMA` rows, one per product quoted at a view (empty when declared).
        signal: Engagement signal the store prices on (key of `ENGAGEMENT_SIGNALS`).
        cv_rmse: CV root mean squared log error of every candidate signal.
        markup: m of the markup curve 1 + m·(1 − exp(−s/s0)).
        markup_ci: CI of m (NaN when not estimated).
        markup_source: "fitted", "none" (CV found no markup: m = 0) or "declared".
        s0: Engagement scale of the curve, in the signal's units (None: the market's rule).
        s0_ci: CI of s0 (NaN unless fitted).
        s0_source: "fitted" or "declared" (not identifiable from the logs, or no logs).
        noise_sd: σ, SD of the log residuals within experiments (relative quote dispersion).
        noise_sd_ci: CI of σ.
        arm_sd: SD of the experiments' price levels beyond the within noise (a price test's
            arms; NaN when declared).
        arm_p: one-way ANOVA p of an experiment price level effect (NaN when declared).
        n_quotes: Usable view quotes fitted.
        n_sessions: Sessions among them.
        n_experiments: Experiments among them (the cluster count).
        excluded: `features.exclusion_counts` of the store's price logs.
        level: Confidence level of the intervals.
        ci_method: How the intervals were computed.
    """

    store: str
    source: str
    reason: str
    anchors: pl.DataFrame
    signal: str
    cv_rmse: dict[str, float]
    markup: float
    markup_ci: tuple[float, float]
    markup_source: str
    s0: float | None
    s0_ci: tuple[float, float]
    s0_source: str
    noise_sd: float
    noise_sd_ci: tuple[float, float]
    n_quotes: int
    n_sessions: int
    n_experiments: int
    excluded: dict[str, int] = field(default_factory=dict)
    level: float = 0.95
    ci_method: str = ""
    arm_sd: float = math.nan
    arm_p: float = math.nan

    def __post_init__(self) -> None:
        """Raises ValueError naming a bad source, signal or anchor schema."""
        if self.source not in PRICE_SOURCES:
            raise ValueError(f"source must be one of {PRICE_SOURCES}, got {self.source!r}")
        if self.signal not in ENGAGEMENT_SIGNALS:
            raise ValueError(f"unknown engagement signal {self.signal!r}")
        if dict(self.anchors.schema) != ANCHOR_SCHEMA:
            raise ValueError(f"anchors must have schema {ANCHOR_SCHEMA}, got {self.anchors.schema}")

    @property
    def quote_noise(self) -> float:
        """w = √3·σ, the half-width of the market's uniform quote noise (1 + w·u)."""
        return uniform_half_width(self.noise_sd)

    @property
    def quote_noise_ci(self) -> tuple[float, float]:
        """CI of w (√3 × the CI of σ)."""
        return (uniform_half_width(self.noise_sd_ci[0]), uniform_half_width(self.noise_sd_ci[1]))

    @property
    def signal_weights(self) -> dict[str, float]:
        """Weights of the selected signal over the event vocabulary."""
        return dict(ENGAGEMENT_SIGNALS[self.signal])

    def to_json(self) -> dict[str, Any]:
        """`price_model.json` payload (docs/architecture.md#column-contracts); NaN bounds become
        null."""

        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "store": self.store,
            "source": self.source,
            "reason": self.reason,
            "quote_noise": num(self.quote_noise),
            "quote_noise_ci_low": num(self.quote_noise_ci[0]),
            "quote_noise_ci_high": num(self.quote_noise_ci[1]),
            "noise_sd": num(self.noise_sd),
            "noise_sd_ci_low": num(self.noise_sd_ci[0]),
            "noise_sd_ci_high": num(self.noise_sd_ci[1]),
            "arm_sd": num(self.arm_sd),
            "arm_p": num(self.arm_p),
            "markup": num(self.markup),
            "markup_ci_low": num(self.markup_ci[0]),
            "markup_ci_high": num(self.markup_ci[1]),
            "markup_source": self.markup_source,
            "s0": num(self.s0),
            "s0_ci_low": num(self.s0_ci[0]),
            "s0_ci_high": num(self.s0_ci[1]),
            "s0_source": self.s0_source,
            "signal": self.signal,
            "signal_weights": self.signal_weights,
            "cv_rmse": {k: num(v) for k, v in self.cv_rmse.items()},
            "n_quotes": self.n_quotes,
            "n_sessions": self.n_sessions,
            "n_experiments": self.n_experiments,
            "n_products": self.anchors.height,
            "excluded": dict(self.excluded),
            "level": self.level,
            "ci_method": self.ci_method,
        }


def declared_price_model(
    store: str, reason: str, excluded: dict[str, int], views: pl.DataFrame | None = None
) -> PriceModel:
    """The declared defaults for a store whose logs cannot identify its prices (module doc).

    Args:
        store: The store.
        reason: Why (e.g. "12 usable view quotes < min_store_quotes 100").
        excluded: Counts of its price logs by outcome.
        views: Its usable view quotes, if any (only counted).
    """
    n = 0 if views is None else views.height
    count = (lambda c: 0) if views is None else (lambda c: views[c].n_unique())
    return PriceModel(
        store=store,
        source="declared",
        reason=reason,
        anchors=pl.DataFrame(schema=ANCHOR_SCHEMA),
        signal=DECLARED_SIGNAL,
        cv_rmse={},
        markup=float(DECLARED_MARKUP),
        markup_ci=_NAN2,
        markup_source="declared",
        s0=None,
        s0_ci=_NAN2,
        s0_source="declared",
        noise_sd=DECLARED_QUOTE_NOISE / math.sqrt(3.0),
        noise_sd_ci=_NAN2,
        n_quotes=n,
        n_sessions=count("session_id"),
        n_experiments=count("experiment_id"),
        excluded=dict(excluded),
        ci_method=f"declared (anchors: uniform in {_MARKET.declared_anchor_range}, "
        f"MarketConfig.declared_anchor_range)",
    )


def price_model_markdown(model: PriceModel) -> str:
    """The price model as a markdown table (source, signal, markup, s0, noise, counts)."""

    def ci(pair: tuple[float, float]) -> str:
        return "" if not all(map(math.isfinite, pair)) else f" [{pair[0]:.4g}, {pair[1]:.4g}]"

    s0 = "the market's rule" if model.s0 is None else f"{model.s0:.4g}{ci(model.s0_ci)}"
    rows = {
        "source": model.source + (f" ({model.reason})" if model.reason else ""),
        "engagement signal": model.signal,
        "markup m": f"{model.markup:.4g}{ci(model.markup_ci)} ({model.markup_source})",
        "engagement scale s0": f"{s0} ({model.s0_source})",
        "quote noise σ within experiments (w = √3·σ)": (
            f"{model.noise_sd:.4g}{ci(model.noise_sd_ci)} (w = {model.quote_noise:.4g})"
        ),
        "price test (experiment levels)": "—"
        if not math.isfinite(model.arm_sd)
        else f"SD {model.arm_sd:.3g} (F test p = {model.arm_p:.2g})",
        "products / view quotes / sessions / experiments": f"{model.anchors.height} / "
        f"{model.n_quotes:,} / {model.n_sessions:,} / {model.n_experiments:,}",
        "excluded price logs": ", ".join(f"{k} {v}" for k, v in model.excluded.items() if v)
        or "none",
        "intervals": model.ci_method,
    }
    body = "\n".join(f"| {name} | {value} |" for name, value in rows.items())
    return f"| term | value |\n|---|---|\n{body}"
