"""The store's quote-time detectors: v2 (kernel statistic, timing and dwell in a classifier)
against the kernel statistic alone, fitted and evaluated out of fold (`quote_detector`,
fingerprint group), and the one the market quotes with as a bundle a pricing service loads
(`detector_bundle`, market group; `phantom_assets.detector`; docs/detector.md)."""

import json

import dagster as dg
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
from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS
from phantom_assets.detector import build_bundle, parity_errors, save_bundle
from phantom_assets.detector.classifier import classifiers_from_dict, classifiers_to_dict
from phantom_assets.detector.fit import QUOTE_PREFIX, V2_DETECTOR, fit_quote_detector
from phantom_assets.detector.recall import plot_recall, recall_markdown
from phantom_assets.fingerprint import load_kernel_set, load_score_calibration
from phantom_assets.fingerprint.store import read_labeled_sessions
from phantom_assets.lake import (
    CALIBRATION_FILE,
    CLASSIFIER_FILE,
    KERNEL_FILE,
    QUOTE_SCORES_FILE,
    RECALL_FILE,
    RECALL_MD_FILE,
    SPEC_SCALARS_FILE,
)
from phantom_assets.market import MarketSpec
from phantom_assets.market.bank import fold_log_ratios
from phantom_assets.storage import (
    file_digest,
    write_bytes_atomic,
    write_json_atomic,
    write_parquet_atomic,
)

DETECTOR_CODE = code_version_of(
    "phantom_assets.assets.detector",
    "phantom_assets.detector",
    "phantom_assets.market.bank",
    "phantom_assets.fingerprint.calibration",
)
PARITY_CHECK = "bundle_reproduces_the_pipelines_quote_scores"
PARITY_TOLERANCE = 1e-9
TIMED_TRAJECTORY = ["trajectory", "event_offsets_ms"]
# The shares of the store's (human, agent) sessions τ flags at their quote, scored out of fold.
OUT_OF_FOLD_RATES = ("out_of_fold_human_flag_rate", "out_of_fold_agent_recall_at_quote")


def quote_detector(context: dg.AssetExecutionContext, storage: StorageResource):
    """The store's two quote-time detectors, every labelled session scored out of fold (folds
    by experiment): kernel-only (its selected f of the kernel statistic, what the market used
    before) and v2 (a logistic classifier of the kernel statistic, inter-event timing and dwell
    to the quote; `quote_scores.parquet`, v2's classifier fitted on all in `classifier.json`).
    Recall at 1/2/5% human false-positive rate by prefix length, each detector and v2 − kernel,
    with experiment-cluster bootstrap intervals (`recall.parquet`, `recall.md`), and how well
    each score is calibrated (Brier, calibration intercept and slope)."""
    store, settings = context.partition_key, storage.settings()
    cfg, lake = settings.fingerprint, settings.lake
    sessions = read_labeled_sessions(lake, store, "experiment_id", "event_offsets_ms")
    folds = [load_kernel_set(lake, store, actor).folds for actor in ACTORS]
    fold_llr = fold_log_ratios(*([k.probs for k in kernels] for kernels in folds))
    fit = fit_quote_detector(
        sessions,
        fold_llr,
        load_score_calibration(lake, store).linear_coef,
        prefix_events=cfg.quote_prefix_events,
        rng=np.random.default_rng(cfg.seed),
        n_resamples=cfg.bootstrap_draws,
    )
    folder = lake.quote_detector_dir(store)
    markdown = recall_markdown(fit.recall, settings.market.detector_fpr)
    paths = (
        folder / QUOTE_SCORES_FILE,
        folder / CLASSIFIER_FILE,
        folder / RECALL_FILE,
        folder / RECALL_MD_FILE,
    )
    write_parquet_atomic(fit.scores, paths[0])
    classifiers = classifiers_to_dict(fit.classifier, fit.fold_classifiers)
    write_json_atomic({**classifiers, "calibration": fit.calibration}, paths[1])
    write_parquet_atomic(fit.recall, paths[2])
    write_bytes_atomic(markdown.encode(), paths[3])
    version, artifacts = artifact_version(*paths)
    at_quote = fit.recall.filter(
        (pl.col("prefix") == QUOTE_PREFIX) & (pl.col("fpr") == settings.market.detector_fpr)
    )
    return dg.MaterializeResult(
        data_version=version,
        metadata=table_metadata(
            fit.scores,
            paths[0],
            **artifacts,
            seed=cfg.seed,
            **{
                f"recall_at_quote_{row['detector']}": row["recall"]
                for row in at_quote.iter_rows(named=True)
            },
            calibration=json.dumps(fit.calibration),
            coefficients=str(dict(zip(fit.classifier.features, fit.classifier.coef, strict=True))),
            recall=dg.MetadataValue.md(markdown),
            recall_plot=figure_markdown(
                plot_recall(fit.recall, settings.market.detector_fpr, f"{store}: recall by prefix"),
                settings.reports_dir / "quote_detector" / f"{store}_recall.png",
                "Recall by prefix length",
            ),
        ),
    )


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
        pl.read_parquet(lake.labeled_sessions(store, actor), columns=TIMED_TRAJECTORY)
        for actor in ACTORS
    ]
    calibration = load_score_calibration(lake, store)
    spec = MarketSpec.load(lake.market_dir(store), settings.agents)
    threshold = spec.detector_threshold
    inputs = [
        *(lake.kernels_dir(store, actor) / KERNEL_FILE for actor in ACTORS),
        lake.scores_dir(store) / CALIBRATION_FILE,
        lake.market_dir(store) / SPEC_SCALARS_FILE,  # τ and the detector
    ]
    classifier = None
    if spec.detector == V2_DETECTOR:
        inputs.append(lake.quote_detector_dir(store) / CLASSIFIER_FILE)
        classifier = classifiers_from_dict(json.loads(inputs[-1].read_text()))[0]
    provenance = {
        "store": store,
        "code_version": DETECTOR_CODE,
        "inputs": {str(path.relative_to(lake.root)): file_digest(path) for path in inputs},
        "detector": spec.detector,
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
        classifier,
    )
    folder = lake.detector_dir(store)
    path = save_bundle(bundle, folder)
    version, artifacts = artifact_version(path)
    both = pl.concat(sessions)
    errors = parity_errors(
        bundle,
        both["trajectory"],
        both["event_offsets_ms"],
        kernel_human,
        kernel_agent,
        calibration.linear_coef,
        classifier,
    )
    yield dg.MaterializeResult(
        data_version=version,
        metadata={
            "path": dg.MetadataValue.path(str(path)),
            **artifacts,
            "detector": spec.detector,
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
    """`quote_detector` and `detector_bundle`, per store."""
    del grids  # one partition per store
    # What both detectors are fitted from: the class kernels, the sessions, the calibration.
    fitted_from = [
        dg.AssetDep("transition_kernels", partition_mapping=BY_STORE),
        dg.AssetDep("labeled_sessions", partition_mapping=BY_STORE),
        "divergence_scores",
    ]
    fitted = declared_asset(
        settings=settings,
        code=DETECTOR_CODE,
        reads=(
            "fingerprint.quote_prefix_events",
            "fingerprint.bootstrap_draws",
            "fingerprint.seed",
            "market.detector_fpr",  # the recall table's headline rate
        ),
        name="quote_detector",
        partitions_def=store_partitions,
        deps=fitted_from,
        group_name="fingerprint",
        kinds={"python", "scikitlearn", "parquet"},
    )
    asset = declared_asset(
        settings=settings,
        code=DETECTOR_CODE,
        reads=("market.detector_fpr",),
        name="detector_bundle",
        partitions_def=store_partitions,
        deps=[*fitted_from, "quote_detector", "market_simulators"],
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
    return [fitted(quote_detector), asset(detector_bundle)]
