"""Benchmark statistics over episode seeds: metric-vs-α curves, paired defended − baseline
differences, OLS of revenue on α (DESIGN §5 "Benchmark curves", §12 `benchmark_curves`).

The episode seed (common to every policy) is the unit of inference. `episode_seed_means` counts
identical runs once (pitfall §10.6), then averages training-seed replicates within (policy |
config_hash, α, [k], episode seed), so `n` = independent episode seeds and neither duplicated rows
nor extra training seeds can shrink an interval. Curves and paired differences get Student-t
intervals on those means; the regression a CR1 slope interval with t(G − 1) reference. Coverage is
measured in `phantom_assets.calibration.benchmark`. Intervals are conditional on the trained
policies (the training-seed effect is averaged, not sampled); with one episode seed they are
undefined (NaN bounds). An optional `k` column (recon breadth) is a design key like α.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.evaluation.protocol import EPISODE_METRICS
from phantom_assets.policies import baseline_twin, parse_policy_key

CURVE_SCHEMA: dict[str, pl.DataType] = {
    "policy": pl.String(), "tier": pl.String(), "mode": pl.String(), "alpha": pl.Float64(),
    "metric": pl.String(), "mean": pl.Float64(), "ci_low": pl.Float64(), "ci_high": pl.Float64(),
    "n": pl.Int64(),
}  # fmt: skip
"""Contract of `benchmark_curves/curves.parquet` (DESIGN §12); `k` follows `alpha` if present."""

CI_METHOD = "student_t_over_episode_seed_means"
"""How curve and paired-difference intervals are computed (for metadata)."""

REGRESSION_METHOD = ("OLS of per-episode-seed means (training seeds averaged) on alpha; CR1 SEs "
                     "clustered by episode seed; slope CI and p-value from t(G - 1)")  # fmt: skip
"""How `revenue_regression` is computed (for metadata)."""


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def design_keys(columns: Sequence[str]) -> list[str]:
    """Design columns a statistic is computed per: `alpha`, and `k` when present."""
    return ["alpha", *(["k"] if "k" in columns else [])]


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
    """One row per (policy | config_hash, α, [k], episode seed): runs counted once, then the
    training seeds averaged (each with equal weight). Column `train_seeds` counts them."""
    missing = {"policy", "alpha", "seed", *metrics} - set(evaluations.columns)
    if missing or not metrics:
        raise ValueError(f"evaluations lack columns {sorted(missing)} (metrics {list(metrics)})")
    identity = configuration_identity(evaluations.columns, pooled)
    unit = [c for c in identity if c != "train_seed"]
    rows = unique_configurations(evaluations, metrics, pooled)
    others = [c for c in rows.columns if c not in identity and c not in metrics]
    return rows.group_by(unit, maintain_order=True).agg(
        *[pl.col(m).mean() for m in metrics], *[pl.col(c).first() for c in others],
        train_seeds=pl.len().cast(pl.Int64))  # fmt: skip


def _t_quantile(level: float, df: np.ndarray) -> np.ndarray:
    """Two-sided t critical value per degrees of freedom; NaN where df < 1."""
    df = np.asarray(df, dtype=np.float64)
    return np.where(df >= 1, stats.t.ppf(0.5 + level / 2.0, np.maximum(df, 1.0)), np.nan)


def _t_intervals(long: pl.DataFrame, groups: list[str], level: float) -> pl.DataFrame:
    """Mean and Student-t CI of `value` per group (one value per episode seed): `n` = values."""
    out = long.group_by(groups, maintain_order=True).agg(
        mean=pl.col("value").mean(), sd=pl.col("value").std().fill_null(np.nan),
        n=pl.len().cast(pl.Int64))  # fmt: skip
    half = pl.Series("half", _t_quantile(level, out["n"].to_numpy() - 1)) * out["sd"]
    out = out.with_columns(half=half / out["n"].cast(pl.Float64).sqrt())
    return out.with_columns(
        ci_low=pl.col("mean") - pl.col("half"), ci_high=pl.col("mean") + pl.col("half")
    ).drop("sd", "half")


def t_mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, ci_low, ci_high): Student-t CI of the mean of independent 1-D `values`.

    Bounds are NaN for a single value (the interval is undefined).
    """
    _check_level(level)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {arr.shape}")
    row = _t_intervals(pl.DataFrame({"g": np.zeros(arr.size), "value": arr}), ["g"], level)
    return float(row["mean"][0]), float(row["ci_low"][0]), float(row["ci_high"][0])


def _tier_mode(policies: Sequence[str]) -> pl.DataFrame:
    parsed = [parse_policy_key(p) for p in policies]
    columns = {"policy": list(policies), "tier": [k.tier for k in parsed],
               "mode": [k.mode for k in parsed]}  # fmt: skip
    return pl.DataFrame(columns, schema={"policy": pl.String, "tier": pl.String, "mode": pl.String})


def benchmark_curves(
    evaluations: pl.DataFrame, metrics: Sequence[str] = EPISODE_METRICS, level: float = 0.95
) -> pl.DataFrame:
    """Metric-vs-α (and k) curves: mean and Student-t CI over episode seeds per policy.

    Args:
        evaluations: protocol rows with `policy` (a policy key, or `tier`/`mode` columns given),
            `alpha`, `seed` (episode seed), optional `train_seed` and `k`, and the metric columns.
        metrics: metric columns to summarise.
        level: confidence level.

    Returns:
        The `curves` contract frame (`CURVE_SCHEMA`, plus `k` when present) sorted by policy,
        metric, [k,] alpha; `n` = episode seeds, NaN bounds where n = 1.
    """
    _check_level(level)
    means = episode_seed_means(evaluations, metrics)
    keys = design_keys(means.columns)
    long = means.unpivot(index=["policy", *keys, "seed"], on=list(metrics),
                         variable_name="metric", value_name="value")  # fmt: skip
    out = _t_intervals(long, ["policy", "metric", *keys], level)
    if {"tier", "mode"} <= set(evaluations.columns):
        labels = evaluations.select("policy", "tier", "mode").unique(subset="policy")
    else:
        labels = _tier_mode(sorted(set(means["policy"].to_list())))
    columns = [*CURVE_SCHEMA]
    columns[4:4] = keys[1:]
    out = out.join(labels, on="policy", how="left").select(columns).cast(CURVE_SCHEMA)  # type: ignore[arg-type]
    return out.sort("policy", "metric", *keys[::-1])


def paired_difference(
    evaluations: pl.DataFrame, defended: str, baseline: str,
    metrics: Sequence[str] = EPISODE_METRICS, level: float = 0.95,
) -> pl.DataFrame:  # fmt: skip
    """defended − baseline per (α, [k,] metric), paired by episode seed, with a paired t CI.

    Each policy's training seeds are averaged per episode seed first; then seeds evaluated for both
    policies are paired one-to-one on (α, [k,] seed), so `n` = paired episode seeds.

    Returns:
        Columns `defended, baseline, alpha, [k,] metric, mean, ci_low, ci_high, n`.
    """
    _check_level(level)
    chosen = evaluations.filter(pl.col("policy").is_in([defended, baseline]))
    means = episode_seed_means(chosen, metrics)
    keys = design_keys(means.columns)
    left = means.filter(pl.col("policy") == defended).select(*keys, "seed", *metrics)
    right = means.filter(pl.col("policy") == baseline).select(*keys, "seed", *metrics)
    if left.is_empty() or right.is_empty():
        raise ValueError(f"no evaluations for {defended!r} and/or {baseline!r}")
    joined = left.join(right, on=[*keys, "seed"], how="inner", suffix="_base", validate="1:1")
    diffs = joined.select(*keys, "seed", *[(pl.col(m) - pl.col(f"{m}_base")).alias(m)
                                           for m in metrics])  # fmt: skip
    long = diffs.unpivot(index=[*keys, "seed"], on=list(metrics), variable_name="metric",
                         value_name="value")  # fmt: skip
    out = _t_intervals(long, [*keys, "metric"], level)
    return out.select(pl.lit(defended).alias("defended"), pl.lit(baseline).alias("baseline"),
                      *keys, "metric", "mean", "ci_low", "ci_high", "n",
                      ).sort("metric", *keys[::-1])  # fmt: skip


def defended_vs_baseline(
    evaluations: pl.DataFrame, metrics: Sequence[str] = EPISODE_METRICS, level: float = 0.95
) -> pl.DataFrame:
    """`paired_difference` for every robust policy whose baseline twin (same tier, α) exists."""
    present = set(evaluations["policy"].to_list())
    frames = [paired_difference(evaluations, key, twin, metrics, level)
              for key in sorted(present) if (twin := baseline_twin(key)) in present]  # fmt: skip
    if not frames:
        raise ValueError("no robust policy has a baseline twin in the evaluations")
    return pl.concat(frames)


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
        .with_columns(intercept=c("ybar") - c("slope") * c("xbar"),
                      u=c("dy") - c("slope") * c("dx"))
        .with_columns(a_s=c("dx") * c("u") / c("sxx"),
                      a_i=(1.0 / c("N") - c("xbar") * c("dx") / c("sxx")) * c("u"))
        .group_by([*groups, "_cluster"], maintain_order=True)
        .agg(c("a_s", "a_i").sum(), c("intercept", "slope", "sxx", "N").first())
        .group_by(groups, maintain_order=True)
        .agg((c("a_s", "a_i") ** 2).sum(), c("intercept", "slope", "sxx", "N").first(),
             pl.len().alias("n_clusters"))
        .sort(groups)
        .collect()
    )  # fmt: skip
    bad = fits.filter((c("sxx") <= 0) | (c("N") < 3))
    if bad.height:
        raise ValueError(f"alpha does not vary or fewer than 3 rows (the slope is not identified) "
                         f"in groups {bad.select(groups).rows()[:5]}")  # fmt: skip
    g, n = (fits[col].to_numpy().astype(np.float64) for col in ("n_clusters", "N"))
    slope = fits["slope"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(g >= 2, g / (g - 1) * (n - 1) / (n - 2), np.nan)
        se_s, se_i = (np.sqrt(factor * fits[col].to_numpy()) for col in ("a_s", "a_i"))
        half = _t_quantile(level, g - 1) * se_s
        p = np.where(g >= 2, 2.0 * stats.t.sf(np.abs(slope / se_s), np.maximum(g - 1, 1)), np.nan)
    return fits.select(*groups, "intercept", "slope").with_columns(
        se_intercept=se_i, se_slope=se_s, slope_ci_low=slope - half, slope_ci_high=slope + half,
        slope_p_value=p, df=pl.Series((g - 1).astype(np.int64)), n_obs=fits["N"].cast(pl.Int64),
        n_clusters=fits["n_clusters"].cast(pl.Int64),
    )  # fmt: skip


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
    frame = pl.DataFrame({"_group": np.zeros(xs.size, dtype=np.int64), "_x": xs, "_y": ys,
                          "_cluster": np.asarray(clusters)})  # fmt: skip
    row = _cluster_fit(frame, ["_group"], level).drop("_group").row(0, named=True)
    return OlsResult(**row)


def revenue_regression(
    evaluations: pl.DataFrame, metric: str = "revenue", by: Sequence[str] = ("policy",),
    level: float = 0.95,
) -> pl.DataFrame:  # fmt: skip
    """OLS of `metric` on α per group of `by` (and `k` when present), clustered by episode seed.

    Rows are reduced by `episode_seed_means` (pooled: `config_hash` when present, so the same
    policy stored under two keys counts once; training seeds averaged), so `n_obs` counts
    (configuration, α, episode seed) means and `n_clusters` = G independent episode seeds.

    Returns:
        Columns `by…, [k,] intercept, slope, se_intercept, se_slope, slope_ci_low, slope_ci_high,
        slope_p_value, df, n_obs, n_clusters` (see `REGRESSION_METHOD`).
    """
    _check_level(level)
    means = episode_seed_means(evaluations, [metric], pooled=True)
    groups = [*by, *(["k"] if "k" in means.columns and "k" not in by else [])]
    if missing := set(groups) - set(means.columns):
        raise ValueError(f"evaluations lack the grouping columns {sorted(missing)}")
    frame = means.select(*groups, _cluster=pl.col("seed"), _x=pl.col("alpha").cast(pl.Float64),
                         _y=pl.col(metric))  # fmt: skip
    return _cluster_fit(frame, groups, level)
