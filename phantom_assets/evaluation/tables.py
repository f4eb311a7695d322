"""The benchmark of one store: its tables, their summary, and the files they are stored in.

Built from the protocol rows of every policy of the store (`partition.load_evaluations`), the
store's oracle and market: curves for the nominal and the selection-seed stress metrics (both
detectors), paired differences (`contrasts.comparison_pairs`), the revenue regressions (fitted
detector), regret against the oracle and each policy's adaptivity (`adaptivity`), and the
λ × adversary factorial of the ablation tier. The held-out test seeds of the stress rows are the
gate's alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from phantom_assets.constants import SELECTION_SPLIT
from phantom_assets.evaluation.adaptivity import (
    adaptivity_table,
    fixed_action_profits,
    oracle_profits,
    regret_table,
)
from phantom_assets.evaluation.benchmark import (
    CI_METHOD,
    PAIR_COLUMNS,
    REGRESSION_METHOD,
    benchmark_curves,
    paired_differences,
    revenue_regression,
)
from phantom_assets.evaluation.contrasts import (
    DETECTOR_VALUE,
    FACTORIAL_METRICS,
    VS_TUNED,
    comparison_pairs,
    factorial_effects,
)
from phantom_assets.evaluation.partition import PolicyEvaluation
from phantom_assets.evaluation.protocol import EPISODE_METRICS, FITTED
from phantom_assets.lake import (
    ABLATION_FILE,
    ADAPTIVITY_FILE,
    CURVES_FILE,
    DIFFERENCES_FILE,
    REGRESSION_FILE,
    REGRET_FILE,
    SUMMARY_FILE,
)
from phantom_assets.market import DETECTOR_MODES, MarketSpec
from phantom_assets.storage import write_bytes_atomic, write_json_atomic, write_parquet_atomic

STRESS_PREFIX = "stress_"
STRESS_METRICS: tuple[str, ...] = tuple(f"{STRESS_PREFIX}{m}" for m in EPISODE_METRICS)
"""Metric names of the stress rows in the curves and differences."""
_STATS = ("mean", "ci_low", "ci_high")
BENCHMARK_FILES = (
    CURVES_FILE,
    DIFFERENCES_FILE,
    REGRESSION_FILE,
    REGRET_FILE,
    ABLATION_FILE,
    ADAPTIVITY_FILE,
    SUMMARY_FILE,
)


class BenchmarkTables(NamedTuple):
    """A store's benchmark (the first six `BENCHMARK_FILES`, in order)."""

    curves: pl.DataFrame
    differences: pl.DataFrame
    regression: dict[str, Any]
    regret: pl.DataFrame
    ablation: pl.DataFrame
    adaptivity: pl.DataFrame


def stress_as_curves_input(stress: pl.DataFrame) -> pl.DataFrame:
    """Selection-seed stress rows of the agents as logged (θ = 0) keyed by their nominal α0
    (`alpha`) and band α (`band_alpha`), metrics renamed `stress_<metric>`: the curves are over α;
    the held-out test seeds and the adapting agents' rows are the gate's alone (the ledger sweeps
    θ)."""
    selection = stress.filter(pl.col("split") == SELECTION_SPLIT, pl.col("theta") == 0.0).drop(
        "split", "radius", "theta"
    )
    return selection.rename(
        {
            "alpha": "band_alpha",
            "alpha0": "alpha",
            **dict(zip(EPISODE_METRICS, STRESS_METRICS, strict=True)),
        }
    )


def worst_band_alpha(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The rows of `frame` (statistics per `band_alpha` of a stress band) at, per group `by`, the
    band α with the lowest mean fitted stress profit: a policy's worst case, or a comparison's
    worst paired difference -- one α for both arms, chosen on the selection seeds."""
    score = frame.filter(
        (pl.col("metric") == f"{STRESS_PREFIX}profit") & (pl.col("detector") == FITTED)
    )
    worst = score.sort("mean", "band_alpha").group_by(by, maintain_order=True).first()
    return frame.join(worst.select(*by, "band_alpha"), on=[*by, "band_alpha"], how="semi")


def benchmark_tables(
    evaluation: PolicyEvaluation, oracle: pl.DataFrame, spec: MarketSpec, ablation_tier: str
) -> BenchmarkTables:
    """Every statistic of the benchmark over episode seeds, training seeds averaged first.

    Args:
        evaluation: the store's protocol tables: nominal rows (both detectors), stress rows (only
            the selection seeds are used) and the per-step action traces.
        oracle: the store's oracle table (`alpha, k, level, markup, delta`).
        spec: the store's market (the oracle's and the policies' actions are replayed on it as
            fixed actions, `adaptivity.oracle_profits` and `adaptivity.fixed_action_profits`).
        ablation_tier: the tier trained in all four factorial modes.
    """
    nominal, stress, traces = evaluation
    fixed = fixed_action_profits(spec, sorted(set(traces["action"].to_list())), nominal)
    stressed = stress_as_curves_input(stress)
    pairs = comparison_pairs(nominal.select("policy", "tier", "mode", "train_alpha"))
    band_curves = benchmark_curves(stressed, STRESS_METRICS)
    worst_curves = worst_band_alpha(band_curves, ["policy", "alpha", "k"])
    curves = pl.concat([benchmark_curves(nominal), worst_curves.drop("band_alpha")])
    band_pairs = paired_differences(stressed, pairs, STRESS_METRICS)
    worst_pairs = worst_band_alpha(band_pairs, [*PAIR_COLUMNS, "alpha", "k"])
    differences = pl.concat(
        [paired_differences(nominal, pairs), worst_pairs], how="diagonal_relaxed"
    )
    fitted = nominal.filter(pl.col("detector") == FITTED).drop("detector")
    regression = {
        "metric": "revenue",
        "regressor": "alpha",
        "detector": FITTED,
        "method": REGRESSION_METHOD,
        "ci_method": CI_METHOD,
        "by_policy": revenue_regression(fitted, by=("policy",)).to_dicts(),
        "by_mode": revenue_regression(fitted, by=("mode",)).to_dicts(),
    }
    regret = regret_table(nominal, oracle_profits(spec, oracle, nominal))
    return BenchmarkTables(
        curves,
        differences,
        regression,
        regret,
        factorial_effects(nominal, ablation_tier),
        adaptivity_table(traces, nominal, fixed),
    )


def expected_curve_rows(policies: int, alphas: int, ks: int) -> int:
    """Rows of complete curves: every policy × α × detector × metric, nominal at every K and
    stress at the nominal K."""
    per_alpha = ks * len(EPISODE_METRICS) + len(STRESS_METRICS)
    return policies * alphas * len(DETECTOR_MODES) * per_alpha


def _cell(value: float | None) -> str:
    if value is None or value != value:  # NaN != NaN
        return "–"
    return f"{round(value, 1) + 0.0:.1f}"  # + 0.0: a rounded -0.0 (summation noise) prints 0.0


def _headline(tables: BenchmarkTables) -> list[str]:
    """Per (policy, K): fitted profit at each α, then detector value, human harm (%) and regret
    averaged over the α grid where defined (no human harm without humans, at α = 1), and the
    detector's false-positive rate on humans at α = 0 (%)."""

    def over_alphas(column: str) -> pl.Expr:
        return pl.col(column).fill_nan(None).mean()

    curves = tables.curves.filter(pl.col("detector") == FITTED)
    profit = curves.filter(metric="profit").pivot("alpha", index=["policy", "k"], values="mean")
    alphas = profit.columns[2:]
    value = tables.differences.filter(comparison=DETECTOR_VALUE, metric="profit")
    extra = [
        value.group_by("policy", "k").agg(detector_value=over_alphas("mean")),
        curves.filter(metric="human_harm")
        .group_by("policy", "k")
        .agg(human_harm=100 * over_alphas("mean")),
        tables.regret.group_by("policy", "k").agg(regret=over_alphas("regret")),
        curves.filter(metric="false_positive_rate", alpha=0.0)
        .group_by("policy", "k")
        .agg(false_positive_rate=100 * over_alphas("mean")),
    ]
    for frame in extra:
        profit = profit.join(frame, on=["policy", "k"], how="left")
    lines = [
        "| policy | K | "
        + " | ".join(f"profit α={float(a):g}" for a in alphas)
        + " | detector value | human harm % | regret | FPR % α=0 |",
        "|---|---:|" + "---:|" * (len(alphas) + 4),
    ]
    for row in profit.sort("policy", "k").iter_rows(named=True):
        extras = ("detector_value", "human_harm", "regret", "false_positive_rate")
        cells = [row[a] for a in alphas] + [row[c] for c in extras]
        lines.append(f"| {row['policy']} | {row['k']} | " + " | ".join(map(_cell, cells)) + " |")
    return lines


def _ablation(ablation: pl.DataFrame) -> list[str]:
    """Per (training α, α, K, effect): the effect on each factorial metric with its t CI."""
    metrics = list(FACTORIAL_METRICS)
    text = pl.format("{} [{}, {}]", *(pl.col(c).round_sig_figs(3) for c in _STATS))
    cells = ablation.with_columns(text=text).pivot(
        "metric", index=["train_alpha", "alpha", "k", "effect", "n"], values="text"
    )
    lines = [
        "| train α | α | K | effect | " + " | ".join(metrics) + " | n seeds |",
        "|---:|---:|---:|---|" + "---|" * len(metrics) + "---:|",
    ]
    for row in cells.sort("train_alpha", "effect", "k", "alpha").iter_rows(named=True):
        values = " | ".join(str(row.get(m) or "–") for m in metrics)
        lines.append(
            f"| {row['train_alpha']:g} | {row['alpha']:g} | {row['k']} | "
            f"{row['effect']} | {values} | {row['n']} |"
        )
    return lines


def _interval(row: dict[str, Any], mean: str = "mean") -> str:
    return f"{_cell(row[mean])} [{_cell(row['ci_low'])}, {_cell(row['ci_high'])}]"


def _adaptivity(tables: BenchmarkTables) -> list[str]:
    """Per policy: its worst-case regret, its best gain over tuned-static and the cells where
    that gain's CI is above 0, and how much its action varies with the observed agent share and
    what the variation earns over its own best fixed action (`adaptivity`)."""
    worst = tables.regret.sort("regret", descending=True).group_by("policy").first()
    gain = tables.differences.filter(
        (pl.col("comparison") == VS_TUNED) & (pl.col("metric") == "profit")
    )
    if "band_alpha" in gain.columns:
        gain = gain.filter(pl.col("band_alpha").is_null())
    best = gain.sort("ci_low", descending=True).group_by("policy").first()
    above = gain.group_by("policy").agg(above=(pl.col("ci_low") > 0).sum())
    cells = tables.adaptivity.filter(pl.col("alpha").is_not_null())
    ends = cells.filter(
        (pl.col("alpha") == pl.col("alpha").min()) | (pl.col("alpha") == pl.col("alpha").max())
    ).sort("policy", "k", "alpha")
    moves = ends.group_by("policy", "k", maintain_order=True).agg(pl.col("modal_label"))
    lines = [
        "| policy | worst-case regret [CI] at (α, K) | best gain over tuned-static [CI] at "
        "(α, K) | cells with gain CI > 0 | actions played | steps off its modal action | "
        "modal action at lowest → highest α | own best fixed action | adaptation gain "
        "[CI] |",
        "|---|---|---|---:|---:|---:|---|---|---|",
    ]
    grid = tables.adaptivity.filter(pl.col("alpha").is_null())
    for row in grid.sort("policy").iter_rows(named=True):  # one row per policy
        policy = row["policy"]
        w = worst.filter(policy=policy).row(0, named=True)
        versus = best.filter(policy=policy)
        b = versus.row(0, named=True) if versus.height else None
        n_above = above.filter(policy=policy)["above"]
        move = "; ".join(
            f"K={k}: {' → '.join(labels)}"
            for k, labels in moves.filter(policy=policy).select("k", "modal_label").rows()
        )
        lines.append(
            f"| {policy} | {_interval(w, 'regret')} at ({w['alpha']:g}, {w['k']}) | "
            + (f"{_interval(b)} at ({b['alpha']:g}, {b['k']}) | " if b else "– | ")
            + f"{n_above[0] if n_above.len() else '–'} | {row['actions_played']} | "
            f"{100 * (1 - row['modal_share']):.1f}% | {move} | {row['fixed_label']} | "
            f"{_interval(row)} |"
        )
    return lines


def summary_markdown(store: str, tables: BenchmarkTables) -> str:
    """The headline table (fitted detector; detector value, human harm and regret are means over
    the α grid), the regret and adaptivity table (`_adaptivity`) and the ablation table (effects
    on profit, leak and human harm with t CIs)."""
    lines = [
        f"# Benchmark {store}",
        "",
        f"Nominal, fitted detector; intervals: {CI_METHOD}.",
        "",
        *_headline(tables),
        "",
        "## Regret, gain over tuned-static and adaptivity",
        "",
        "Tuned-static's regret is the most any α-aware rule can gain over it (the oracle "
        "plays the best fixed action of each (α, K)).",
        "",
        *_adaptivity(tables),
        "",
        "## λ × adversary ablation",
        "",
    ]
    if tables.ablation.is_empty():
        return "\n".join([*lines, "No tier was trained in all four modes.", ""])
    tier = tables.ablation["tier"][0]
    lines += [
        f"Tier {tier}: main effects of λ and of the adversary, and their interaction "
        f"(`contrasts.FACTORIAL_EFFECTS`), paired by episode seed.",
        "",
        *_ablation(tables.ablation),
    ]
    return "\n".join(lines) + "\n"


def save_benchmark(folder: Path, store: str, tables: BenchmarkTables) -> list[Path]:
    """Write the tables and the summary atomically (`BENCHMARK_FILES` order); return the paths."""
    paths = [folder / name for name in BENCHMARK_FILES]
    for frame, path in zip((tables.curves, tables.differences), paths[:2], strict=True):
        write_parquet_atomic(frame, path)
    write_json_atomic(tables.regression, paths[2])
    write_parquet_atomic(tables.regret, paths[3])
    write_parquet_atomic(tables.ablation, paths[4])
    write_parquet_atomic(tables.adaptivity, paths[5])
    write_bytes_atomic(summary_markdown(store, tables).encode(), paths[6])
    return paths
