"""The benchmark of one store: its tables, their summary, and the files they are stored in.

Built from the protocol rows of every policy of the store (`partition.load_evaluations`): curves
and paired defended − baseline differences for the nominal and the selection-seed stress metrics,
and the revenue regressions. The held-out test seeds of the stress rows are the gate's alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from phantom_assets.constants import SELECTION_SPLIT
from phantom_assets.evaluation.benchmark import (
    CI_METHOD,
    REGRESSION_METHOD,
    benchmark_curves,
    defended_vs_baseline,
    revenue_regression,
)
from phantom_assets.evaluation.protocol import EPISODE_METRICS
from phantom_assets.lake import CURVES_FILE, DIFFERENCES_FILE, REGRESSION_FILE, SUMMARY_FILE
from phantom_assets.policies import ALPHA_FREE_TIERS
from phantom_assets.storage import write_bytes_atomic, write_json_atomic, write_parquet_atomic

STRESS_PREFIX = "stress_"
STRESS_METRICS: tuple[str, ...] = tuple(f"{STRESS_PREFIX}{m}" for m in EPISODE_METRICS)
"""Metric names of the stress rows in the curves and differences."""
BENCHMARK_FILES = (CURVES_FILE, DIFFERENCES_FILE, REGRESSION_FILE, SUMMARY_FILE)


def stress_as_curves_input(stress: pl.DataFrame) -> pl.DataFrame:
    """Selection-seed stress rows keyed by their nominal α0, metrics renamed `stress_<metric>`
    (the held-out test seeds are the gate's alone)."""
    selection = stress.filter(pl.col("split") == SELECTION_SPLIT).drop("split")
    return selection.drop("alpha").rename(
        {"alpha0": "alpha", **dict(zip(EPISODE_METRICS, STRESS_METRICS, strict=True))}
    )


def benchmark_tables(
    nominal: pl.DataFrame, stress: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """Curves and paired differences (nominal and selection-seed stress metrics) and the revenue
    regressions (per policy, and pooled per mode with identical configurations counted once),
    every statistic over episode seeds with training seeds averaged first."""
    stressed = stress_as_curves_input(stress)
    curves = pl.concat([benchmark_curves(nominal), benchmark_curves(stressed, STRESS_METRICS)])
    differences = pl.concat(
        [defended_vs_baseline(nominal), defended_vs_baseline(stressed, STRESS_METRICS)]
    )
    regression = {
        "metric": "revenue", "regressor": "alpha", "method": REGRESSION_METHOD,
        "ci_method": CI_METHOD,
        "by_policy": revenue_regression(nominal, by=("policy",)).to_dicts(),
        "by_mode": revenue_regression(nominal, by=("mode",)).to_dicts(),
    }  # fmt: skip
    return curves, differences, regression


def expected_curve_rows(nominal: pl.DataFrame, alphas: int) -> int:
    """Rows of complete curves: every policy × α × metric, nominal and stress."""
    return nominal["policy"].n_unique() * alphas * (len(EPISODE_METRICS) + len(STRESS_METRICS))


def summary_markdown(store: str, regression: dict[str, Any], differences: pl.DataFrame) -> str:
    """Regression slopes per policy (with clusters and t CI) and the defended − baseline revenue
    differences over episode seeds."""
    lines = [f"# Benchmark {store}", "", f"Regression: {regression['method']}", "",
             "| policy | slope (revenue/α) | CR1 SE | 95% CI (t, G−1 df) | clusters (seeds) |",
             "|---|---:|---:|---|---:|"]  # fmt: skip
    lines += [f"| {r['policy']} | {r['slope']:.1f} | {r['se_slope']:.1f} | "
              f"[{r['slope_ci_low']:.1f}, {r['slope_ci_high']:.1f}] | {r['n_clusters']} |"
              for r in regression["by_policy"]]  # fmt: skip
    lines += ["", f"Paired differences: {regression['ci_method']}", "",
              "| defended | baseline | α | Δ revenue | 95% CI | n seeds |",
              "|---|---|---:|---:|---|---:|"]  # fmt: skip
    rows = differences.filter(pl.col("metric") == "revenue").iter_rows(named=True)
    lines += [f"| {r['defended']} | {r['baseline']} | {r['alpha']:g} | {r['mean']:.1f} | "
              f"[{r['ci_low']:.1f}, {r['ci_high']:.1f}] | {r['n']} |" for r in rows]  # fmt: skip
    return "\n".join(lines) + "\n"


def trace_selection(traces: pl.DataFrame) -> pl.DataFrame:
    """Episode-0 price traces at the middle evaluation α of the middle-training-α policies and
    and of the α-free tiers, first training seed only."""
    alphas = sorted(set(traces["alpha"].to_list()))
    train = sorted(set(traces["train_alpha"].to_list()))
    middle = pl.col("train_alpha") == train[len(train) // 2]
    return traces.filter(
        (pl.col("alpha") == alphas[len(alphas) // 2])
        & (middle | pl.col("tier").is_in(ALPHA_FREE_TIERS))
        & (pl.col("train_seed") == pl.col("train_seed").min())
    )


def save_benchmark(
    folder: Path,
    store: str,
    curves: pl.DataFrame,
    differences: pl.DataFrame,
    regression: dict[str, Any],
) -> list[Path]:
    """Write curves, differences, regression and summary atomically (`BENCHMARK_FILES` order);
    return their paths."""
    paths = [folder / name for name in BENCHMARK_FILES]
    write_parquet_atomic(curves, paths[0])
    write_parquet_atomic(differences, paths[1])
    write_json_atomic(regression, paths[2])
    write_bytes_atomic(summary_markdown(store, regression, differences).encode(), paths[3])
    return paths
