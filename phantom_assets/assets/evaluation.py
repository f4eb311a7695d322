"""Evaluation group: every policy evaluated by one protocol, and the benchmark curves per store.

Over the 250-line guide for asset modules: the benchmark glue here (stress rows as curves,
summary markdown, trace selection) would sit better in `phantom_assets.evaluation`.
"""

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from orchestration.resources import StorageResource
from phantom_assets.assets.defense import load_trained, policy_dir
from phantom_assets.assets.fingerprint import BY_STORE
from phantom_assets.assets.market import market_dir
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import (
    POLICY_GRID,
    store_partitions,
    store_policy_keys,
    store_policy_partitions,
)
from phantom_assets.config import EvaluationConfig
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.evaluation import (
    CI_METHOD,
    EPISODE_METRICS,
    REGRESSION_METHOD,
    defended_vs_baseline,
    evaluate_policy,
    plot_metric_vs_alpha,
    plot_price_traces,
    price_traces,
    revenue_regression,
    stress_evaluate,
)
from phantom_assets.evaluation import (
    benchmark_curves as benchmark_curves_of,
)
from phantom_assets.market import MarketSpec
from phantom_assets.policies import SB3_TIERS, Policy, PolicyKey
from phantom_assets.storage import (
    partition_dir,
    write_bytes_atomic,
    write_json_atomic,
    write_parquet_atomic,
)

EVALUATION_CODE_VERSION = code_version_of(
    "phantom_assets.assets.evaluation",
    "phantom_assets.assets.defense",
    "phantom_assets.evaluation",
    "phantom_assets.policies",
    "phantom_assets.market",
)
NOMINAL_FILE, STRESS_FILE, TRACES_FILE = "nominal.parquet", "stress.parquet", "traces.parquet"
CURVES_FILE, DIFFERENCES_FILE = "curves.parquet", "differences.parquet"
REGRESSION_FILE, SUMMARY_FILE = "regression.json", "summary.md"
STRESS_CANDIDATES = 3  # α0 − r, α0, α0 + r: the same candidates for every policy
STRESS_PREFIX = "stress_"
PLOT_METRICS = ("revenue", "coi_level", "leakage")
PROTOCOL_CHECK = "runs_at_grid_alpha_with_common_and_held_out_seeds"
UNIT_CHECK = "n_equals_episode_seeds"
COMPLETE_CHECK = "every_policy_alpha_metric_present"


def evaluation_dir(lake: Path, store: str, key: str) -> Path:
    """Folder of one policy's evaluations: `lake/policy_evaluations/store=S/policy=K/`."""
    return partition_dir(lake, "policy_evaluations", store=store, policy=key)


@contextlib.contextmanager
def torch_threads(threads: int, tier: str) -> Iterator[None]:
    """Fix torch's thread count while an SB3 policy acts (no torch import for other tiers)."""
    if tier not in SB3_TIERS:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def evaluate_all(
    policies: dict[int, Policy], spec: MarketSpec, cfg: EvaluationConfig, labels: dict[str, Any]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Nominal rows, stress rows (worst case around every grid α) and price traces of the
    policies of one partition (one per training seed), each row labelled with `labels`."""
    nominal, stress, traces = [], [], []
    for train_seed, policy in sorted(policies.items()):  # a handful of training seeds
        tag = [pl.lit(v).alias(k) for k, v in {**labels, "train_seed": train_seed}.items()]
        nominal.append(evaluate_policy(policy, spec, cfg.alphas, cfg.episodes, cfg.seed)
                       .with_columns(tag))  # fmt: skip
        stress.extend(
            stress_evaluate(policy, spec, a0, cfg.stress_radius, cfg.episodes, cfg.seed,
                            test_episodes=cfg.test_episodes, test_seed=cfg.test_seed,
                            candidates=STRESS_CANDIDATES).with_columns(tag)
            for a0 in cfg.alphas
        )  # fmt: skip
        traces.append(price_traces(policy, spec, cfg.alphas, cfg.seed).with_columns(tag))
    return pl.concat(nominal), pl.concat(stress), pl.concat(traces)


def protocol_check(
    nominal: pl.DataFrame, stress: pl.DataFrame, cfg: EvaluationConfig
) -> dg.AssetCheckResult:
    """Every nominal step ran at its grid α, on the grid, with the selection seeds; every stress
    α0 has exactly the selection seeds and the held-out test seeds, which are disjoint."""
    off_alpha = nominal.filter(pl.col("alpha_executed") != pl.col("alpha")).height
    seeds = nominal.group_by("alpha").agg(pl.col("seed").unique().sort())
    common = all(s == list(cfg.selection_seeds) for s in seeds["seed"].to_list())
    on_grid = sorted(seeds["alpha"].to_list()) == sorted(float(a) for a in cfg.alphas)
    split_seeds = stress.group_by("alpha0", "split").agg(pl.col("seed").unique().sort())
    expected = {SELECTION_SPLIT: list(cfg.selection_seeds), TEST_SPLIT: list(cfg.test_seeds)}
    held_out = split_seeds.height == 2 * len(cfg.alphas) and all(
        seeds == expected[split] for split, seeds in split_seeds.select("split", "seed").rows()
    )
    return dg.AssetCheckResult(
        check_name=PROTOCOL_CHECK,
        passed=off_alpha == 0 and common and on_grid and held_out,
        metadata={"rows_off_alpha": off_alpha, "common_seeds": common, "on_grid": on_grid,
                  "held_out_seeds_disjoint_and_complete": held_out},
    )  # fmt: skip


def policy_labels(store: str, key: PolicyKey, record: dict[str, Any]) -> dict[str, Any]:
    """Columns that identify a policy's rows (`config_hash`: identical policies count once)."""
    return {"store": store, "policy": key.key, "tier": key.tier, "mode": key.mode,
            "train_alpha": key.alpha, "config_hash": record["config_hash"]}  # fmt: skip


@dg.asset(
    partitions_def=store_policy_partitions,
    deps=["trained_policies", dg.AssetDep("market_simulators", partition_mapping=BY_STORE)],
    group_name="evaluation",
    kinds={"python", "parquet"},
    code_version=EVALUATION_CODE_VERSION,
    check_specs=[dg.AssetCheckSpec(PROTOCOL_CHECK, asset="policy_evaluations", blocking=True)],
)
def policy_evaluations(context: dg.AssetExecutionContext, storage: StorageResource):
    """One policy evaluated by the protocol: nominal market (no adversary) at every α of the
    evaluation grid, E episodes with seeds shared by every policy (`nominal.parquet`); the worst
    case over α0 ± r (`stress.parquet`); per-step prices of episode 0 (`traces.parquet`)."""
    store, key = store_policy_keys(context)
    settings = storage.settings()
    cfg, lake = settings.evaluation, settings.lake_dir
    spec = MarketSpec.load(market_dir(lake, store))
    record, policies = load_trained(policy_dir(lake, store, key.key), settings.training.device)
    with torch_threads(settings.training.torch_threads, key.tier):
        frames = evaluate_all(policies, spec, cfg, policy_labels(store, key, record))
    folder = evaluation_dir(lake, store, key.key)
    paths = [folder / name for name in (NOMINAL_FILE, STRESS_FILE, TRACES_FILE)]
    for frame, path in zip(frames, paths, strict=True):
        write_parquet_atomic(frame, path)
    version, artifacts = artifact_version(*paths)
    nominal = frames[0]
    means = nominal.group_by("alpha").agg(pl.col("revenue").mean()).sort("alpha")
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            nominal, paths[0], **artifacts, alphas=str(list(cfg.alphas)), episodes=cfg.episodes,
            selection_seeds=str(list(cfg.selection_seeds)), test_seeds=str(list(cfg.test_seeds)),
            stress_radius=cfg.stress_radius, stress_candidates=STRESS_CANDIDATES,
            mean_revenue_by_alpha=str([tuple(r) for r in means.rows()]),
        ),
    )  # fmt: skip
    yield protocol_check(nominal, frames[1], cfg)


def load_evaluations(lake: Path, store: str) -> tuple[dict[str, pl.DataFrame], list[str]]:
    """Nominal, stress and trace rows of every evaluated policy of `store`; missing keys."""
    present = [k for k in POLICY_GRID if (evaluation_dir(lake, store, k) / NOMINAL_FILE).exists()]
    if not present:
        raise ValueError(f"no policy evaluations under {lake / 'policy_evaluations'} for store "
                         f"{store!r}; materialize policy_evaluations first")  # fmt: skip
    frames = {
        name: pl.concat([pl.read_parquet(evaluation_dir(lake, store, k) / name) for k in present],
                        how="diagonal_relaxed")
        for name in (NOMINAL_FILE, STRESS_FILE, TRACES_FILE)
    }  # fmt: skip
    return frames, [k for k in POLICY_GRID if k not in present]


def stress_as_curves_input(stress: pl.DataFrame) -> pl.DataFrame:
    """Selection-seed stress rows keyed by their nominal α0, metrics renamed `stress_<metric>`
    (the held-out test seeds are the gate's alone)."""
    selection = stress.filter(pl.col("split") == SELECTION_SPLIT).drop("split")
    return selection.drop("alpha").rename(
        {"alpha0": "alpha", **{m: f"{STRESS_PREFIX}{m}" for m in EPISODE_METRICS}}
    )


def benchmark_tables(
    nominal: pl.DataFrame, stress: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """Curves and paired differences (nominal and selection-seed stress metrics) and the revenue
    regressions (per policy, and pooled per mode with identical configurations counted once),
    every statistic over episode seeds with training seeds averaged first."""
    stressed = stress_as_curves_input(stress)
    stress_metrics = [f"{STRESS_PREFIX}{m}" for m in EPISODE_METRICS]
    curves = pl.concat(
        [benchmark_curves_of(nominal), benchmark_curves_of(stressed, stress_metrics)]
    )
    differences = pl.concat(
        [defended_vs_baseline(nominal), defended_vs_baseline(stressed, stress_metrics)]
    )
    regression = {
        "metric": "revenue", "regressor": "alpha", "method": REGRESSION_METHOD,
        "ci_method": CI_METHOD,
        "by_policy": revenue_regression(nominal, by=("policy",)).to_dicts(),
        "by_mode": revenue_regression(nominal, by=("mode",)).to_dicts(),
    }  # fmt: skip
    return curves, differences, regression


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
    """Episode-0 price traces at the middle evaluation α of the middle-training-α policies."""
    alphas = sorted(set(traces["alpha"].to_list()))
    train = sorted(set(traces["train_alpha"].to_list()))
    middle = pl.col("train_alpha") == train[len(train) // 2]
    return traces.filter(
        (pl.col("alpha") == alphas[len(alphas) // 2])
        & (middle | pl.col("tier").is_in(["static", "surge"]))
        & (pl.col("train_seed") == pl.col("train_seed").min())
    )


def write_benchmark(
    folder: Path,
    curves: pl.DataFrame,
    differences: pl.DataFrame,
    regression: dict[str, Any],
    store: str,
) -> list[Path]:
    """Write curves, differences, regression and summary atomically; return their paths."""
    paths = [folder / n for n in (CURVES_FILE, DIFFERENCES_FILE, REGRESSION_FILE, SUMMARY_FILE)]
    write_parquet_atomic(curves, paths[0])
    write_parquet_atomic(differences, paths[1])
    write_json_atomic(regression, paths[2])
    write_bytes_atomic(summary_markdown(store, regression, differences).encode(), paths[3])
    return paths


def benchmark_plots(
    curves: pl.DataFrame, traces: pl.DataFrame, reports: Path, store: str
) -> dict[str, dg.MetadataValue]:
    """Revenue, COI level and leakage vs α, and price traces, saved under `reports/` as PNG."""
    folder = reports / "benchmark_curves"
    plots = {f"plot_{m}": figure_markdown(plot_metric_vs_alpha(curves, m),
                                          folder / f"{store}-{m}.png", f"{m} vs α")
             for m in PLOT_METRICS}  # fmt: skip
    plots["plot_price_traces"] = figure_markdown(
        plot_price_traces(trace_selection(traces), title=f"{store}: price traces"),
        folder / f"{store}-price_traces.png", "price traces")  # fmt: skip
    return plots


def curve_checks(
    curves: pl.DataFrame, differences: pl.DataFrame, episodes: int, expected: int
) -> list[dg.AssetCheckResult]:
    """Every curve and paired-difference row rests on exactly `episodes` independent episode
    seeds (training seeds averaged within a seed: a cross-join or a seed left out fails it);
    every policy × α × metric has a row."""
    wrong_n = {name: frame.filter(pl.col("n") != episodes).height
               for name, frame in (("curves", curves), ("differences", differences))}  # fmt: skip
    return [
        dg.AssetCheckResult(check_name=UNIT_CHECK, passed=not any(wrong_n.values()),
                            metadata={"episode_seeds": episodes,
                                      **{f"{k}_rows_with_other_n": v for k, v in wrong_n.items()}}),
        dg.AssetCheckResult(check_name=COMPLETE_CHECK, passed=curves.height == expected,
                            severity=dg.AssetCheckSeverity.WARN,
                            metadata={"rows": curves.height, "expected": expected}),
    ]  # fmt: skip


@dg.asset(
    partitions_def=store_partitions,
    deps=[dg.AssetDep("policy_evaluations", partition_mapping=BY_STORE)],
    group_name="evaluation",
    kinds={"python", "parquet", "matplotlib"},
    code_version=EVALUATION_CODE_VERSION,
    check_specs=[
        dg.AssetCheckSpec(UNIT_CHECK, asset="benchmark_curves", blocking=True),
        dg.AssetCheckSpec(COMPLETE_CHECK, asset="benchmark_curves", blocking=False),
    ],
)
def benchmark_curves(context: dg.AssetExecutionContext, storage: StorageResource):
    """Benchmark of one store: metric vs α per policy with Student-t 95% CIs over episode seeds,
    training seeds averaged first (`curves.parquet`); paired defended − baseline differences
    (`differences.parquet`); revenue-on-α OLS with seed-clustered SEs, cluster count and t CI
    (`regression.json`); a summary and plots."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.evaluation, settings.lake_dir
    frames, missing = load_evaluations(lake, store)
    if missing:
        context.log.warning(f"benchmark of {store} lacks evaluations of {missing}")
    nominal = frames[NOMINAL_FILE]
    curves, differences, regression = benchmark_tables(nominal, frames[STRESS_FILE])
    folder = partition_dir(lake, "benchmark_curves", store=store)
    paths = write_benchmark(folder, curves, differences, regression, store)
    version, artifacts = artifact_version(*paths)
    plots = benchmark_plots(curves, frames[TRACES_FILE], settings.reports_dir, store)
    expected = nominal["policy"].n_unique() * len(cfg.alphas) * 2 * len(EPISODE_METRICS)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(curves, paths[0], **artifacts, missing_policies=str(missing),
                                summary=dg.MetadataValue.md(paths[-1].read_text()), **plots),
    )  # fmt: skip
    yield from curve_checks(curves, differences, cfg.episodes, expected)
