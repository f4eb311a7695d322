"""Evaluation group: every policy evaluated by one protocol, and the benchmark curves per store."""

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    settings_fields,
    table_metadata,
    with_settings,
)
from phantom_assets.assets.partitions import (
    BY_STORE,
    GridPartitions,
    policy_grid,
    store_partitions,
    store_policy_keys,
)
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.evaluation import (
    STRESS_CANDIDATES,
    benchmark_tables,
    evaluate_policies,
    expected_curve_rows,
    load_evaluations,
    plot_metric_vs_alpha,
    plot_price_traces,
    protocol_conformance,
    save_benchmark,
    save_evaluation,
    trace_selection,
)
from phantom_assets.market import MarketSpec
from phantom_assets.policies import SB3_TIERS, PolicyKey, PolicyRecord, load_trained, torch_threads

EVALUATION_CODE = code_version_of(
    "phantom_assets.assets.evaluation",
    "phantom_assets.evaluation",
    "phantom_assets.policies",
    "phantom_assets.market",
)
# The evaluation settings each asset computes with (`gate_candidates` is the audit's alone).
PROTOCOL_FIELDS = ("alphas", "episodes", "test_episodes", "stress_radius", "seed", "test_seed")
BENCHMARK_FIELDS = ("alphas", "episodes")
PLOT_METRICS = ("revenue", "coi_level", "leakage")
PROTOCOL_CHECK = "runs_at_grid_alpha_with_common_and_held_out_seeds"
UNIT_CHECK = "n_equals_episode_seeds"
COMPLETE_CHECK = "every_policy_alpha_metric_present"


def policy_labels(store: str, key: PolicyKey, record: PolicyRecord) -> dict[str, Any]:
    """Columns that identify a policy's rows (`config_hash`: identical policies count once)."""
    return {"store": store, "policy": key.key, "tier": key.tier, "mode": key.mode,
            "train_alpha": key.alpha, "config_hash": record["config_hash"]}  # fmt: skip


def policy_evaluations(context: dg.AssetExecutionContext, storage: StorageResource):
    """One policy evaluated by the protocol: nominal market (no adversary) at every α of the
    evaluation grid, E episodes with seeds shared by every policy (`nominal.parquet`); the worst
    case over α0 ± r (`stress.parquet`); per-step prices of episode 0 (`traces.parquet`)."""
    store, key = store_policy_keys(context)
    settings = storage.settings()
    cfg, lake, training = settings.evaluation, settings.lake, settings.training
    spec = MarketSpec.load(lake.market_dir(store))
    record, policies = load_trained(lake.policy_dir(store, key.key), training.device)
    fixed = key.tier in SB3_TIERS  # only SB3 policies act through torch
    with torch_threads(training.torch_threads) if fixed else contextlib.nullcontext():
        evaluation = evaluate_policies(policies, spec, cfg, policy_labels(store, key, record))
    paths = save_evaluation(lake.evaluation_dir(store, key.key), evaluation)
    version, artifacts = artifact_version(*paths)
    nominal = evaluation.nominal
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
    conformance = protocol_conformance(nominal, evaluation.stress, cfg)
    yield dg.AssetCheckResult(
        check_name=PROTOCOL_CHECK, passed=conformance.holds,
        metadata=dataclasses.asdict(conformance),
    )  # fmt: skip


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


def benchmark_curves(context: dg.AssetExecutionContext, storage: StorageResource):
    """Benchmark of one store: metric vs α per policy with Student-t 95% CIs over episode seeds,
    training seeds averaged first (`curves.parquet`); paired defended − baseline differences
    (`differences.parquet`); revenue-on-α OLS with seed-clustered SEs, cluster count and t CI
    (`regression.json`); a summary and plots."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.evaluation, settings.lake
    folders = {key: lake.evaluation_dir(store, key) for key in policy_grid(settings)}
    evaluation, missing = load_evaluations(folders)
    if missing:
        context.log.warning(f"benchmark of {store} lacks evaluations of {missing}")
    curves, differences, regression = benchmark_tables(evaluation.nominal, evaluation.stress)
    paths = save_benchmark(lake.benchmark_dir(store), store, curves, differences, regression)
    version, artifacts = artifact_version(*paths)
    plots = benchmark_plots(curves, evaluation.traces, settings.reports_dir, store)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(curves, paths[0], **artifacts, missing_policies=str(missing),
                                summary=dg.MetadataValue.md(paths[-1].read_text()), **plots),
    )  # fmt: skip
    expected = expected_curve_rows(evaluation.nominal, len(cfg.alphas))
    yield from curve_checks(curves, differences, cfg.episodes, expected)


def build_evaluation_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`policy_evaluations` (store × policy) and `benchmark_curves` (store), each versioned with
    the evaluation settings it computes with (and the policy grid the benchmark reads)."""
    evaluations = dg.asset(
        partitions_def=grids.store_policy,
        deps=["trained_policies", dg.AssetDep("market_simulators", partition_mapping=BY_STORE)],
        group_name="evaluation",
        kinds={"python", "parquet"},
        code_version=with_settings(
            EVALUATION_CODE,
            settings_fields(settings.evaluation, *PROTOCOL_FIELDS),
            settings_fields(settings.training, "device", "torch_threads"),
        ),
        check_specs=[dg.AssetCheckSpec(PROTOCOL_CHECK, asset="policy_evaluations", blocking=True)],
    )
    curves = dg.asset(
        partitions_def=store_partitions,
        deps=[dg.AssetDep("policy_evaluations", partition_mapping=BY_STORE)],
        group_name="evaluation",
        kinds={"python", "parquet", "matplotlib"},
        code_version=with_settings(
            EVALUATION_CODE,
            settings_fields(settings.evaluation, *BENCHMARK_FIELDS),
            policy_grid(settings),
        ),
        check_specs=[
            dg.AssetCheckSpec(UNIT_CHECK, asset="benchmark_curves", blocking=True),
            dg.AssetCheckSpec(COMPLETE_CHECK, asset="benchmark_curves", blocking=False),
        ],
    )
    return [evaluations(policy_evaluations), curves(benchmark_curves)]
