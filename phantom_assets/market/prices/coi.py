"""Observed COI: what each class was quoted above the anchor in the logs
(docs/method.md#observed-coi).

`premium` of a class = the quote-weighted mean of price/anchor − 1 over the class's usable view
quotes (each quote shown once: cart and checkout logs repeat the view's locked price), i.e. the
mean Σ_q (p_q/anchor_q − 1) / n. Its CI is clustered by experiment: an agent's sessions share its
habits, so its quotes are not independent, and agents run several sessions per experiment, humans
1-2. CR3 (cluster-jackknife) variance with Bell-McCaffrey df (`clustered.cluster_mean`): with
unequal experiment sizes (a few heavy browsers dominate the quote-weighted mean) CR1 with t(G − 1)
covered 0.90 at 20 experiments; CR3 + BM holds (`calibration.prices`).

Human − agent difference: the classes' experiments are disjoint, so the two clustered variances
add; the test is a Welch t with Satterthwaite degrees of freedom from the classes' BM df,
df = (v_H + v_A)² / (v_H²/df_H + v_A²/df_A) (`DIFFERENCE_METHOD`). A permutation of class labels
between whole experiments is not used: with unequal cluster sizes by class the experiments are not
exchangeable under the null, and such a test need not hold its level.

The anchors are taken as known (their sampling error is small next to the between-experiment
spread of premiums, and mostly cancels in the difference); the calibration study measures the
coverage with fitted anchors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.constants import ACTORS
from phantom_assets.market.prices.clustered import cluster_mean, t_interval
from phantom_assets.market.prices.features import view_quotes

__all__ = [
    "COI_SCHEMA",
    "DIFFERENCE_METHOD",
    "CoiDifference",
    "coi_difference",
    "observed_coi",
    "relative_quotes",
]

COI_SCHEMA: dict[str, Any] = {
    "class": pl.String,
    "premium": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n_quotes": pl.Int64,
    "n_experiments": pl.Int64,
}
"""Columns of `observed_coi.parquet` (docs/architecture.md#column-contracts)."""
DIFFERENCE_METHOD = "welch_cluster_t: CR3 by experiment per class, Satterthwaite df of BM dfs"


def relative_quotes(quotes: pl.DataFrame, anchors: pl.DataFrame) -> pl.DataFrame:
    """Usable view quotes with `ratio` = price / anchor of their product.

    Args:
        quotes: `quote_features` rows (one store).
        anchors: `product_id, anchor` (e.g. `PriceModel.anchors`); quotes of products without
            an anchor are dropped.

    Returns:
        `actor, experiment_id, session_id, product_id, price, anchor, ratio, bought`.

    Raises:
        ValueError: if anchors lack `product_id`/`anchor` or the quotes mix stores.
    """
    missing = [c for c in ("product_id", "anchor") if c not in anchors.columns]
    if missing:
        raise ValueError(f"anchors lack the columns {missing}")
    if "store" in quotes.columns and quotes["store"].drop_nulls().n_unique() > 1:
        stores = sorted(quotes["store"].drop_nulls().unique().to_list())
        raise ValueError(f"quotes of one store at a time, got stores {stores}")
    return (
        view_quotes(quotes)
        .join(anchors.select("product_id", "anchor"), on="product_id", how="inner")
        .with_columns(
            pl.col("experiment_id").fill_null(pl.col("session_id")),
            ratio=pl.col("price") / pl.col("anchor"),
        )
        .select(
            "actor",
            "experiment_id",
            "session_id",
            "product_id",
            "price",
            "anchor",
            "ratio",
            "bought",
        )
    )


def _class_premium(rel: pl.DataFrame, actor: str) -> tuple[float, float, float, int, int]:
    """(premium, CR3 SE, BM df, n quotes, n experiments) of one class."""
    part = rel.filter(pl.col("actor") == actor)
    excess = part["ratio"].to_numpy() - 1.0
    premium, se, df, g = cluster_mean(excess, part["experiment_id"].to_numpy())
    return premium, se, df, part.height, g


def observed_coi(quotes: pl.DataFrame, anchors: pl.DataFrame, level: float = 0.95) -> pl.DataFrame:
    """Premium over the anchor by class with experiment-clustered CIs (module docstring).

    Returns:
        One row per class of `constants.ACTORS` (`COI_SCHEMA`); NaN premium for a class with no
        quotes, NaN bounds with fewer than 2 experiments.
    """
    rel = relative_quotes(quotes, anchors)
    rows = []
    for actor in ACTORS:  # human, agent
        premium, se, df, n, g = _class_premium(rel, actor)
        lo, hi = t_interval(premium, se, df, level)
        rows.append((actor, premium, float(lo), float(hi), n, g))
    return pl.DataFrame(rows, schema=COI_SCHEMA, orient="row")


@dataclass(frozen=True)
class CoiDifference:
    """Human − agent premium difference and its test.

    Attributes:
        difference: premium_human − premium_agent.
        ci_low: Lower CI bound.
        ci_high: Upper CI bound.
        statistic: Welch t statistic.
        df: Satterthwaite degrees of freedom (from the classes' Bell-McCaffrey df).
        p_value: Two-sided p-value of "equal premiums".
        n_experiments_human: Human clusters.
        n_experiments_agent: Agent clusters.
        level: Confidence level of the CI.
        method: `DIFFERENCE_METHOD`.
    """

    difference: float
    ci_low: float
    ci_high: float
    statistic: float
    df: float
    p_value: float
    n_experiments_human: int
    n_experiments_agent: int
    level: float
    method: str = DIFFERENCE_METHOD

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (NaN -> None)."""
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in self.__dict__.items()
        }


def welch_difference(
    estimates: tuple[float, float],
    ses: tuple[float, float],
    dfs: tuple[float, float],
    level: float,
) -> tuple[float, float, float, float, float, float]:
    """(difference, ci_low, ci_high, t, df, p) of estimates[0] − estimates[1]: Welch t with the
    Satterthwaite combination of the two dfs; NaN where either SE or df is undefined."""
    v = np.square(ses)
    d = np.asarray(dfs, dtype=np.float64)
    diff = estimates[0] - estimates[1]
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(d)) and np.all(d > 0) and v.sum() > 0):
        return diff, math.nan, math.nan, math.nan, math.nan, math.nan
    se = math.sqrt(v.sum())
    df = float(v.sum() ** 2 / np.sum(v**2 / d))
    t = diff / se
    half = float(stats.t.ppf(0.5 + level / 2.0, df)) * se
    return diff, diff - half, diff + half, t, df, float(2.0 * stats.t.sf(abs(t), df))


def coi_difference(
    quotes: pl.DataFrame, anchors: pl.DataFrame, level: float = 0.95
) -> CoiDifference:
    """Human − agent difference of the observed premiums with the Welch cluster t test."""
    rel = relative_quotes(quotes, anchors)
    (ph, sh, dh, _, gh), (pa, sa, da, _, ga) = (_class_premium(rel, actor) for actor in ACTORS)
    diff, lo, hi, t, df, p = welch_difference((ph, pa), (sh, sa), (dh, da), level)
    return CoiDifference(diff, lo, hi, t, df, p, gh, ga, level)
