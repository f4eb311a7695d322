"""Market group: the pricing market simulator compiled per store from its class kernels, the COI
erosion curves it implies and its best-fixed-action oracle.

Over the 250-line asset-module budget by a few lines: the oracle's observation check belongs to
the same seeds and (α, K) grid as the oracle, so it lives with it."""

import json
from pathlib import Path

import dagster as dg
import gymnasium as gym
import numpy as np
import polars as pl

from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import BY_STORE, GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import AgentsConfig, Settings
from phantom_assets.constants import ACTORS, STORES
from phantom_assets.detector.classifier import classifiers_from_dict
from phantom_assets.detector.evasion import EVASION_STREAM
from phantom_assets.detector.market_terms import quote_terms
from phantom_assets.fingerprint import load_kernel_set, load_score_calibration
from phantom_assets.lake import (
    CLASSIFIER_FILE,
    DEFENDED_FILE,
    EROSION_FILE,
    EROSION_METRICS_FILE,
    EROSION_PLOT_FILE,
    LEDGER_FILE,
    LEDGER_PLOT_FILE,
    OBSERVATION_FILE,
    ORACLE_FILE,
    QUOTE_SCORES_FILE,
    REFERENCE_FILE,
)
from phantom_assets.market import (
    MarketSpec,
    PricingMarketEnv,
    action_box,
    alpha_half_width,
    best_fixed_responses,
    centre_on_optima,
    chain_banks,
    compile_market_spec,
    engagement_w1,
    erosion,
    market_oracle,
    oracle,
    plot_coi_erosion,
    prefix_auc,
    spec_markdown,
    store_session_banks,
)
from phantom_assets.market import observation as observed
from phantom_assets.market.compile import BANK_STREAM
from phantom_assets.market.demand import read_store_demand
from phantom_assets.market.ledger import agent_ledger, ledger_markdown
from phantom_assets.market.plots import plot_ledger
from phantom_assets.market.prices import read_store_prices
from phantom_assets.market.spec import swept_thetas
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

MARKET_CODE = code_version_of(
    "phantom_assets.assets.market",
    "phantom_assets.market",
    "phantom_assets.contamination",
    "phantom_assets.constants",
)
ENV_CHECK = "env_passes_check_env"
CHECK_ENV_ALPHA = 0.5  # nominal α of the env that the check builds (robust mode: every code path)
EROSION_CHECK = "coi_a_erodes_with_k"
ORACLE_CHECK = "oracle_profit_at_least_undefended"
ORACLE_EDGE_CHECK = "best_actions_inside_the_action_box"
OBSERVATION_CHECK = "observed_shopper_share_tells_low_from_high_alpha"
# The settings each asset computes with (the selection seeds are evaluation `seed`, `episodes`).
SELECTION_SEEDS = ("evaluation.seed", "evaluation.episodes")
MARKET_READS = (
    "market",
    "agents.nominal_k",
    "agents.robust_k_set",
    "agents.robust_alpha_candidates",
    "agents.ambiguity_radius_w1",
    "agents.alpha_grid",
    "agents.stress_radius",
    "agents.evasion_thetas",
    *SELECTION_SEEDS,
)
EROSION_READS = (
    "agents.alpha_grid",
    "agents.erosion_k_grid",
    "agents.nominal_k",
    *SELECTION_SEEDS,
)
ORACLE_READS = (
    "agents.alpha_grid",
    "agents.evasion_thetas",  # the ledger's rows of adapting agents
    "agents.k_grid",
    "agents.nominal_k",
    "agents.stress_radius",
    *SELECTION_SEEDS,
    "evaluation.test_seed",  # the ledger's held-out seeds
    "evaluation.test_episodes",
)


def market_simulators(context: dg.AssetExecutionContext, storage: StorageResource):
    """The store's market (`spec.npz` arrays + `spec.json` scalars): its products, anchors,
    markup curve and quote noise from its price logs (`store_prices`), its demand from its
    purchase decisions (`store_demand`: what shoppers pay given their engagement, the share in
    the market; revealed preference where the logs do not identify it), its labelled sessions as
    the shoppers with their engagement at the quote and out-of-fold prefix f (or chains sampled
    from its kernels, `[market] bank = "kernel"`) and the replicates of its sample each episode
    draws from, the declared cost, cap and agents' valuation law, the robust (α, K) ambiguity set
    and an action grid centred on the best undefended response and the best defended action
    (refined on the continuous action space on the selection seeds); every term with its source.
    The prefix AUC of the store's sessions (out of fold) and of a kernel bank (in model) is
    reported."""
    store, settings = context.partition_key, storage.settings()
    lake, anchor_seed = settings.lake, STORES.index(store)
    kernels = [load_kernel_set(lake, store, actor) for actor in ACTORS]
    full = (kernels[0].full.probs, kernels[1].full.probs)
    f_coef = tuple(load_score_calibration(lake, store).linear_coef)  # the f the store selected
    prices = read_store_prices(lake.store_prices_dir(store))
    frames = tuple(pl.read_parquet(lake.labeled_sessions(store, actor)) for actor in ACTORS)
    kernel_banks = store_session_banks(  # scored by the kernel-only f
        frames,
        full,
        tuple([fold.probs for fold in k.folds] for k in kernels),
        f_coef,
        prices.signal,
    )
    classifiers = json.loads((lake.quote_detector_dir(store) / CLASSIFIER_FILE).read_text())
    terms = quote_terms(
        kernel_banks,
        frames,
        pl.read_parquet(lake.quote_detector_dir(store) / QUOTE_SCORES_FILE),
        settings.market.detector,
        classifiers_from_dict(classifiers)[1],
        f_coef,
        swept_thetas(settings.agents),
        np.random.default_rng(anchor_seed + EVASION_STREAM),
    )
    sessions = terms.banks
    experiments = tuple(
        frame.select(pl.col("experiment_id").fill_null(pl.col("session_id"))).to_series().to_list()
        for frame in frames
    )
    demand = read_store_demand(lake.demand_dir(store))
    compiled = compile_market_spec(
        *full,
        settings.market,
        anchor_seed,
        f_coef,
        settings.agents,
        prices,
        sessions,
        demand,
        experiments,
        (kernel_banks[0].score, kernel_banks[1].score),
        **(terms.overrides if settings.market.bank == "empirical" else {}),
    )
    spec, optima = centre_on_optima(
        compiled,
        settings.agents.alpha_grid,
        settings.agents.stress_radius,
        settings.evaluation.selection_seeds,
    )
    sampled = chain_banks(
        *full, settings.market.chain_bank_size, anchor_seed + BANK_STREAM, f_coef, prices.signal
    )
    auc = {
        "empirical": prefix_auc(*sessions),
        "empirical_kernel_only": prefix_auc(*kernel_banks),
        "kernel": prefix_auc(*sampled),
    }
    folder = lake.market_dir(store)
    version, artifacts = artifact_version(*spec.save(folder))
    half_width, w1 = alpha_half_width(spec), engagement_w1(*spec.banks)
    yield dg.MaterializeResult(
        data_version=version,
        metadata={
            "path": dg.MetadataValue.path(str(folder)),
            **artifacts,
            "alpha_half_width": half_width,
            "f_coef": str(f_coef),
            "w1_engagement": w1,
            "prefix_auc_empirical": auc["empirical"],
            "prefix_auc_kernel": auc["kernel"],
            "bank": spec.bank,
            "detector": spec.detector,
            "detector_threshold": spec.detector_threshold,
            "kernel_detector_threshold": spec.kernel_detector_threshold,
            "prices_source": prices.source,
            "demand_source": demand.source,
            "replicates": spec.replicates,
            "n_products": spec.n_products,
            "n_actions": spec.n_actions,
            **{
                f"best_{family}_action": str(tuple(round(x, 4) for x in optimum.action))
                for family, optimum in optima.items()
            },
            "best_response_rounds": str({f: o.rounds for f, o in optima.items()}),
            "spec": dg.MetadataValue.md(spec_markdown(spec, half_width, w1, auc)),
        },
    )
    yield env_check_result(folder, settings.agents)


def coi_erosion(context: dg.AssetExecutionContext, storage: StorageResource):
    """COI erosion of one store: COI by class (`coi_erosion.parquet`: alpha, k, class, coi, CI, n)
    and every erosion metric (`erosion_metrics.parquet`: COI_H, COI_A, COI, prices paid,
    purchases by class, leak) of the undefended engine (δ = 0) and its most defended variant, per
    α of the α grid and K of the erosion K grid (and the nominal K), means with Student-t 95%
    CIs over the selection episode seeds (common random numbers); the thesis' figure."""
    store, settings = context.partition_key, storage.settings()
    cfg, agents, folder = settings.evaluation, settings.agents, settings.lake.erosion_dir(store)
    spec = MarketSpec.load(settings.lake.market_dir(store), settings.agents)
    ks = sorted({*agents.erosion_k_grid, agents.nominal_k})
    table = erosion.coi_erosion(spec, agents.alpha_grid, ks, cfg.selection_seeds)
    by_class = erosion.coi_by_class(table)
    paths = (folder / EROSION_FILE, folder / EROSION_METRICS_FILE)
    for frame, path in zip((by_class, table), paths, strict=True):
        write_parquet_atomic(frame, path)
    version, artifacts = artifact_version(*paths)
    figure = plot_coi_erosion(table, erosion.closed_form_coi_a(spec, ks))
    by_k = erosion.agent_coi_by_k(table)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            by_class,
            paths[0],
            **artifacts,
            seeds=str(list(cfg.selection_seeds)),
            coi_a_share=erosion.coi_a_share(table, agents.nominal_k),
            nominal_k=agents.nominal_k,
            ks=str(ks),
            ci_method=erosion.CI_METHOD,
            plot=figure_markdown(figure, folder / EROSION_PLOT_FILE, "COI erosion"),
        ),
    )
    yield dg.AssetCheckResult(
        check_name=EROSION_CHECK,
        passed=bool(by_k["mean"][-1] <= by_k["mean"][0]),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={f"coi_a_k{k}": mean for k, mean in zip(by_k["k"], by_k["mean"], strict=True)},
    )


def market_oracle_asset(context: dg.AssetExecutionContext, storage: StorageResource):
    """Best fixed action per (α, K) of one store's market (`oracle.parquet`): refined on the
    continuous action space with common random numbers over the selection episode seeds, its mean
    episode profit with its SE, and the undefended engine's profit on the same draws: the bound
    every policy's regret is measured against. The agent ledger (`ledger.parquet`, plot): per
    (α, K) what engagement pricing is worth, what agents take, what a perfect and the fitted
    detector win back and what that costs humans, with store-sample intervals on the held-out
    seeds. Also the best undefended response (`reference.json`: the δ = 0 grid action with the
    best stress objective, the tuned-static tier and the gate's baseline; human harm is measured
    against it) and the best defended fixed action by the same objective (`defended.json`: the
    tuned-defended tier, the simplest candidate a defence has), and how well the observed agent
    shares track α (`observation.parquet`: error vs
    α per (α, K); one-step separation of α ≤ 0.2 from α ≥ 0.5 with K unknown)."""
    store, settings = context.partition_key, storage.settings()
    cfg, agents = settings.evaluation, settings.agents
    folder = settings.lake.oracle_dir(store)
    spec = MarketSpec.load(settings.lake.market_dir(store), settings.agents)
    table = market_oracle(spec, agents.alpha_grid, agents.k_grid, cfg.selection_seeds)
    response, defended = best_fixed_responses(
        spec, agents.alpha_grid, agents.stress_radius, agents.nominal_k, cfg.selection_seeds
    )
    report = observed.observation_report(spec, agents.k_grid, cfg.selection_seeds)
    ledger = agent_ledger(
        spec, agents.alpha_grid, agents.k_grid, cfg.selection_seeds, cfg.test_seeds
    )
    names = (ORACLE_FILE, REFERENCE_FILE, DEFENDED_FILE, OBSERVATION_FILE, LEDGER_FILE)
    paths = [folder / name for name in names]
    write_parquet_atomic(table, paths[0])
    write_json_atomic(response.to_dict(), paths[1])
    write_json_atomic(None if defended is None else defended.to_dict(), paths[2])
    write_parquet_atomic(report.accuracy, paths[3])
    write_parquet_atomic(ledger, paths[4])
    figure = plot_ledger(ledger, agents.nominal_k, store)
    plot = figure_markdown(figure, folder / LEDGER_PLOT_FILE, f"agent ledger ({store})")
    version, artifacts = artifact_version(*paths)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            table,
            folder / ORACLE_FILE,
            **artifacts,
            seeds=str(list(cfg.selection_seeds)),
            test_seeds=str(list(cfg.test_seeds)),
            best_undefended=str(spec.action_values(response.action)),
            best_undefended_objective=response.objective,
            best_defended=str(None if defended is None else spec.action_values(defended.action)),
            best_actions=dg.MetadataValue.md(oracle.oracle_markdown(table)),
            ledger=dg.MetadataValue.md(ledger_markdown(ledger, agents.nominal_k)),
            ledger_plot=plot,
            observation=dg.MetadataValue.md(report.markdown()),
        ),
    )
    shortfall = float((table["undefended_profit"] - table["profit"]).max())
    yield dg.AssetCheckResult(
        check_name=ORACLE_CHECK,
        passed=shortfall <= 0.0,
        metadata={"max_undefended_minus_oracle": shortfall},
    )
    edges = table.filter(pl.col("on_edge"))
    yield dg.AssetCheckResult(
        check_name=ORACLE_EDGE_CHECK,
        passed=edges.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "cells_on_the_action_box_edge": str(
                edges.select("alpha", "k", "level", "markup", "delta").rows()
            ),
            "box": str(action_box(spec)),
        },
    )
    errors = {f"{name}_one_step_error_k_unknown": report.error(name) for name in observed.ESTIMATES}
    yield dg.AssetCheckResult(
        check_name=OBSERVATION_CHECK,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=errors,
        passed=report.error("shopper_alpha_hat") <= observed.SEPARATION_TOLERANCE,
    )


def build_market_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`market_simulators`, versioned with the market settings it compiles; `coi_erosion` and
    `market_oracle` on it, versioned with the evaluation settings they read (the market too:
    its action grid is centred on the best responses on the selection seeds)."""
    asset = declared_asset(
        settings=settings,
        code=MARKET_CODE,
        reads=MARKET_READS,
        partitions_def=store_partitions,
        deps=[
            dg.AssetDep("transition_kernels", partition_mapping=BY_STORE),
            dg.AssetDep("labeled_sessions", partition_mapping=BY_STORE),
            "divergence_scores",
            "quote_detector",
            "store_prices",
            "store_demand",
        ],
        group_name="market",
        kinds={"python", "numpy", "gymnasium"},
        check_specs=[
            dg.AssetCheckSpec(
                ENV_CHECK,
                asset="market_simulators",
                blocking=True,
                description="The env built from the saved spec passes gymnasium's check_env.",
            )
        ],
    )
    benchmarks = [
        (
            "coi_erosion",
            coi_erosion,
            EROSION_READS,
            {"matplotlib"},
            [
                dg.AssetCheckSpec(
                    EROSION_CHECK,
                    asset="coi_erosion",
                    blocking=False,
                    description="COI_A at the largest K <= at the smallest (α max).",
                ),
            ],
        ),
        (
            "market_oracle",
            market_oracle_asset,
            ORACLE_READS,
            {"matplotlib"},
            [
                dg.AssetCheckSpec(
                    ORACLE_CHECK,
                    asset="market_oracle",
                    blocking=True,
                    description="The oracle is not below the undefended engine.",
                ),
                dg.AssetCheckSpec(
                    ORACLE_EDGE_CHECK,
                    asset="market_oracle",
                    blocking=False,
                    description="No best fixed action (refined on the continuous "
                    "action space) sits on the edge of the action box.",
                ),
                dg.AssetCheckSpec(
                    OBSERVATION_CHECK,
                    asset="market_oracle",
                    blocking=False,
                    description="One step of the observed shopper α̂ tells α ≤ 0.2 "
                    "from α ≥ 0.5 with K unknown.",
                ),
            ],
        ),
    ]
    return [asset(market_simulators)] + [
        declared_asset(
            settings=settings,
            code=MARKET_CODE,
            reads=reads,
            name=name,
            partitions_def=store_partitions,
            deps=["market_simulators"],
            group_name="market",
            kinds={"python", "parquet", *kinds},
            check_specs=checks,
        )(body)
        for name, body, reads, kinds, checks in benchmarks
    ]


def env_check_result(folder: Path, agents: AgentsConfig) -> dg.AssetCheckResult:
    """Run gymnasium's `check_env` on a robust env built from the spec saved in `folder`."""
    from gymnasium.utils.env_checker import check_env

    env = PricingMarketEnv(MarketSpec.load(folder, agents), CHECK_ENV_ALPHA, robust=True)
    try:
        check_env(env, skip_render_check=True)
    except (AssertionError, gym.error.Error) as error:
        return dg.AssetCheckResult(
            check_name=ENV_CHECK,
            passed=False,
            metadata={"error": f"{type(error).__name__}: {error}"},
        )
    finally:
        env.close()
    return dg.AssetCheckResult(
        check_name=ENV_CHECK, passed=True, metadata={"alpha": CHECK_ENV_ALPHA}
    )
