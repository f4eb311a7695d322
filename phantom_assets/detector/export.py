"""A store's quote-time detector as a `DetectorBundle` (docs/detector.md): its two class kernels
fitted on all its labelled sessions, its selected calibration of the kernel-only f, detector
v2's classifier when the market quotes with it, and the threshold τ its market set for the
configured human false-positive rate (on out-of-fold scores)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.constants import (
    CART_LOCK_EVENT,
    EVENT_ALIASES,
    KERNEL_STATES,
    QUOTE_EVENT,
    VOCABULARY,
)
from phantom_assets.detector.classifier import QuoteClassifier
from phantom_assets.detector.features import quote_features
from phantom_assets.detector.runtime import DetectorBundle
from phantom_assets.market.bank import bank_tables, fold_log_ratios, session_bank
from phantom_assets.storage import write_bytes_atomic

BUNDLE_FILE = "detector.json"

__all__ = [
    "BUNDLE_FILE",
    "build_bundle",
    "bundle_quote_scores",
    "parity_errors",
    "pipeline_quote_scores",
    "save_bundle",
]


def build_bundle(
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    f_coef: tuple[float, float],
    threshold: float,
    false_positive_rate: float,
    provenance: Mapping[str, Any],
    classifier: QuoteClassifier | None = None,
) -> DetectorBundle:
    """The bundle of a store's full kernels (rows = sources over `KERNEL_STATES`), its kernel-only
    f = σ(a + b·gap), detector v2's classifier (None: the kernel-only f scores) and τ; the
    log-ratios are the market's (`bank.fold_log_ratios`: probabilities floored before the log,
    so every move has a finite ratio)."""
    n = len(KERNEL_STATES)
    log_ratio = fold_log_ratios([kernel_human], [kernel_agent])[0].reshape(n, n)
    return DetectorBundle(
        states=KERNEL_STATES,
        log_ratio=tuple(tuple(float(x) for x in row) for row in log_ratio),
        f_intercept=float(f_coef[0]),
        f_slope=float(f_coef[1]),
        threshold=float(threshold),
        false_positive_rate=float(false_positive_rate),
        quote_event=QUOTE_EVENT,
        lock_event=CART_LOCK_EVENT,
        aliases={alias: name for alias, name in EVENT_ALIASES.items() if name in VOCABULARY},
        provenance=dict(provenance),
        classifier=None if classifier is None else classifier.to_dict(),
    )


def save_bundle(bundle: DetectorBundle, folder: Path) -> Path:
    """Write `detector.json` into `folder` atomically (temp file, then rename)."""
    path = Path(folder) / BUNDLE_FILE
    write_bytes_atomic(json.dumps(bundle.to_dict(), indent=1, sort_keys=True).encode(), path)
    return path


def pipeline_quote_scores(
    trajectories: pl.Series,
    offsets_ms: pl.Series,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    f_coef: tuple[float, float],
    classifier: QuoteClassifier | None = None,
) -> np.ndarray:
    """f at each session's quote as the pipeline's vectorized code computes it with the full
    kernels (`bank.session_bank` for the kernel-only f; `features.quote_features` and the
    classifier for v2): the reference the bundle must reproduce."""
    llr = fold_log_ratios([kernel_human], [kernel_agent])
    folds = np.zeros(len(trajectories), dtype=np.int64)
    if classifier is not None:
        return classifier.predict(quote_features(trajectories, offsets_ms, folds, llr))
    tables = bank_tables(kernel_human, kernel_human, kernel_agent, KERNEL_STATES)
    return session_bank(trajectories, folds, llr, tables, f_coef).score


def bundle_quote_scores(
    bundle: DetectorBundle, trajectories: pl.Series, offsets_ms: pl.Series
) -> np.ndarray:
    """f at each session's quote, scored event by event by the bundle (each event with its
    time): its last quote, or the whole session's f when it has none (the market quotes such a
    session at its end)."""
    scores = np.empty(len(trajectories))
    for i, (events, times) in enumerate(
        zip(trajectories.to_list(), offsets_ms.to_list(), strict=True)
    ):
        scorer, last = bundle.session(), None
        for event, ts_ms in zip(events, times, strict=True):
            quote = scorer.push(event, ts_ms)
            if quote is not None:
                last = quote.score
        scores[i] = scorer.close() if last is None else last
    return scores


def parity_errors(
    bundle: DetectorBundle,
    trajectories: pl.Series,
    offsets_ms: pl.Series,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    f_coef: tuple[float, float],
    classifier: QuoteClassifier | None = None,
) -> np.ndarray:
    """|bundle − pipeline| of the quote-time f of every session."""
    reference = pipeline_quote_scores(
        trajectories, offsets_ms, kernel_human, kernel_agent, f_coef, classifier
    )
    return np.abs(bundle_quote_scores(bundle, trajectories, offsets_ms) - reference)
