"""Defense group: pricing policies trained per store × policy key (tier, mode, training α)."""

import contextlib
import logging
from collections.abc import Iterator

import dagster as dg
import polars as pl

from phantom_assets.assets.config_types import config_class
from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import BY_STORE, GridPartitions, store_policy_keys
from phantom_assets.assets.resources import ExperimentTrackingResource, StorageResource
from phantom_assets.config import Settings, TrainingConfig
from phantom_assets.lake import CURVE_FILE, DEFENDED_FILE, REFERENCE_FILE
from phantom_assets.market import EpisodeLaw, MarketSpec, training_law
from phantom_assets.market.response import Response
from phantom_assets.policies import (
    HEURISTIC_MODE,
    RELOAD_PROBES,
    PolicyKey,
    TrainedPolicy,
    TrainingParams,
    has_plateaued,
    mode_market,
    plot_learning_curve,
    reload_mismatches,
    save_trained,
    train_policy,
    wandb_run,
    worst_plateau_ratio,
)
from phantom_assets.policies.tracking import run_location

DEFENSE_CODE = code_version_of(
    "phantom_assets.assets.defense",
    "phantom_assets.policies",
    "phantom_assets.market",
    "phantom_assets.constants",
)
# What one partition trains with (the tiers, training α and ablation tier only shape the grid of
# partitions), and the training law's band, law and K values (`market.training_law`).
TRAINING_READS = (
    "training.timesteps",
    "training.ablation_lam",
    "training.seeds",
    "training.device",
    "training.torch_threads",
    "training.envs",
    "agents.train_alpha_radius",
    "agents.train_law",
    "agents.alpha_grid",
    "agents.k_grid",
    "agents.nominal_k",
    # The robust tiers' ambiguity set (`market.ambiguity`).
    "agents.robust_k_set",
    "agents.robust_alpha_candidates",
    "agents.ambiguity_radius_w1",
)
RELOAD_CHECK = "saved_policy_reloads_identically"
# The oracle's file of the best fixed response each tuned tier plays.
FIXED_RESPONSE_FILES = {"tuned": REFERENCE_FILE, "defended": DEFENDED_FILE}
# The hyperparameters a run's config sets (tiny networks and rollouts for tests and demos).
RUN_TIME_HYPERPARAMETERS = (
    "net_arch",
    "ppo_n_steps",
    "ppo_batch_size",
    "a2c_n_steps",
    "dqn_learning_starts",
    "log_every",
    "linear_warmup_episodes",
)
PROGRESS_LOGGERS = ("phantom_assets.policies",)


class TrainingOverrides(config_class(TrainingParams, fields=RUN_TIME_HYPERPARAMETERS)):
    """Run-time hyperparameters of the tiers (defaults: `TrainingParams`'s); the budget, λ,
    seeds and device are the `[training]` settings."""

    def params(self, config: TrainingConfig) -> TrainingParams:
        """`TrainingParams` of the `[training]` settings with these hyperparameters."""
        return TrainingParams.from_config(config, **self.model_dump())


@contextlib.contextmanager
def forward_progress(context: dg.AssetExecutionContext) -> Iterator[None]:
    """Send the training progress lines of the pure code (INFO) to the run's log."""

    class _ToContext(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            context.log.info(record.getMessage())

    handler, loggers = _ToContext(logging.INFO), [logging.getLogger(n) for n in PROGRESS_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)


def _tracked_training(
    key: PolicyKey,
    spec: MarketSpec,
    params: TrainingParams,
    seed: int,
    store: str,
    tracking: ExperimentTrackingResource,
    fixed_action: int | None,
    law: EpisodeLaw,
) -> tuple[TrainedPolicy, str | None]:
    """`train_policy` inside an optional W&B run (config, live metrics, hyperparameters); returns
    the policy and the run's URL (offline: its run directory), None when untracked. A training
    that raises marks the run failed."""
    mode = None if key.mode == HEURISTIC_MODE else key.mode
    config = {
        "store": store,
        "policy": key.key,
        "tier": key.tier,
        "mode": key.mode,
        "alpha": key.alpha,
        "seed": seed,
        **params.as_dict(),
    }
    init = tracking.init_kwargs() if tracking.enabled else {}
    init.update(name=f"{store}-{key.key}-s{seed}", group=store, job_type="train")
    with wandb_run(
        config, enabled=tracking.enabled, project=tracking.project, api_key=tracking.api_key, **init
    ) as run:
        trained = train_policy(
            key.tier,
            mode,
            spec,
            key.alpha,
            params,
            seed,
            run=run,
            fixed_action=fixed_action,
            law=law,
        )
        if run is None:
            return trained, None
        run.summary["hyperparameters"] = trained.hyperparameters
        return trained, run_location(run)


def trained_policies(
    context: dg.AssetExecutionContext,
    config: TrainingOverrides,
    storage: StorageResource,
    experiment_tracking: ExperimentTrackingResource,
):
    """One pricing policy of a store: its tier, mode (λ × adversary: baseline, robust, and for
    the ablation tier charged, robustcharged) and training α come from the policy key; every
    training episode runs at an (α, K) drawn from the band around that α (`[agents]
    train_alpha_radius`, `train_law`); one model per training seed, with the learning curves,
    hyperparameters and plateau ratios in `policy.json`. The tuned-static tier plays the store's
    best undefended response (the oracle's `reference.json`), tuned-defended its best defended
    fixed action (`defended.json`)."""
    store, key = store_policy_keys(context)
    settings = storage.settings()
    spec = MarketSpec.load(settings.lake.market_dir(store), settings.agents)
    response = FIXED_RESPONSE_FILES.get(key.tier)
    fixed = (
        None
        if response is None
        else Response.read(settings.lake.oracle_dir(store) / response).action
    )
    params = config.params(settings.training)
    law = training_law(settings.agents, key.alpha)
    with forward_progress(context):
        tracked = [
            _tracked_training(key, spec, params, seed, store, experiment_tracking, fixed, law)
            for seed in settings.training.seeds
        ]
    trained = [t for t, _ in tracked]
    runs = {str(t.seed): where for t, where in tracked if where is not None}
    folder = settings.lake.policy_dir(store, key.key)
    identifying, record = save_trained(folder, trained)
    curve = pl.read_parquet(folder / CURVE_FILE)
    version, artifacts = artifact_version(*identifying)
    figure = plot_learning_curve(curve, f"{store} / {key.key}")
    png = settings.reports_dir / "trained_policies" / f"{store}-{key.key}.png"
    robust, lam = mode_market(key.mode, params.ablation_lam)
    plateau = worst_plateau_ratio(record)
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            curve,
            folder / CURVE_FILE,
            **artifacts,
            tier=key.tier,
            mode=key.mode,
            alpha=key.alpha,
            robust=robust,
            lam=lam,
            training_alpha_band=str(law.band),
            training_ks=str(list(law.ks)),
            training_law=law.law,
            seeds=str(record["seeds"]),
            weights_sha256=record["weights_sha256"],
            plateau_ratio=plateau,
            plateaued=has_plateaued(plateau),
            hyperparameters=dg.MetadataValue.json(record["hyperparameters"]),
            final_episode_reward=float(curve["reward"][-1]) if curve.height else None,
            tracked=experiment_tracking.enabled,
            **({"wandb_runs": dg.MetadataValue.json(runs)} if runs else {}),
            learning_curve=figure_markdown(figure, png, f"learning curve {key.key}"),
        ),
    )
    mismatched = reload_mismatches(spec, key.alpha, trained, folder, params.device)
    yield dg.AssetCheckResult(
        check_name=RELOAD_CHECK,
        passed=not mismatched,
        metadata={"probes": RELOAD_PROBES, "mismatched_seeds": str(mismatched)},
    )


def build_defense_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`trained_policies` on the store × policy grid, versioned with its training budget."""
    asset = declared_asset(
        settings=settings,
        code=DEFENSE_CODE,
        reads=TRAINING_READS,
        read_by_some_partitions=["market_oracle"],  # the tuned tiers' best fixed responses
        partitions_def=grids.store_policy,
        deps=[
            dg.AssetDep("market_simulators", partition_mapping=BY_STORE),
            dg.AssetDep("market_oracle", partition_mapping=BY_STORE),
        ],
        group_name="defense",
        kinds={"python", "pytorch", "numpy"},
        check_specs=[
            dg.AssetCheckSpec(
                RELOAD_CHECK,
                asset="trained_policies",
                blocking=True,
                description="Every saved model, loaded back, picks the same actions as the "
                "trained policy on sampled observations.",
            )
        ],
    )
    return [asset(trained_policies)]
