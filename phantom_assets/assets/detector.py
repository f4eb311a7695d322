"""Market group: the store's quote-time detector as a bundle a pricing service loads
(`phantom_assets.detector`; docs/detector.md)."""

import dagster as dg
import numpy as np
import polars as pl

from phantom_assets.assets.declared import declared_asset
from phantom_assets.assets.metadata import artifact_version, code_version_of
from phantom_assets.assets.partitions import BY_STORE, GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS
from phantom_assets.detector import build_bundle, parity_errors, save_bundle
from phantom_assets.fingerprint import load_kernel_set, load_score_calibration
from phantom_assets.lake import CALIBRATION_FILE, KERNEL_FILE, SPEC_SCALARS_FILE
from phantom_assets.market import MarketSpec
from phantom_assets.storage import file_digest

DETECTOR_CODE = code_version_of(
    "phantom_assets.assets.detector",
    "phantom_assets.detector",
    "phantom_assets.market.bank",
)
PARITY_CHECK = "bundle_reproduces_the_pipelines_quote_scores"
PARITY_TOLERANCE = 1e-9
# The shares of the store's (human, agent) sessions τ flags at their quote, scored out of fold.
OUT_OF_FOLD_RATES = ("out_of_fold_human_flag_rate", "out_of_fold_agent_recall_at_quote")


def detector_bundle(context: dg.AssetExecutionContext, storage: StorageResource):
    """`detector.json`: the store's quote-time detector, self-contained (stdlib-only scorer,
    `phantom_assets/detector/runtime.py`): the log-ratios of its class kernels fitted on all its
    labelled sessions, its selected calibration of f, the threshold τ its market set for the
    configured human false-positive rate, the quote rule and where each came from. Checked
    (blocking): scored event by event, every labelled session gets the score the pipeline's
    vectorized code gives it at its quote (`phantom score` and the Python API use this file)."""
    store, settings = context.partition_key, storage.settings()
    lake = settings.lake
    kernel_human, kernel_agent = (load_kernel_set(lake, store, a).full.probs for a in ACTORS)
    sessions = [
        pl.read_parquet(lake.labeled_sessions(store, actor), columns=["trajectory"])
        for actor in ACTORS
    ]
    calibration = load_score_calibration(lake, store)
    spec = MarketSpec.load(lake.market_dir(store), settings.agents)
    threshold = spec.detector_threshold
    inputs = [
        *(lake.kernels_dir(store, actor) / KERNEL_FILE for actor in ACTORS),
        lake.scores_dir(store) / CALIBRATION_FILE,
        lake.market_dir(store) / SPEC_SCALARS_FILE,  # τ
    ]
    provenance = {
        "store": store,
        "code_version": DETECTOR_CODE,
        "inputs": {str(path.relative_to(lake.root)): file_digest(path) for path in inputs},
        "calibration": calibration.method,
        "fitted_on_sessions": {
            actor: frame.height for actor, frame in zip(ACTORS, sessions, strict=True)
        },
        **{
            key: float(np.mean(bank.score > threshold))
            for key, bank in zip(OUT_OF_FOLD_RATES, spec.banks, strict=True)
        },
    }
    bundle = build_bundle(
        kernel_human,
        kernel_agent,
        calibration.linear_coef,
        threshold,
        settings.market.detector_fpr,
        provenance,
    )
    folder = lake.detector_dir(store)
    path = save_bundle(bundle, folder)
    version, artifacts = artifact_version(path)
    trajectories = pl.concat(sessions)["trajectory"]
    errors = parity_errors(
        bundle, trajectories, kernel_human, kernel_agent, calibration.linear_coef
    )
    yield dg.MaterializeResult(
        data_version=version,
        metadata={
            "path": dg.MetadataValue.path(str(path)),
            **artifacts,
            "threshold": threshold,
            "false_positive_rate": settings.market.detector_fpr,
            **{key: provenance[key] for key in OUT_OF_FOLD_RATES},
            "bytes": path.stat().st_size,
        },
    )
    yield dg.AssetCheckResult(
        check_name=PARITY_CHECK,
        passed=bool(errors.size and errors.max() <= PARITY_TOLERANCE),
        metadata={"sessions": int(errors.size), "max_abs_error": float(errors.max(initial=0.0))},
    )


def build_detector_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`detector_bundle`, per store."""
    del grids  # one partition per store
    asset = declared_asset(
        settings=settings,
        code=DETECTOR_CODE,
        reads=("market.detector_fpr",),
        name="detector_bundle",
        partitions_def=store_partitions,
        deps=[
            dg.AssetDep("transition_kernels", partition_mapping=BY_STORE),
            dg.AssetDep("labeled_sessions", partition_mapping=BY_STORE),
            "divergence_scores",
            "market_simulators",
        ],
        group_name="market",
        kinds={"python", "json"},
        check_specs=[
            dg.AssetCheckSpec(
                PARITY_CHECK,
                asset="detector_bundle",
                blocking=True,
                description="Scored event by event, every labelled session of the store gets "
                f"the pipeline's score at its quote (to {PARITY_TOLERANCE:g}).",
            )
        ],
    )
    return [asset(detector_bundle)]
