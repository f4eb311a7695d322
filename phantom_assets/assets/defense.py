"""Defense group: pricing policies trained per store × policy key (tier, mode, training α).

Over the 250-line guide for asset modules: `plot_learning_curve`, `policy_weights` and
`weights_digest` would sit better in `phantom_assets.policies`.
"""

import contextlib
import hashlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
import numpy as np
import polars as pl

from orchestration.resources import ExperimentTrackingResource, StorageResource
from phantom_assets.assets.fingerprint import BY_STORE
from phantom_assets.assets.market import market_dir
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    figure_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import store_policy_keys, store_policy_partitions
from phantom_assets.config import TrainingConfig
from phantom_assets.market import MarketSpec, make_env
from phantom_assets.policies import (
    HEURISTIC_MODE,
    POLICY_FILENAMES,
    SB3_TIERS,
    Policy,
    PolicyKey,
    QTablePolicy,
    TrainedPolicy,
    TrainingParams,
    load_policy,
    train_policy,
    wandb_run,
)
from phantom_assets.policies.tracking import run_location
from phantom_assets.storage import (
    partition_dir,
    write_bytes_atomic,
    write_json_atomic,
    write_parquet_atomic,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFENSE_CODE_VERSION = code_version_of(
    "phantom_assets.assets.defense",
    "phantom_assets.policies",
    "phantom_assets.market",
    "phantom_assets.constants",
)
POLICY_FILE, CURVE_FILE, WEIGHTS_FILE = "policy.json", "learning_curve.parquet", "weights.npz"
RELOAD_CHECK = "saved_policy_reloads_identically"
RELOAD_PROBES = 64  # observations on which the reloaded policy must act like the trained one
PROGRESS_LOGGERS = ("phantom_assets.policies",)


class TrainingOverrides(dg.Config):
    """Run-time overrides of the tiers' hyperparameters (unset: the profile's defaults)."""

    net_arch: list[int] | None = None
    ppo_n_steps: int | None = None
    ppo_batch_size: int | None = None
    a2c_n_steps: int | None = None
    dqn_learning_starts: int | None = None
    log_every: int | None = None
    linear_warmup_episodes: int | None = None

    def params(self, config: TrainingConfig) -> TrainingParams:
        """`TrainingParams` of the `[training]` settings with the overrides that are set."""
        overrides = {k: v for k, v in self.model_dump().items() if v is not None}
        return TrainingParams.from_config(config, **overrides)


def policy_dir(lake: Path, store: str, key: str) -> Path:
    """Folder of one trained policy: `lake/trained_policies/store=S/policy=K/`."""
    return partition_dir(lake, "trained_policies", store=store, policy=key)


def model_file(tier: str, seed: int) -> str:
    """Name of the saved model of one training seed: `model-s<seed>` + the tier's suffix.

    (`policy.json` is the training record, so a heuristic's own JSON is saved beside it.)
    """
    return f"model-s{seed}{Path(POLICY_FILENAMES[tier]).suffix}"


def policy_weights(policy: Policy) -> dict[str, np.ndarray]:
    """The learned numbers of a policy (network weights, Q-table; empty for heuristics)."""
    if isinstance(policy, QTablePolicy):
        return {"q": np.asarray(policy.q)}
    parameters = getattr(policy, "parameters", None)
    return parameters() if callable(parameters) else {}


def weights_digest(weights: dict[str, np.ndarray]) -> str:
    """SHA-256 over names, dtypes, shapes and bytes of the weights (order-independent)."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        array = np.ascontiguousarray(weights[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def plot_learning_curve(curve: pl.DataFrame, title: str) -> "Figure":
    """Episode reward against training timesteps, one line per training seed."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3.5), layout="constrained")
    ax = fig.add_subplot()
    for (seed,), part in curve.sort("train_seed", "timesteps").group_by(
        "train_seed", maintain_order=True
    ):
        ax.plot(part["timesteps"].to_numpy(), part["reward"].to_numpy(), label=f"seed {seed}")
    ax.set_xlabel("training timesteps")
    ax.set_ylabel("episode reward (unscaled)")
    ax.set_title(title)
    if curve.height:
        ax.legend(fontsize=7)
    return fig


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
    key: PolicyKey, spec: MarketSpec, params: TrainingParams, seed: int, store: str,
    tracking: ExperimentTrackingResource,
) -> tuple[TrainedPolicy, str | None]:  # fmt: skip
    """`train_policy` inside an optional W&B run (config, live metrics, hyperparameters); returns
    the policy and the run's URL (offline: its run directory), None when untracked. A training
    that raises marks the run failed."""
    mode = None if key.mode == HEURISTIC_MODE else key.mode
    config = {"store": store, "policy": key.key, "tier": key.tier, "mode": key.mode,
              "alpha": key.alpha, "seed": seed, **params.as_dict()}  # fmt: skip
    init = tracking.init_kwargs() if tracking.enabled else {}
    init.update(name=f"{store}-{key.key}-s{seed}", group=store, job_type="train")
    with wandb_run(config, enabled=tracking.enabled, project=tracking.project,
                   api_key=tracking.api_key, **init) as run:  # fmt: skip
        trained = train_policy(key.tier, mode, spec, key.alpha, params, seed, run=run)
        if run is None:
            return trained, None
        run.summary["hyperparameters"] = trained.hyperparameters
        return trained, run_location(run)


def save_trained(folder: Path, trained: list[TrainedPolicy]) -> tuple[list[Path], dict[str, Any]]:
    """Write every seed's model, the canonical weights, the curves and `policy.json`.

    SB3 zips embed wall-clock times, so the data version hashes `weights.npz` (the network
    weights, byte-reproducible) and not the zip; every other model file is hashed as written.
    """
    first = trained[0]
    weights = {f"s{t.seed}/{name}": array for t in trained
               for name, array in policy_weights(t.policy).items()}  # fmt: skip
    record = {"tier": first.tier, "mode": first.mode, "alpha": first.alpha,
              "seed": first.seed, "seeds": [t.seed for t in trained],
              "hyperparameters": first.hyperparameters,
              "models": {str(t.seed): model_file(t.tier, t.seed) for t in trained},
              "weights_sha256": weights_digest(weights)}  # fmt: skip
    # Identity of the configuration, not of the key: the same policy under two keys counts once.
    identity = {k: record[k] for k in ("tier", "hyperparameters", "seeds", "weights_sha256")}
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    record["config_hash"] = hashlib.sha256(blob).hexdigest()[:16]
    models = [t.policy.save(folder / model_file(t.tier, t.seed)) for t in trained]
    curve = pl.concat(
        [t.learning_curve.with_columns(train_seed=pl.lit(t.seed, pl.Int64)) for t in trained]
    )
    write_parquet_atomic(curve, folder / CURVE_FILE)
    write_json_atomic(record, folder / POLICY_FILE)
    hashed = [folder / POLICY_FILE, folder / CURVE_FILE]
    if first.tier in SB3_TIERS:
        buffer = io.BytesIO()  # np.savez writes fixed zip timestamps: reproducible bytes
        np.savez(buffer, **{k.replace("/", "__"): v for k, v in sorted(weights.items())})
        write_bytes_atomic(buffer.getvalue(), folder / WEIGHTS_FILE)
        hashed.append(folder / WEIGHTS_FILE)
    else:
        hashed.extend(models)
    return hashed, record


def load_trained(folder: Path, device: str = "cpu") -> tuple[dict[str, Any], dict[int, Policy]]:
    """`policy.json` of a trained partition and its policies by training seed."""
    record = json.loads((folder / POLICY_FILE).read_text())
    policies = {int(seed): load_policy(record["tier"], folder / name, device=device)
                for seed, name in record["models"].items()}  # fmt: skip
    return record, policies


def reload_check(
    spec: MarketSpec, alpha: float, trained: list[TrainedPolicy], folder: Path, device: str
) -> dg.AssetCheckResult:
    """The saved models, reloaded, act exactly like the trained ones on sampled observations."""
    space = make_env(spec, alpha, robust=False).observation_space
    space.seed(0)
    probes = [space.sample() for _ in range(RELOAD_PROBES)]
    _, loaded = load_trained(folder, device)
    mismatched = []
    for t in trained:  # a handful of seeds
        t.policy.reset()
        loaded[t.seed].reset()
        if [t.policy.act(o) for o in probes] != [loaded[t.seed].act(o) for o in probes]:
            mismatched.append(t.seed)
    return dg.AssetCheckResult(
        check_name=RELOAD_CHECK, passed=not mismatched,
        metadata={"probes": RELOAD_PROBES, "mismatched_seeds": str(mismatched)},
    )  # fmt: skip


@dg.asset(
    partitions_def=store_policy_partitions,
    deps=[dg.AssetDep("market_simulators", partition_mapping=BY_STORE)],
    group_name="defense",
    kinds={"python", "pytorch", "numpy"},
    code_version=DEFENSE_CODE_VERSION,
    check_specs=[
        dg.AssetCheckSpec(
            RELOAD_CHECK,
            asset="trained_policies",
            blocking=True,
            description="Every saved model, loaded back, picks the same actions as the trained "
            "policy on sampled observations.",
        )
    ],
)
def trained_policies(
    context: dg.AssetExecutionContext,
    config: TrainingOverrides,
    storage: StorageResource,
    experiment_tracking: ExperimentTrackingResource,
):
    """One pricing policy of a store: its tier, mode (baseline: λ = 0, no adversary; robust:
    worst α of the ambiguity set) and training α come from the policy key; one model per
    training seed, with the learning curve and the hyperparameters in `policy.json`."""
    store, key = store_policy_keys(context)
    settings = storage.settings()
    spec = MarketSpec.load(market_dir(settings.lake_dir, store))
    params = config.params(settings.training)
    with forward_progress(context):
        tracked = [_tracked_training(key, spec, params, seed, store, experiment_tracking)
                   for seed in settings.training.seeds]  # fmt: skip
    trained = [t for t, _ in tracked]
    runs = {str(t.seed): where for t, where in tracked if where is not None}
    folder = policy_dir(settings.lake_dir, store, key.key)
    hashed, record = save_trained(folder, trained)
    curve = pl.read_parquet(folder / CURVE_FILE)
    version, artifacts = artifact_version(*hashed)
    figure = plot_learning_curve(curve, f"{store} / {key.key}")
    png = settings.reports_dir / "trained_policies" / f"{store}-{key.key}.png"
    yield dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            curve, folder / CURVE_FILE, **artifacts,
            tier=key.tier, mode=key.mode, alpha=key.alpha, seeds=str(record["seeds"]),
            weights_sha256=record["weights_sha256"],
            hyperparameters=dg.MetadataValue.json(record["hyperparameters"]),
            final_episode_reward=float(curve["reward"][-1]) if curve.height else None,
            tracked=experiment_tracking.enabled,
            **({"wandb_runs": dg.MetadataValue.json(runs)} if runs else {}),
            learning_curve=figure_markdown(figure, png, f"learning curve {key.key}"),
        ),
    )  # fmt: skip
    yield reload_check(spec, key.alpha, trained, folder, params.device)
