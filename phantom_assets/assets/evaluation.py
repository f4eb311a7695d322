"""Evaluation group: every policy evaluated by one protocol, and the benchmark curves per store."""

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
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
    DETECTOR_VALUE,
    FITTED,
    BenchmarkTables,
    benchmark_tables,
    evaluate_policies,
    expected_curve_rows,
    load_evaluations,
    plot_actions_vs_alpha_hat,
    plot_metric_vs_alpha,
    protocol_conformance,
    save_benchmark,
    save_evaluation,
)
from phantom_assets.lake import ORACLE_FILE, REFERENCE_FILE
from phantom_assets.market import MarketSpec
from phantom_assets.market.response import Response
from phantom_assets.policies import SB3_TIERS, PolicyKey, PolicyRecord, load_trained, torch_threads

EVALUATION_CODE = code_version_of(
    "phantom_assets.assets.evaluation",
    "phantom_assets.evaluation",
    "phantom_assets.policies",
    "phantom_assets.market",
)
# The evaluation settings each asset computes with (the gate's fields are the audit's alone).
PROTOCOL_READS = (
    "evaluation.episodes",
    "evaluation.test_episodes",
    "evaluation.seed",
    "evaluation.test_seed",
    "agents.alpha_grid",
    "agents.k_grid",
    "agents.stress_radius",
    "agents.evasion_thetas",
    "agents.evasion_band",
    "agents.nominal_k",
    "training.device",
    "training.torch_threads",
)
# The policy grid the curves read: tiers, training α and the ablation tier (`policy_grid`).
BENCHMARK_READS = (
    "evaluation.episodes",
    "agents.alpha_grid",
    "agents.k_grid",
    "agents.train_alphas",
    "training.tiers",
    "training.ablation_tier",
)
PLOT_METRICS = ("profit", "coi_a", "leak", "human_harm")
PROTOCOL_CHECK = "runs_the_alpha_k_detector_grid_with_common_and_held_out_seeds"
UNIT_CHECK = "n_equals_episode_seeds"
COMPLETE_CHECK = "every_policy_alpha_k_detector_metric_present"


def policy_labels(store: str, key: PolicyKey, record: PolicyRecord) -> dict[str, Any]:
    """Columns that identify a policy's rows (`config_hash`: identical policies count once)."""
    return {
        "store": store,
        "policy": key.key,
        "tier": key.tier,
        "mode": key.mode,
        "train_alpha": key.alpha,
        "config_hash": record["config_hash"],
    }


def policy_evaluations(context: dg.AssetExecutionContext, storage: StorageResource):
    """One policy evaluated by the protocol: nominal market (no adversary) at every (α, K) of the
    evaluation grid with the fitted detector and the permuted-f ablation, E episodes with seeds
    shared by every policy (`nominal.parquet`); the stress band, α0 ± r × agents adapting to the
    detector with the evasion shares θ of the declared band, at the nominal K
    (`stress.parquet`); per-step actions and observed agent shares of the fitted episodes
    (`traces.parquet`), and the chosen action against the observed shopper α̂ (plot)."""
    store, key = store_policy_keys(context)
    settings = storage.settings()
    cfg, agents, lake, training = (
        settings.evaluation,
        settings.agents,
        settings.lake,
        settings.training,
    )
    spec = MarketSpec.load(lake.market_dir(store), agents)
    reference = Response.read(lake.oracle_dir(store) / REFERENCE_FILE).action
    record, policies = load_trained(lake.policy_dir(store, key.key), training.device)
    fixed = key.tier in SB3_TIERS  # only SB3 policies act through torch
    started = time.perf_counter()  # wall time is reported, never used to compute
    with torch_threads(training.torch_threads) if fixed else contextlib.nullcontext():
        evaluation = evaluate_policies(
            policies, spec, cfg, agents, policy_labels(store, key, record), reference
        )
    seconds = time.perf_counter() - started
    paths = save_evaluation(lake.evaluation_dir(store, key.key), evaluation)
    version, artifacts = artifact_version(*paths)
    nominal = evaluation.nominal
    profit = (
        nominal.filter(pl.col("detector") == FITTED)
        .group_by("alpha", "k")
        .agg(pl.col("profit").mean())
        .sort("alpha", "k")
    )
    context.log.info(f"evaluated {key.key} of {store} in {seconds:.1f} s")
    png = settings.reports_dir / "policy_evaluations" / f"{store}-{key.key}-actions.png"
    actions = figure_markdown(plot_actions_vs_alpha_hat(nominal), png, f"action vs α̂ {key.key}")
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            nominal,
            paths[0],
            **artifacts,
            actions_vs_alpha_hat=actions,
            alpha_grid=str(list(agents.alpha_grid)),
            k_grid=str(list(agents.k_grid)),
            episodes=cfg.episodes,
            selection_seeds=str(list(cfg.selection_seeds)),
            test_seeds=str(list(cfg.test_seeds)),
            stress_radius=agents.stress_radius,
            evasion_band_thetas=str(list(spec.evasion_band_thetas)),
            nominal_k=agents.nominal_k,
            evaluation_seconds=round(seconds, 2),
            mean_fitted_profit_by_alpha_k=str([tuple(r) for r in profit.rows()]),
        ),
    )
    conformance = protocol_conformance(
        nominal, evaluation.stress, cfg, agents, agents.nominal_k, spec.evasion_band_thetas
    )
    yield dg.AssetCheckResult(
        check_name=PROTOCOL_CHECK,
        passed=conformance.holds,
        metadata=dataclasses.asdict(conformance),
    )


def benchmark_plots(
    tables: BenchmarkTables, nominal: pl.DataFrame, reports: Path, store: str
) -> dict[str, dg.MetadataValue]:
    """Fitted-detector profit, COI_A, leak, human harm and detector value vs α (a panel per K),
    and the chosen action vs α̂, saved under `reports/` as PNG."""
    folder = reports / "benchmark_curves"
    curves = tables.curves.filter(pl.col("detector") == FITTED)
    rows = {m: curves.filter(pl.col("metric") == m) for m in PLOT_METRICS}
    rows["detector_value"] = tables.differences.filter(
        (pl.col("comparison") == DETECTOR_VALUE) & (pl.col("metric") == "profit")
    ).join(curves.select("policy", "mode").unique(), on="policy", how="left")
    figures = {
        name: (plot_metric_vs_alpha(frame, name), f"{name} vs α") for name, frame in rows.items()
    }
    figures["actions_vs_alpha_hat"] = (plot_actions_vs_alpha_hat(nominal), "action vs α̂")
    return {
        f"plot_{name}": figure_markdown(fig, folder / f"{store}-{name}.png", title)
        for name, (fig, title) in figures.items()
    }


def curve_checks(
    tables: BenchmarkTables, episodes: int, expected: int
) -> list[dg.AssetCheckResult]:
    """Every curve, paired-difference and factorial row rests on exactly `episodes` independent
    episode seeds (training seeds averaged within a seed: a cross-join or a seed left out fails
    it); every policy × α × K × detector × metric has a curve row."""
    frames = {
        "curves": tables.curves,
        "differences": tables.differences,
        "ablation": tables.ablation,
    }
    wrong_n = {name: frame.filter(pl.col("n") != episodes).height for name, frame in frames.items()}
    return [
        dg.AssetCheckResult(
            check_name=UNIT_CHECK,
            passed=not any(wrong_n.values()),
            metadata={
                "episode_seeds": episodes,
                **{f"{k}_rows_with_other_n": v for k, v in wrong_n.items()},
            },
        ),
        dg.AssetCheckResult(
            check_name=COMPLETE_CHECK,
            passed=tables.curves.height == expected,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"rows": tables.curves.height, "expected": expected},
        ),
    ]


def benchmark_curves(context: dg.AssetExecutionContext, storage: StorageResource):
    """Benchmark of one store: every metric vs (α, K) per policy and detector with Student-t 95%
    CIs over episode seeds, training seeds averaged first (`curves.parquet`); paired detector
    value, defended − baseline, vs-tuned-static and vs-static differences
    (`differences.parquet`); revenue-on-α OLS with seed-clustered SEs (`regression.json`);
    regret vs the oracle with CIs (`regret.parquet`); the λ × adversary factorial of the ablation
    tier (`ablation.parquet`); how much each policy's action varies with the observed agent share
    and what that earns over its own best fixed action (`adaptivity.parquet`); a summary and
    plots."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.evaluation, settings.lake
    folders = {key: lake.evaluation_dir(store, key) for key in policy_grid(settings)}
    evaluation, missing = load_evaluations(folders)
    if missing:
        context.log.warning(f"benchmark of {store} lacks evaluations of {missing}")
    oracle = pl.read_parquet(lake.oracle_dir(store) / ORACLE_FILE)
    spec = MarketSpec.load(lake.market_dir(store), settings.agents)
    tables = benchmark_tables(evaluation, oracle, spec, settings.training.ablation_tier)
    paths = save_benchmark(lake.benchmark_dir(store), store, tables)
    version, artifacts = artifact_version(*paths)
    plots = benchmark_plots(tables, evaluation.nominal, settings.reports_dir, store)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            tables.curves,
            paths[0],
            **artifacts,
            missing_policies=str(missing),
            summary=dg.MetadataValue.md(paths[-1].read_text()),
            **plots,
        ),
    )
    policies = evaluation.nominal["policy"].n_unique()
    agents = settings.agents
    expected = expected_curve_rows(policies, len(agents.alpha_grid), len(agents.k_grid))
    yield from curve_checks(tables, cfg.episodes, expected)


def build_evaluation_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`policy_evaluations` (store × policy) and `benchmark_curves` (store), each versioned with
    the evaluation settings it computes with (and the policy grid the benchmark reads)."""
    evaluations = declared_asset(
        settings=settings,
        code=EVALUATION_CODE,
        reads=PROTOCOL_READS,
        partitions_def=grids.store_policy,
        deps=[
            "trained_policies",
            dg.AssetDep("market_simulators", partition_mapping=BY_STORE),
            dg.AssetDep("market_oracle", partition_mapping=BY_STORE),
        ],
        group_name="evaluation",
        kinds={"python", "parquet"},
        check_specs=[
            dg.AssetCheckSpec(
                PROTOCOL_CHECK,
                asset="policy_evaluations",
                blocking=True,
                description="Every training seed ran every (α, K) of the grid with both detectors "
                "(fitted and permuted f) on exactly the selection episode seeds, and the stress "
                "band of every α0 at the nominal K on the selection and the disjoint held-out "
                "seeds, each seed once.",
            )
        ],
    )
    curves = declared_asset(
        settings=settings,
        code=EVALUATION_CODE,
        reads=BENCHMARK_READS,
        partitions_def=store_partitions,
        # market_oracle and market_simulators are partitioned by store like this asset: the
        # identity mapping.
        deps=[
            dg.AssetDep("policy_evaluations", partition_mapping=BY_STORE),
            "market_oracle",
            "market_simulators",
        ],
        group_name="evaluation",
        kinds={"python", "parquet", "matplotlib"},
        check_specs=[
            dg.AssetCheckSpec(
                UNIT_CHECK,
                asset="benchmark_curves",
                blocking=True,
                description="Every curve, paired difference and factorial row rests on exactly "
                "the configured episode seeds (training seeds averaged within a seed first: a "
                "cross-join of training seeds, or a seed left out, fails it).",
            ),
            dg.AssetCheckSpec(
                COMPLETE_CHECK,
                asset="benchmark_curves",
                blocking=False,
                description="Every policy × α × K × detector × metric of the grid has a curve row "
                "(warns when a policy's evaluation is missing).",
            ),
        ],
    )
    return [evaluations(policy_evaluations), curves(benchmark_curves)]
