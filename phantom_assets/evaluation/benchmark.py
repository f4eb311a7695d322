"""Benchmark statistics over episode seeds: metric-vs-(α, K) curves, paired differences, OLS of
revenue on α (docs/method.md#benchmark-curves, its
contract in docs/architecture.md#column-contracts).

The episode seed (common to every policy, cell and detector) is the unit of inference.
`episode_seed_means` counts identical runs once (pitfall 6, docs/method.md), then averages
training-seed replicates within (policy | config_hash, design keys, episode seed), so `n` =
independent episode seeds and neither duplicated rows nor extra training seeds can shrink an
interval. Curves and
paired differences get Student-t intervals on those means; the regression a CR1 slope interval
with t(G − 1) reference. Coverage is measured in `phantom_assets.calibration.benchmark`.
Intervals are conditional on the trained policies (the training-seed effect is averaged, not
sampled); with one episode seed they are undefined (NaN bounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.evaluation.protocol import EPISODE_METRICS

DESIGN_KEYS: tuple[str, ...] = ("alpha", "band_alpha", "k", "detector", "replicate")
"""Columns a statistic is computed per, when present: the grid cell (α, K), the α of a stress
band around it, the detector mode, and `replicate` (a simulation replicate: the calibration
studies evaluate many in one call)."""
_KEY_TYPES: dict[str, pl.DataType] = {
    "alpha": pl.Float64(),
    "band_alpha": pl.Float64(),
    "k": pl.Int64(),
    "detector": pl.String(),
    "replicate": pl.Int64(),
}
_STAT_TYPES: dict[str, pl.DataType] = {
    "metric": pl.String(),
    "mean": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "n": pl.Int64(),
}
CURVE_SCHEMA: dict[str, pl.DataType] = {
    "policy": pl.String(),
    "tier": pl.String(),
    "mode": pl.String(),
    **{key: _KEY_TYPES[key] for key in ("alpha", "k", "detector")},
    **_STAT_TYPES,
}
"""Contract of `benchmark_curves/curves.parquet` (docs/architecture.md#column-contracts)."""
PAIR_COLUMNS: tuple[str, ...] = (
    "comparison",
    "policy",
    "detector",
    "reference",
    "reference_detector",
)
"""A paired comparison: (policy, detector) − (reference, reference_detector) per cell and seed."""
DIFFERENCE_SCHEMA: dict[str, pl.DataType] = {
    **dict.fromkeys(PAIR_COLUMNS, pl.String()),
    "alpha": pl.Float64(),
    "k": pl.Int64(),
    **_STAT_TYPES,
}
"""Contract of `benchmark_curves/differences.parquet` (stress rows add `band_alpha`: the one α
both arms were compared at)."""

CI_METHOD = "student_t_over_episode_seed_means"
"""How curve and paired-difference intervals are computed (for metadata)."""

REGRESSION_METHOD = (
    "OLS of per-episode-seed means (training seeds averaged) on alpha; CR1 SEs "
    "clustered by episode seed; slope CI and p-value from t(G - 1)"
)
"""How `revenue_regression` is computed (for metadata)."""


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def design_keys(columns: Sequence[str]) -> list[str]:
    """The `DESIGN_KEYS` present in `columns`, in that order."""
    return [key for key in DESIGN_KEYS if key in columns]


def configuration_identity(columns: Sequence[str], pooled: bool = False) -> list[str]:
    """Columns that identify one run: policy (or `config_hash` when `pooled` and present), the
    design keys, `seed`, and `train_seed` when present."""
    head = "config_hash" if pooled and "config_hash" in columns else "policy"
    train = ["train_seed"] if "train_seed" in columns else []
    return [head, *design_keys(columns), "seed", *train]


def unique_configurations(
    evaluations: pl.DataFrame, metrics: Sequence[str], pooled: bool = False
) -> pl.DataFrame:
    """One row per run (`configuration_identity`): metric means, other columns first."""
    identity = configuration_identity(evaluations.columns, pooled)
    others = [c for c in evaluations.columns if c not in identity and c not in metrics]
    return evaluations.group_by(identity, maintain_order=True).agg(
        *[pl.col(m).cast(pl.Float64).mean() for m in metrics], *[pl.col(c).first() for c in others]
    )


def episode_seed_means(
    evaluations: pl.DataFrame, metrics: Sequence[str], pooled: bool = False
) -> pl.DataFrame:
    """One row per (policy | config_hash, design keys, episode seed): runs counted once, then the
    training seeds averaged (each with equal weight). Column `train_seeds` counts them."""
    missing = {"policy", "alpha", "seed", *metrics} - set(evaluations.columns)
    if missing or not metrics:
        raise ValueError(f"evaluations lack columns {sorted(missing)} (metrics {list(metrics)})")
    identity = configuration_identity(evaluations.columns, pooled)
    unit = [c for c in identity if c != "train_seed"]
    rows = unique_configurations(evaluations, metrics, pooled)
    others = [c for c in rows.columns if c not in identity and c not in metrics]
    return rows.group_by(unit, maintain_order=True).agg(
        *[pl.col(m).mean() for m in metrics],
        *[pl.col(c).first() for c in others],
        train_seeds=pl.len().cast(pl.Int64),
    )


def _t_quantile(level: float, df: np.ndarray) -> np.ndarray:
    """Two-sided t critical value per degrees of freedom; NaN where df < 1."""
    df = np.asarray(df, dtype=np.float64)
    return np.where(df >= 1, stats.t.ppf(0.5 + level / 2.0, np.maximum(df, 1.0)), np.nan)


def t_intervals(long: pl.DataFrame, groups: list[str], level: float) -> pl.DataFrame:
    """Mean and Student-t CI of `value` per group (one value per episode seed): `n` = values;
    NaN bounds for a single value (the interval is undefined)."""
    out = long.group_by(groups, maintain_order=True).agg(
        mean=pl.col("value").mean(),
        sd=pl.col("value").std().fill_null(np.nan),
        n=pl.len().cast(pl.Int64),
    )
    half = pl.Series("half", _t_quantile(level, out["n"].to_numpy() - 1)) * out["sd"]
    out = out.with_columns(half=half / out["n"].cast(pl.Float64).sqrt())
    return out.with_columns(
        ci_low=pl.col("mean") - pl.col("half"), ci_high=pl.col("mean") + pl.col("half")
    ).drop("sd", "half")


def benchmark_curves(
    evaluations: pl.DataFrame, metrics: Sequence[str] = EPISODE_METRICS, level: float = 0.95
) -> pl.DataFrame:
    """Metric-vs-(α, K) curves: mean and Student-t CI over episode seeds per policy and design
    cell (and detector).

    Args:
        evaluations: protocol rows with `policy, tier, mode, alpha, seed`, optional `train_seed`
            and other `DESIGN_KEYS`, and the metric columns.
        metrics: metric columns to summarise.
        level: confidence level.

    Returns:
        The `curves` contract frame (`CURVE_SCHEMA` columns, the design keys present) sorted by
        policy, metric and the design keys; `n` = episode seeds, NaN bounds where n = 1.
    """
    _check_level(level)
    means = episode_seed_means(evaluations, metrics)
    keys = design_keys(means.columns)
    long = means.unpivot(
        index=["policy", *keys, "seed"],
        on=list(metrics),
        variable_name="metric",
        value_name="value",
    )
    out = t_intervals(long, ["policy", "metric", *keys], level)
    labels = evaluations.select("policy", "tier", "mode").unique(subset="policy")
    columns = ["policy", "tier", "mode", *keys, *_STAT_TYPES]
    schema = {**CURVE_SCHEMA, **_KEY_TYPES}
    out = out.join(labels, on="policy", how="left").select(columns)
    return out.cast({c: schema[c] for c in columns}).sort("policy", "metric", *keys)  # type: ignore[arg-type]


def paired_differences(
    evaluations: pl.DataFrame,
    pairs: pl.DataFrame,
    metrics: Sequence[str] = EPISODE_METRICS,
    level: float = 0.95,
) -> pl.DataFrame:
    """(policy, detector) − (reference, reference_detector) per comparison, design cell and
    metric, paired by episode seed, with a paired t CI.

    Each arm's training seeds are averaged per episode seed first; then the two arms are joined
    one-to-one on (design cell, seed), so `n` = paired episode seeds (pitfall 10, docs/method.md).

    Args:
        evaluations: protocol rows with a `detector` column.
        pairs: one row per comparison, columns `PAIR_COLUMNS`.
        metrics: metric columns to difference.
        level: confidence level.

    Returns:
        Columns `PAIR_COLUMNS`, the design keys other than `detector`, `metric, mean, ci_low,
        ci_high, n`; sorted by the pair, metric and keys.
    """
    _check_level(level)
    if missing := {*PAIR_COLUMNS} - set(pairs.columns) | {"detector"} - set(evaluations.columns):
        raise ValueError(f"pairs/evaluations lack columns {sorted(missing)}")
    means = episode_seed_means(evaluations, metrics)
    keys = [k for k in design_keys(means.columns) if k != "detector"]
    values = [*keys, "seed", *metrics]
    arms = pairs.select(PAIR_COLUMNS).unique(maintain_order=True)
    left = arms.join(means.select("policy", "detector", *values), on=["policy", "detector"])
    right = means.select(*values, reference="policy", reference_detector="detector")
    joined = left.join(
        right,
        on=["reference", "reference_detector", *keys, "seed"],
        how="inner",
        suffix="_ref",
        validate="m:1",
    )
    change = [(pl.col(m) - pl.col(f"{m}_ref")).alias(m) for m in metrics]
    diffs = joined.select(*PAIR_COLUMNS, *keys, "seed", *change)
    long = diffs.unpivot(
        index=[*PAIR_COLUMNS, *keys, "seed"],
        on=list(metrics),
        variable_name="metric",
        value_name="value",
    )
    out = t_intervals(long, [*PAIR_COLUMNS, *keys, "metric"], level)
    columns = [*PAIR_COLUMNS, *keys, *_STAT_TYPES]
    schema = {**DIFFERENCE_SCHEMA, **_KEY_TYPES}
    out = out.select(columns).cast({c: schema[c] for c in columns})  # type: ignore[arg-type]
    return out.sort(*PAIR_COLUMNS, "metric", *keys)


@dataclass(frozen=True)
class OlsResult:
    """OLS fit `y = intercept + slope·x`, CR1 cluster-robust SEs, slope CI/p from t(G − 1)."""

    intercept: float
    slope: float
    se_intercept: float
    se_slope: float
    slope_ci_low: float
    slope_ci_high: float
    slope_p_value: float
    df: int
    n_obs: int
    n_clusters: int


def _cluster_fit(frame: pl.DataFrame, groups: list[str], level: float) -> pl.DataFrame:
    """Per group of `groups`: OLS of `_y` on [1, `_x`] with CR1 SEs clustered by `_cluster`.

    Vectorized: scores a_i = (x_i − x̄)u_i/Sxx (slope), (1/N − x̄(x_i − x̄)/Sxx)u_i (intercept);
    V = c·Σ_g (Σ_{i∈g} a_i)², c = G/(G − 1)·(N − 1)/(N − 2); t with G − 1 df.
    """
    x, y, c, by = pl.col("_x"), pl.col("_y"), pl.col, groups
    fits = (
        frame.lazy()
        .with_columns(N=pl.len().over(by), xbar=x.mean().over(by), ybar=y.mean().over(by))
        .with_columns(dx=x - c("xbar"), dy=y - c("ybar"))
        .with_columns(sxx=(c("dx") ** 2).sum().over(by), sxy=(c("dx") * c("dy")).sum().over(by))
        .with_columns(slope=c("sxy") / c("sxx"))
        .with_columns(
            intercept=c("ybar") - c("slope") * c("xbar"), u=c("dy") - c("slope") * c("dx")
        )
        .with_columns(
            a_s=c("dx") * c("u") / c("sxx"),
            a_i=(1.0 / c("N") - c("xbar") * c("dx") / c("sxx")) * c("u"),
        )
        .group_by([*groups, "_cluster"], maintain_order=True)
        .agg(c("a_s", "a_i").sum(), c("intercept", "slope", "sxx", "N").first())
        .group_by(groups, maintain_order=True)
        .agg(
            (c("a_s", "a_i") ** 2).sum(),
            c("intercept", "slope", "sxx", "N").first(),
            pl.len().alias("n_clusters"),
        )
        .sort(groups)
        .collect()
    )
    bad = fits.filter((c("sxx") <= 0) | (c("N") < 3))
    if bad.height:
        raise ValueError(
            f"alpha does not vary or fewer than 3 rows (the slope is not identified) "
            f"in groups {bad.select(groups).rows()[:5]}"
        )
    g, n = (fits[col].to_numpy().astype(np.float64) for col in ("n_clusters", "N"))
    slope = fits["slope"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(g >= 2, g / (g - 1) * (n - 1) / (n - 2), np.nan)
        se_s, se_i = (np.sqrt(factor * fits[col].to_numpy()) for col in ("a_s", "a_i"))
        half = _t_quantile(level, g - 1) * se_s
        p = np.where(g >= 2, 2.0 * stats.t.sf(np.abs(slope / se_s), np.maximum(g - 1, 1)), np.nan)
    return fits.select(*groups, "intercept", "slope").with_columns(
        se_intercept=se_i,
        se_slope=se_s,
        slope_ci_low=slope - half,
        slope_ci_high=slope + half,
        slope_p_value=p,
        df=pl.Series((g - 1).astype(np.int64)),
        n_obs=fits["N"].cast(pl.Int64),
        n_clusters=fits["n_clusters"].cast(pl.Int64),
    )


def cluster_ols(
    x: np.ndarray, y: np.ndarray, clusters: np.ndarray, level: float = 0.95
) -> OlsResult:
    """OLS of y on [1, x] with the CR1 sandwich variance clustered by `clusters`.

    V = c·(X'X)⁻¹ (Σ_g X_g'u_g u_g'X_g) (X'X)⁻¹, c = G/(G − 1)·(N − 1)/(N − 2); the slope CI and
    two-sided p-value use t with G − 1 df. SEs, CI and p are NaN with fewer than two clusters.
    """
    _check_level(level)
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xs.ndim != 1 or xs.shape != ys.shape or len(clusters) != xs.size or xs.size < 3:
        raise ValueError(f"need equal 1-D x, y, clusters of >= 3 rows: {xs.shape}, {ys.shape}")
    if np.ptp(xs) == 0:
        raise ValueError(f"x does not vary (all {xs[0]}); the slope is not identified")
    frame = pl.DataFrame(
        {
            "_group": np.zeros(xs.size, dtype=np.int64),
            "_x": xs,
            "_y": ys,
            "_cluster": np.asarray(clusters),
        }
    )
    row = _cluster_fit(frame, ["_group"], level).drop("_group").row(0, named=True)
    return OlsResult(**row)


def revenue_regression(
    evaluations: pl.DataFrame,
    metric: str = "revenue",
    by: Sequence[str] = ("policy",),
    level: float = 0.95,
) -> pl.DataFrame:
    """OLS of `metric` on α per group of `by` and the other design keys present (K, detector),
    clustered by episode seed.

    Rows are reduced by `episode_seed_means` (pooled: `config_hash` when present, so the same
    policy stored under two keys counts once; training seeds averaged), so `n_obs` counts
    (configuration, α, episode seed) means and `n_clusters` = G independent episode seeds.

    Returns:
        Columns `by…, [k, detector,] intercept, slope, se_intercept, se_slope, slope_ci_low,
        slope_ci_high, slope_p_value, df, n_obs, n_clusters` (see `REGRESSION_METHOD`).
    """
    _check_level(level)
    means = episode_seed_means(evaluations, [metric], pooled=True)
    groups = [*by, *(k for k in design_keys(means.columns) if k != "alpha" and k not in by)]
    if missing := set(groups) - set(means.columns):
        raise ValueError(f"evaluations lack the grouping columns {sorted(missing)}")
    frame = means.select(
        *groups, _cluster=pl.col("seed"), _x=pl.col("alpha").cast(pl.Float64), _y=pl.col(metric)
    )
    return _cluster_fit(frame, groups, level)
