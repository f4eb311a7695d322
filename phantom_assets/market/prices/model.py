"""`fit_price_model`: a store's anchors, markup curve and quote noise from its view quotes.

Model (`curve`): log p = a_i + log(1 + m·(1 − exp(−s/s0))) + e over the usable view quotes
(`features.view_quotes`), s = the selected signal's engagement before the view (`selection`).
- Anchor of product i = exp(a_i), the zero-engagement quote. Every interval is a t interval from
  the CR3 sandwich clustered by experiment with Bell-McCaffrey degrees of freedom
  (`clustered`): a product quoted in few experiments gets few df and an honest width.
- A product with fewer than `min_quotes_per_product` quotes does not enter the curve fit; its anchor
  is the mean of log p − log(1 + m̂·g(s)) with the pooled curve held fixed (`pooled`; its CI is the
  clustered mean's and ignores the curve's uncertainty).
- m and s0 (s0 on the log scale): the same CR3 intervals. s0 is identified only when its CI is
  finite and its upper end lies within the observed engagement (the curve saturates); otherwise
  s0 is declared (`DECLARED_S0_SHARE` × the mean human engagement at the quote, the market's own
  scale rule) and the reported m is refitted given it (`s0_source = "declared"`, m's CI
  conditional on s0); the anchors and the noise still come from the free fit, which describes the
  quotes over the observed engagement (e.g. a linear markup) whatever m and s0 are separately.
- No markup (CV selects `NO_MARKUP_SIGNAL`): m = 0, anchors are clustered product means.
- A price test is a design factor, not noise: a randomized level per experiment (an *arm*) is
  estimated as an experiment effect -- two-way fixed effects (product + experiment) by
  alternating projections, the levels centred on their mean, so an anchor is the quote at the
  average arm (`_experiment_levels`; with ±20% arms the product means without them missed the
  anchors by up to 7% at the demo's size). The curve's intervals partial both effects out of its
  Jacobian (`curve.fit_curve(absorbed=True)`); an anchor's adds the variance of the levels' mean.
  The quote noise is the dispersion between sessions *within* experiments (`_noise`: pairs of
  quotes of one experiment from different sessions, clustered interval); the market's uniform
  half-width is w = √3·σ (same SD), and an agent's K sessions share its experiment's arm. The
  arms are reported as `arm_sd` (SD of the experiment levels beyond what the within noise
  explains) and `arm_p` (one-way ANOVA F test of an experiment effect): a store with ±15% arms
  fitted as noise got w ≈ 0.21 against a true 0.04.
- A store with fewer than `min_store_quotes` view quotes, fewer than `min_experiments` experiments
  or no product with `min_quotes_per_product` quotes gets `declared_price_model`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.config import MarketConfig
from phantom_assets.constants import DEFAULT_FOLDS, ENGAGEMENT_SIGNALS, NO_MARKUP_SIGNAL
from phantom_assets.market.prices.clustered import group_means, t_interval
from phantom_assets.market.prices.curve import fit_curve, markup_curve
from phantom_assets.market.prices.features import exclusion_counts, signal_column, view_quotes
from phantom_assets.market.prices.result import ANCHOR_SCHEMA, PriceModel, declared_price_model
from phantom_assets.market.prices.selection import select_signal

__all__ = [
    "CI_METHOD",
    "DECLARED_S0_SHARE",
    "PriceFitParams",
    "fit_price_model",
    "markup_at_scale",
]

logger = logging.getLogger(__name__)

DECLARED_S0_SHARE = MarketConfig().engagement_scale_share  # × mean human engagement at quotes
ARM_ITERATIONS, ARM_TOLERANCE = 100, 1e-7
"""Alternating projections of the experiment levels stop at this change in log price."""
CI_METHOD = "CR3 sandwich clustered by experiment, t with Bell-McCaffrey df per parameter"


@dataclass(frozen=True)
class PriceFitParams:
    """Knobs of `fit_price_model`.

    Attributes:
        min_quotes_per_product: Below this a product's anchor uses the pooled curve (`pooled`).
        min_store_quotes: Below this many usable view quotes the store gets declared defaults.
        min_experiments: Below this many experiments the store gets declared defaults.
        signals: Candidate engagement signals (keys of `constants.ENGAGEMENT_SIGNALS`).
        cv_folds: Folds of the experiment-clustered cross-validation.
        level: Confidence level of every interval.
        declared_s0_share: s0 where the logs cannot identify it, × the mean human engagement
            at the quote (`MarketConfig.engagement_scale_share`).
    """

    min_quotes_per_product: int = 20
    min_store_quotes: int = 100
    min_experiments: int = 5
    signals: tuple[str, ...] = field(default_factory=lambda: tuple(ENGAGEMENT_SIGNALS))
    cv_folds: int = DEFAULT_FOLDS
    level: float = 0.95
    declared_s0_share: float = DECLARED_S0_SHARE

    def __post_init__(self) -> None:
        """Raises ValueError naming a bad value."""
        for name in ("min_quotes_per_product", "min_store_quotes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.min_experiments < 2 or self.cv_folds < 2:
            raise ValueError(
                f"min_experiments and cv_folds must be >= 2, got "
                f"{self.min_experiments}, {self.cv_folds}"
            )
        if not self.signals or any(s not in ENGAGEMENT_SIGNALS for s in self.signals):
            raise ValueError(f"signals must be keys of ENGAGEMENT_SIGNALS, got {self.signals}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level must be in (0, 1), got {self.level}")


@dataclass(frozen=True)
class _Curve:
    """The markup curve part of a fit (private)."""

    markup: float = 0.0
    markup_ci: tuple[float, float] = (math.nan, math.nan)
    markup_source: str = "none"
    s0: float | None = None
    s0_ci: tuple[float, float] = (math.nan, math.nan)
    s0_source: str = "declared"


def _declared_s0(views: pl.DataFrame, column: str, share: float) -> float:
    """`share` × mean human engagement at the quote (all actors if no human)."""
    human = views.filter(pl.col("actor") == "human")[column]
    mean = float((human if human.len() else views[column]).mean() or 0.0)
    return share * mean if mean > 0 else 1.0


def _fit_curve(y, s, product, cluster, declared_s0: float, level: float, absorbed: bool = False):
    """Fit m and s0; return the free fit (anchors, noise) and the `_Curve` the market uses.

    When s0 is not identified the free fit still pins the anchors and the noise (the curve over
    the observed engagement is what it is, e.g. linear); the reported curve is then m refitted
    with s0 declared (its CI conditional on s0).
    """
    fit = fit_curve(y, s, product, cluster, absorbed=absorbed)
    p = fit.log_anchor.size
    se = np.sqrt(np.diag(fit.vcov)[p:])
    lo, hi = t_interval(fit.log_s0, se[1], fit.df[p + 1], level)
    reported, s0_source = fit, "fitted"
    if fit.at_bound or not np.isfinite(hi) or float(hi) > math.log(float(s.max())):
        reported = fit_curve(
            y, s, product, cluster, log_s0=math.log(declared_s0), absorbed=absorbed
        )
        se = np.sqrt(np.diag(reported.vcov)[p:])
        s0_source = "declared"
    s0_ci = (float(np.exp(lo)), float(np.exp(hi))) if s0_source == "fitted" else (math.nan,) * 2
    m_lo, m_hi = t_interval(reported.markup, se[0], reported.df[p], level)
    s0 = float(np.exp(reported.log_s0))
    return fit, _Curve(reported.markup, (float(m_lo), float(m_hi)), "fitted", s0, s0_ci, s0_source)


def fit_price_model(quotes: pl.DataFrame, params: PriceFitParams | None = None) -> PriceModel:
    """Fit one store's price model from its quote features (module docstring).

    Args:
        quotes: `features.quote_features` rows of ONE store (all its logs: the usable view quotes
            are fitted, the rest only counted).
        params: Fit knobs (default `PriceFitParams()`).

    Returns:
        The store's `PriceModel` (source "logs"), or its declared defaults (source "declared").

    Raises:
        ValueError: if `quotes` holds several stores or lacks the candidates' engagement columns.
    """
    params = params or PriceFitParams()
    stores = quotes["store"].unique().drop_nulls().sort().to_list()
    if len(stores) > 1:
        raise ValueError(f"fit_price_model fits one store at a time, got stores {stores}")
    missing = [signal_column(s) for s in params.signals if signal_column(s) not in quotes.columns]
    if missing:
        raise ValueError(f"quotes lack the engagement columns {missing}; use quote_features")
    store = stores[0] if stores else "unknown"
    counts = exclusion_counts(quotes)
    views, products = _views_and_products(quotes, params.min_quotes_per_product)
    n_xp = views["experiment_id"].n_unique()
    why = (
        f"{views.height} usable view quotes < min_store_quotes {params.min_store_quotes}"
        if views.height < params.min_store_quotes
        else f"{n_xp} experiments < min_experiments {params.min_experiments}"
        if n_xp < params.min_experiments
        else f"no product has min_quotes_per_product {params.min_quotes_per_product} quotes"
        if products["pooled"].all()
        else ""
    )
    if why:
        logger.info("store %s: declared prices (%s)", store, why)
        return declared_price_model(store, why, counts, views)
    return _fit(store, views, products, counts, params)


def _views_and_products(
    quotes: pl.DataFrame, min_quotes_per_product: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The usable view quotes (a session without an experiment is its own cluster) and their
    products with counts and the `pooled` flag."""
    session = pl.col("session_id")
    views = view_quotes(quotes).with_columns(pl.col("experiment_id").fill_null(session))
    products = (
        views.group_by("product_id")
        .agg(
            n_quotes=pl.len(),
            n_sessions=pl.col("session_id").n_unique(),
            n_experiments=pl.col("experiment_id").n_unique(),
        )
        .sort("product_id")
        .with_columns(pooled=pl.col("n_quotes") < min_quotes_per_product)
    )
    return views, products


def _design(views: pl.DataFrame, products: pl.DataFrame) -> tuple[np.ndarray, ...]:
    """(product index, experiment cluster index, log price) per view quote."""
    pids = products["product_id"].to_list()
    product = views["product_id"].replace_strict(pids, list(range(len(pids)))).to_numpy()
    _, cluster = np.unique(views["experiment_id"].to_numpy(), return_inverse=True)
    return product, cluster, np.log(views["price"].to_numpy())


def markup_at_scale(
    quotes: pl.DataFrame, model: PriceModel, s0: float, params: PriceFitParams | None = None
) -> float:
    """m of `model`'s curve refitted on the same quotes with s0 held at `s0`: the markup a
    declared s0 implies (`market_sensitivity` sweeps s0 when the logs cannot identify it)."""
    if model.source != "logs" or model.markup_source != "fitted":
        return float(model.markup)
    params = params or PriceFitParams()
    views, products = _views_and_products(quotes, params.min_quotes_per_product)
    product, cluster, y = _design(views, products)
    rich = ~products["pooled"].to_numpy()[product]
    local = (np.cumsum(~products["pooled"].to_numpy()) - 1)[product[rich]]
    _, rich_cluster = np.unique(cluster[rich], return_inverse=True)
    s = views[signal_column(model.signal)].to_numpy()[rich]
    return float(fit_curve(y[rich], s, local, rich_cluster, log_s0=math.log(s0)).markup)


def _fit(
    store: str,
    views: pl.DataFrame,
    products: pl.DataFrame,
    counts: dict[str, int],
    params: PriceFitParams,
) -> PriceModel:
    """The fit proper (the store has enough quotes, experiments and products)."""
    pids = products["product_id"].to_list()
    product, cluster, y = _design(views, products)
    xp_ids = views["experiment_id"].to_numpy()
    signals = {name: views[signal_column(name)].to_numpy() for name in params.signals}
    scores = select_signal(y, signals, product, xp_ids, params.cv_folds)
    s = signals[scores.selected]
    pooled = products["pooled"].to_numpy()
    rich = ~pooled[product]
    local = (np.cumsum(~pooled) - 1)[product[rich]]
    _, rich_cluster = np.unique(cluster[rich], return_inverse=True)
    n_rich = int((~pooled).sum())
    anchors = np.full((3, len(pids)), np.nan)
    markup = scores.selected != NO_MARKUP_SIGNAL and bool(np.any(s[rich] > 0))
    declared_s0 = (
        _declared_s0(views, signal_column(scores.selected), params.declared_s0_share)
        if markup
        else 1.0
    )

    previous: list[tuple[float, float]] = []  # the last curve: the next refit starts there

    def residuals(values: np.ndarray) -> np.ndarray:
        """Residuals of the product (+ curve) fit of `values`, point estimates only."""
        if markup:
            start = previous[-1] if previous else None
            fit = fit_curve(values, s[rich], local, rich_cluster, covariance=False, start=start)
            previous.append((fit.markup, fit.log_s0))
            return fit.residuals
        return values - (np.bincount(local, values, n_rich) / np.bincount(local))[local]

    offsets = _experiment_levels(residuals, y[rich], rich_cluster)
    values = y[rich] - offsets[rich_cluster]
    # The anchors' level is the average arm's: its uncertainty is the levels' mean's.
    level_var = float(np.var(offsets, ddof=1)) / offsets.size if offsets.size > 1 else 0.0
    if markup:
        fit, curve = _fit_curve(
            values, s[rich], local, rich_cluster, declared_s0, params.level, absorbed=True
        )
        log_anchor, se = fit.log_anchor, np.sqrt(np.diag(fit.vcov)[:n_rich] + level_var)
        df, adjusted = fit.df[:n_rich], fit.adjusted
        shift = markup_curve(s, fit.markup, fit.log_s0)[0]
    else:
        curve, shift = _Curve(), np.zeros_like(y)
        log_anchor, se, df, adjusted = group_means(values, local, rich_cluster, n_rich)
        se = np.sqrt(se**2 + level_var)
    lo, hi = t_interval(log_anchor, se, df, params.level)
    anchors[:, ~pooled] = log_anchor, lo, hi
    if pooled.any():  # at their experiments' levels where the rich products measured them
        level = np.zeros(int(cluster.max()) + 1)
        level[np.unique(cluster[rich])] = offsets
        rare = (np.cumsum(pooled) - 1)[product[~rich]]
        rare_y = (y - shift - level[cluster])[~rich]
        mean, se, df, _ = group_means(rare_y, rare, cluster[~rich], int(pooled.sum()))
        anchors[:, pooled] = mean, *t_interval(mean, se, df, params.level)
    _, session = np.unique(views["session_id"].to_numpy()[rich], return_inverse=True)
    residual = values - log_anchor[local] - shift[rich]
    noise = _noise(residual, rich_cluster, session, params.level)
    arm_sd, arm_p = _arms(adjusted + offsets[rich_cluster], rich_cluster)
    table = products.with_columns(
        anchor=np.exp(anchors[0]), ci_low=np.exp(anchors[1]), ci_high=np.exp(anchors[2])
    ).select(list(ANCHOR_SCHEMA))
    return PriceModel(
        store=store,
        source="logs",
        reason="",
        anchors=table.cast(ANCHOR_SCHEMA),
        signal=scores.selected,
        cv_rmse=scores.rmse,
        markup=curve.markup,
        markup_ci=curve.markup_ci,
        markup_source=curve.markup_source,
        s0=curve.s0,
        s0_ci=curve.s0_ci,
        s0_source=curve.s0_source,
        noise_sd=noise[0],
        noise_sd_ci=(noise[1], noise[2]),
        arm_sd=arm_sd,
        arm_p=arm_p,
        n_quotes=views.height,
        n_sessions=views["session_id"].n_unique(),
        n_experiments=int(cluster.max()) + 1,
        excluded=counts,
        level=params.level,
        ci_method=CI_METHOD,
    )


def _experiment_levels(
    residuals: Callable[[np.ndarray], np.ndarray], y: np.ndarray, cluster: np.ndarray
) -> np.ndarray:
    """A price level per experiment (a price test's arm): two-way fixed effects (product, curve
    + experiment) by alternating projections -- fit, take each experiment's mean residual out,
    refit -- centred on their mean over experiments (an anchor is the quote at the average
    arm)."""
    offsets = np.zeros(int(cluster.max()) + 1 if cluster.size else 0)
    sizes = np.maximum(np.bincount(cluster, minlength=offsets.size), 1)
    for _ in range(ARM_ITERATIONS):  # converges in a handful on the demo
        fitted = residuals(y - offsets[cluster]) + offsets[cluster]
        levels = np.bincount(cluster, fitted, offsets.size) / sizes
        levels -= levels.mean()
        change = float(np.max(np.abs(levels - offsets))) if offsets.size else 0.0
        offsets = levels
        if change < ARM_TOLERANCE:
            break
    return offsets


def _arms(adjusted: np.ndarray, cluster: np.ndarray) -> tuple[float, float]:
    """(SD of the experiment price levels beyond the within noise, one-way ANOVA p of an
    experiment effect) of the log residuals: a randomized price test shows here."""
    sizes = np.bincount(cluster)
    used = sizes > 0
    groups, n = int(used.sum()), adjusted.size
    if groups < 2 or n <= groups:
        return math.nan, math.nan
    means = np.bincount(cluster, weights=adjusted) / np.maximum(sizes, 1)
    between = float(np.sum(sizes[used] * (means[used] - adjusted.mean()) ** 2)) / (groups - 1)
    within = float(np.sum((adjusted - means[cluster]) ** 2)) / (n - groups)
    n0 = (n - float(np.sum(sizes[used] ** 2)) / n) / (groups - 1)  # the ANOVA's mean group size
    arm_var = max((between - within) / n0, 0.0)
    p = float(stats.f.sf(between / within, groups - 1, n - groups)) if within > 0 else 0.0
    return math.sqrt(arm_var), p


def _pair_sums(values: np.ndarray, group: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group g of `n`: Σ over ordered pairs of its members of (x_i − x_j)², and their count."""
    count = np.bincount(group, minlength=n).astype(np.float64)
    total = np.bincount(group, values, n)
    square = np.bincount(group, values * values, n)
    return 2.0 * count * square - 2.0 * total * total, count * count - count


def _noise(
    residual: np.ndarray, cluster: np.ndarray, session: np.ndarray, level: float
) -> tuple[float, ...]:
    """σ̂ of the quote noise *between sessions within an experiment* -- what an agent's K clean
    sessions see (their experiment shares its arm) -- and its clustered log-scale interval.

    σ̂² = Σ over pairs of quotes of one experiment from different sessions of (e_i − e_j)² / 2,
    over the number of such pairs, with e the log residuals of the fit with experiment levels: a
    pair's difference is free of the experiment's level (its arm), and quotes of one session (one
    session's noise draw) are never paired. The interval is t around log σ̂² with the
    leave-one-experiment-out jackknife SE and the effective number of experiments − 1 as df
    (a few agents with many sessions carry most pairs; the linearized SE with G − 1 df covered
    0.88-0.90 at 120 + 40 experiments).
    """
    groups = int(cluster.max()) + 1
    num, pairs = _pair_sums(residual, cluster, groups)
    key = cluster.astype(np.int64) * (int(session.max()) + 1) + session
    _, session_index, inverse = np.unique(key, return_index=True, return_inverse=True)
    s_num, s_pairs = _pair_sums(residual, inverse, session_index.size)
    owner = cluster[session_index]
    # Ordered pairs across sessions: E[(e_i − e_j)²] = 2σ² each.
    num = (num - np.bincount(owner, s_num, groups)) / 2.0
    pairs = pairs - np.bincount(owner, s_pairs, groups)
    used = pairs > 0
    if used.sum() < 2:
        return math.nan, math.nan, math.nan
    num, pairs = num[used], pairs[used]
    ratio = float(num.sum() / pairs.sum())
    g = num.size
    # Leave-one-experiment-out (jackknife) SE of log σ̂²; df from the effective number of
    # experiments (a few agents with many sessions carry most pairs).
    left_out = np.log((num.sum() - num) / (pairs.sum() - pairs))
    se_log = math.sqrt((g - 1.0) / g * float(np.sum((left_out - left_out.mean()) ** 2)))
    effective = float(pairs.sum() ** 2 / np.sum(pairs**2))
    lo, hi = t_interval(math.log(ratio), se_log, max(effective - 1.0, 1.0), level)
    return tuple(float(np.sqrt(v)) for v in (ratio, np.exp(lo), np.exp(hi)))
