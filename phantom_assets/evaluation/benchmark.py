"""Benchmark statistics: bootstrap CIs of metric-vs-α curves, paired defended − baseline
differences, and OLS of revenue on α with cluster-robust standard errors (DESIGN §5).

Identical configurations are counted once everywhere (pitfall §10.6): rows that share a
configuration identity -- `config_hash` (or `policy`), `alpha`, `seed` and `train_seed` when
present -- are averaged into one row before any statistic, so duplicating runs cannot shrink a
confidence interval or a standard error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.evaluation.protocol import EPISODE_METRICS
from phantom_assets.policies import baseline_twin, parse_policy_key

CURVE_SCHEMA: dict[str, pl.DataType] = {
    "policy": pl.String(), "tier": pl.String(), "mode": pl.String(), "alpha": pl.Float64(),
    "metric": pl.String(), "mean": pl.Float64(), "ci_low": pl.Float64(), "ci_high": pl.Float64(),
    "n": pl.Int64(),
}  # fmt: skip
"""Contract of `benchmark_curves/curves.parquet` (DESIGN §12)."""


def _bootstrap_rows(
    matrix: np.ndarray, rng: np.random.Generator, draws: int, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile bootstrap of the row means of a (G, n) matrix, one index draw shared by rows.

    The draw is `rng.integers(0, n, (draws, n))`; every row's bootstrap means are the resampled
    means under those indices (as counts, so the work is one (G, n) @ (n, draws) product).
    """
    n = matrix.shape[1]
    idx = rng.integers(0, n, size=(draws, n))
    offsets = (np.arange(draws)[:, None] * n + idx).ravel()
    counts = np.bincount(offsets, minlength=draws * n).reshape(draws, n).astype(np.float64)
    boot = matrix @ counts.T / n  # (G, draws)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail], axis=1)
    return matrix.mean(axis=1), low, high


def _check(draws: int, level: float) -> None:
    if draws < 1 or not 0.0 < level < 1.0:
        raise ValueError(f"need draws >= 1 and level in (0, 1), got {draws!r}, {level!r}")


def bootstrap_mean_ci(
    values: np.ndarray, rng: np.random.Generator, draws: int = 1000, level: float = 0.95
) -> tuple[float, float, float]:
    """(mean, ci_low, ci_high): percentile bootstrap CI of the mean of 1-D `values`."""
    _check(draws, level)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {arr.shape}")
    mean, low, high = _bootstrap_rows(arr[None, :], rng, draws, level)
    return float(mean[0]), float(low[0]), float(high[0])


def configuration_identity(columns: Sequence[str], pooled: bool = False) -> list[str]:
    """Columns that identify one configuration: policy (or `config_hash` when `pooled` and
    present), `alpha`, `seed`, and `train_seed` when present."""
    head = "config_hash" if pooled and "config_hash" in columns else "policy"
    return [head, "alpha", "seed", *(["train_seed"] if "train_seed" in columns else [])]


def unique_configurations(
    evaluations: pl.DataFrame, metrics: Sequence[str], pooled: bool = False
) -> pl.DataFrame:
    """One row per configuration (`configuration_identity`): metric means, other columns first."""
    identity = configuration_identity(evaluations.columns, pooled)
    others = [c for c in evaluations.columns if c not in identity and c not in metrics]
    return evaluations.group_by(identity, maintain_order=True).agg(
        *[pl.col(m).mean() for m in metrics], *[pl.col(c).first() for c in others]
    )


def _grouped_bootstrap(
    long: pl.DataFrame, groups: list[str], rng: np.random.Generator, draws: int, level: float
) -> pl.DataFrame:
    """Bootstrap the mean of `value` within every group (rows ordered by `seed` inside)."""
    lists = (long.sort([*groups, "seed"]).group_by(groups, maintain_order=True)
             .agg(pl.col("value")).with_columns(pl.col("value").list.len().alias("n")))  # fmt: skip
    parts = []
    for n in sorted(set(lists["n"].to_list())):  # loop over distinct sample sizes (usually one)
        part = lists.filter(pl.col("n") == n)
        matrix = np.asarray(part["value"].to_list(), dtype=np.float64).reshape(part.height, n)
        mean, low, high = _bootstrap_rows(matrix, rng, draws, level)
        stats = [pl.Series("mean", mean), pl.Series("ci_low", low), pl.Series("ci_high", high)]
        parts.append(part.drop("value").with_columns(stats))
    return pl.concat(parts).with_columns(pl.col("n").cast(pl.Int64))


def _tier_mode(policies: Sequence[str]) -> pl.DataFrame:
    parsed = [parse_policy_key(p) for p in policies]
    columns = {"policy": list(policies), "tier": [k.tier for k in parsed],
               "mode": [k.mode for k in parsed]}  # fmt: skip
    return pl.DataFrame(columns, schema={"policy": pl.String, "tier": pl.String, "mode": pl.String})


def benchmark_curves(
    evaluations: pl.DataFrame,
    rng: np.random.Generator,
    metrics: Sequence[str] = EPISODE_METRICS,
    draws: int = 1000,
    level: float = 0.95,
) -> pl.DataFrame:
    """Metric-vs-α curves: mean and bootstrap CI over episodes per (policy, α, metric).

    Args:
        evaluations: protocol rows with `policy` (a policy key, or `tier`/`mode` columns given),
            `alpha`, `seed` and the metric columns (several policies concatenated).
        rng: draws the bootstrap indices.
        metrics: metric columns to summarise.
        draws: bootstrap resamples.
        level: confidence level.

    Returns:
        The `curves` contract frame (`CURVE_SCHEMA`), sorted by policy, metric, alpha.
    """
    _check(draws, level)
    missing = {"policy", "alpha", "seed", *metrics} - set(evaluations.columns)
    if missing:
        raise ValueError(f"evaluations lack columns {sorted(missing)}")
    rows = unique_configurations(evaluations, metrics)
    long = rows.unpivot(index=["policy", "alpha", "seed"], on=list(metrics),
                        variable_name="metric", value_name="value")  # fmt: skip
    stats = _grouped_bootstrap(long, ["policy", "metric", "alpha"], rng, draws, level)
    if {"tier", "mode"} <= set(evaluations.columns):
        labels = evaluations.select("policy", "tier", "mode").unique(subset="policy")
    else:
        labels = _tier_mode(sorted(set(rows["policy"].to_list())))
    out = stats.join(labels, on="policy", how="left")
    return out.select(list(CURVE_SCHEMA)).cast(CURVE_SCHEMA).sort("policy", "metric", "alpha")  # type: ignore[arg-type]


def paired_difference(
    evaluations: pl.DataFrame,
    defended: str,
    baseline: str,
    rng: np.random.Generator,
    metrics: Sequence[str] = EPISODE_METRICS,
    draws: int = 1000,
    level: float = 0.95,
) -> pl.DataFrame:
    """defended − baseline per (α, metric), paired by episode seed, with a paired bootstrap CI.

    Only seeds evaluated for both policies at an α enter (inner join on `alpha, seed`).

    Returns:
        Columns `defended, baseline, alpha, metric, mean, ci_low, ci_high, n`.
    """
    _check(draws, level)
    rows = unique_configurations(evaluations.filter(pl.col("policy").is_in([defended, baseline])),
                                 metrics)  # fmt: skip
    left = rows.filter(pl.col("policy") == defended).select("alpha", "seed", *metrics)
    right = rows.filter(pl.col("policy") == baseline).select("alpha", "seed", *metrics)
    if left.is_empty() or right.is_empty():
        raise ValueError(f"no evaluations for {defended!r} and/or {baseline!r}")
    joined = left.join(right, on=["alpha", "seed"], how="inner", suffix="_base")
    diffs = joined.select("alpha", "seed", *[(pl.col(m) - pl.col(f"{m}_base")).alias(m)
                                             for m in metrics])  # fmt: skip
    long = diffs.unpivot(index=["alpha", "seed"], on=list(metrics), variable_name="metric",
                         value_name="value")  # fmt: skip
    stats = _grouped_bootstrap(long, ["alpha", "metric"], rng, draws, level)
    return stats.select(pl.lit(defended).alias("defended"), pl.lit(baseline).alias("baseline"),
                        pl.all()).sort("metric", "alpha")  # fmt: skip


def defended_vs_baseline(
    evaluations: pl.DataFrame,
    rng: np.random.Generator,
    metrics: Sequence[str] = EPISODE_METRICS,
    draws: int = 1000,
    level: float = 0.95,
) -> pl.DataFrame:
    """`paired_difference` for every robust policy whose baseline twin (same tier, α) exists."""
    keys = sorted(set(evaluations["policy"].to_list()))
    present = set(keys)
    frames = []
    for key in keys:  # loop over policies (a handful)
        twin = baseline_twin(key)
        if twin in present:
            frames.append(paired_difference(evaluations, key, twin, rng, metrics, draws, level))
    if not frames:
        raise ValueError("no robust policy has a baseline twin in the evaluations")
    return pl.concat(frames)


@dataclass(frozen=True)
class OlsResult:
    """OLS fit `y = intercept + slope·x` with CR1 cluster-robust standard errors."""

    intercept: float
    slope: float
    se_intercept: float
    se_slope: float
    n_obs: int
    n_clusters: int


def cluster_ols(x: np.ndarray, y: np.ndarray, clusters: np.ndarray) -> OlsResult:
    """OLS of y on [1, x] with the CR1 sandwich variance clustered by `clusters`.

    V = c·(X'X)⁻¹ (Σ_g X_g'u_g u_g'X_g) (X'X)⁻¹, c = G/(G − 1)·(N − 1)/(N − 2); SEs are NaN with
    fewer than two clusters.
    """
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xs.ndim != 1 or xs.shape != ys.shape or len(clusters) != xs.size or xs.size < 3:
        raise ValueError(f"need equal 1-D x, y, clusters of >= 3 rows: {xs.shape}, {ys.shape}")
    design = np.column_stack([np.ones_like(xs), xs])
    if np.ptp(xs) == 0:
        raise ValueError(f"x does not vary (all {xs[0]}); the slope is not identified")
    beta, *_ = np.linalg.lstsq(design, ys, rcond=None)
    resid = ys - design @ beta
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    n_clusters, n_obs = int(inverse.max()) + 1, xs.size
    scores = design * resid[:, None]
    sums = np.column_stack([np.bincount(inverse, weights=scores[:, j], minlength=n_clusters)
                            for j in range(2)])  # fmt: skip
    bread = np.linalg.inv(design.T @ design)
    if n_clusters < 2:
        se = np.full(2, np.nan)
    else:
        factor = n_clusters / (n_clusters - 1) * (n_obs - 1) / (n_obs - 2)
        se = np.sqrt(np.diag(factor * bread @ (sums.T @ sums) @ bread))
    return OlsResult(float(beta[0]), float(beta[1]), float(se[0]), float(se[1]), n_obs, n_clusters)


def revenue_regression(
    evaluations: pl.DataFrame, metric: str = "revenue", by: Sequence[str] = ("policy",)
) -> pl.DataFrame:
    """OLS of `metric` on α per group of `by`, SEs clustered by episode seed, configs counted once.

    Rows with the same `configuration_identity` (pooled: `config_hash` when present, so the same
    policy stored under two keys counts once) are averaged first.

    Returns:
        Columns `by…, intercept, slope, se_intercept, se_slope, n_obs, n_clusters`.
    """
    rows = unique_configurations(evaluations, [metric], pooled=True)
    results = []
    for key, part in rows.group_by(list(by), maintain_order=True):  # loop over groups
        x, y, seeds = (part[c].to_numpy() for c in ("alpha", metric, "seed"))
        fit = cluster_ols(x, y, seeds)
        results.append({**dict(zip(by, key, strict=True)), **fit.__dict__})
    return pl.DataFrame(results)
