"""A lower bound on valuations from purchases at quoted prices
(docs/method.md#what-the-logs-cannot-identify).

A buyer's valuation is at least the price it paid. Bin the view quotes by r = price/anchor; in a
bin [r_lo, r_hi) the conversion c = bought/quoted satisfies c <= mean_q P(V >= r_q) <= P(V >= r_lo)
for the relative valuation V = v/anchor of the quoted shoppers. For a normal V with a given
σ_rel, P(V >= r_lo) >= c means μ_rel >= r_lo + σ_rel·Φ⁻¹(c), so the largest such bound over the
bins is the smallest μ_rel consistent with the purchases.

What it does NOT bound: μ_rel from above (not buying does not mean v < p: the shopper may want
another product, or an agent may buy in another session -- agents' reconnaissance quotes never
convert, which only weakens the bound), σ_rel (it is an input), the valuations of shoppers who
were never quoted, or a difference between classes. The quoted population is selected by
engagement, so the bound is about the valuations of the shoppers who were quoted.
`mu_min` uses each bin's one-sided Clopper-Pearson lower limit at level 1 − (1 − level)/bins
(Bonferroni over bins), treating quotes as independent (a session quotes several products but
buys at most a few; clustering is not modelled here); `mu_min_point` uses the point conversions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.market.prices.coi import relative_quotes

__all__ = ["ValuationBound", "valuation_bound"]


@dataclass(frozen=True)
class ValuationBound:
    """Conversion by relative quote and the smallest consistent mean relative valuation.

    Attributes:
        curve: `bin_low, bin_high, n_quotes, n_bought, conversion, conversion_low` per bin.
        sigma_rel: The σ of V the bound is computed for.
        mu_min: Smallest μ_rel consistent with the lower confidence limits (-inf: no purchase).
        mu_min_point: The same from the point conversions (bins converting 0% or 100% skipped).
        level: Joint confidence level of `mu_min`.
    """

    curve: pl.DataFrame
    sigma_rel: float
    mu_min: float
    mu_min_point: float
    level: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (`valuation_bound.json`; non-finite numbers become null)."""

        def num(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {"sigma_rel": self.sigma_rel, "mu_min": num(self.mu_min),
                "mu_min_point": num(self.mu_min_point), "level": self.level,
                "curve": self.curve.to_dicts()}  # fmt: skip


def _bound(r_low: np.ndarray, conversion: np.ndarray, sigma: float) -> float:
    """max over bins with 0 < c < 1 of r_low + σ·Φ⁻¹(c) (-inf when no bin qualifies)."""
    ok = (conversion > 0) & (conversion < 1)
    if not ok.any():
        return -math.inf
    return float(np.max(r_low[ok] + sigma * stats.norm.ppf(conversion[ok])))


def valuation_bound(
    quotes: pl.DataFrame,
    anchors: pl.DataFrame,
    sigma_rel: float,
    n_bins: int = 8,
    level: float = 0.95,
) -> ValuationBound:
    """Conversion curve over quantile bins of price/anchor and the normal lower bound on μ_rel.

    Args:
        quotes: `quote_features` rows of one store (filter by actor first for one class).
        anchors: `product_id, anchor`.
        sigma_rel: σ of the relative valuation V (> 0).
        n_bins: Quantile bins of the relative quote.
        level: Joint confidence level of `mu_min`.

    Raises:
        ValueError: for sigma_rel <= 0, n_bins < 1 or a level outside (0, 1).
    """
    if not sigma_rel > 0 or n_bins < 1 or not 0 < level < 1:
        raise ValueError(f"need sigma_rel > 0, n_bins >= 1, level in (0, 1); got "
                         f"{sigma_rel}, {n_bins}, {level}")  # fmt: skip
    rel = relative_quotes(quotes, anchors)
    r = rel["ratio"].to_numpy()
    bought = rel["bought"].fill_null(False).to_numpy()
    edges = np.unique(np.quantile(r, np.linspace(0, 1, n_bins + 1))) if r.size else np.zeros(1)
    index = np.clip(np.searchsorted(edges, r, side="right") - 1, 0, max(edges.size - 2, 0))
    k = max(edges.size - 1, 1)
    n = np.bincount(index, minlength=k)[:k]
    b = np.bincount(index, bought.astype(np.float64), k)[:k]
    alpha = (1.0 - level) / k
    with np.errstate(invalid="ignore", divide="ignore"):
        conversion = b / n
        low = np.where(b > 0, stats.beta.ppf(alpha, b, n - b + 1), 0.0)
    curve = pl.DataFrame({
        "bin_low": edges[:k], "bin_high": edges[1 : k + 1] if edges.size > 1 else edges[:k],
        "n_quotes": n.astype(np.int64), "n_bought": b.astype(np.int64),
        "conversion": conversion, "conversion_low": low,
    })  # fmt: skip
    return ValuationBound(curve, sigma_rel, _bound(edges[:k], low, sigma_rel),
                          _bound(edges[:k], conversion, sigma_rel), level)  # fmt: skip
