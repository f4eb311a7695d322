"""Fit and evaluate a store's quote-time detector v2 against the kernel-only detector
(docs/detector.md#detector-v2).

Both detectors score each labelled session out of fold: its kernel statistic comes from the
class kernels fitted without its fold, and v2's classifier (`classifier`) is fitted without its
fold too (folds hash the experiment). The kernel-only detector is the store's selected f =
σ(a + b·kernel_gap), as the market has always used it. The classifier the bundle ships is fitted
on every labelled session's out-of-fold features (what a new session's full-kernel statistic is
like: not fitted on itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.special import expit

from phantom_assets.config import MARKET_DETECTORS
from phantom_assets.constants import ACTORS
from phantom_assets.detector.classifier import (
    DEFAULT_C,
    QuoteClassifier,
    calibration_summary,
    fit_quote_classifier,
    fold_classifiers,
    out_of_fold_scores,
)
from phantom_assets.detector.features import (
    KERNEL_FEATURE,
    QUOTE_FEATURES,
    length_moves,
    prefix_features,
    quote_features,
)
from phantom_assets.detector.recall import DETECTOR_FPRS, recall_table

__all__ = [
    "DETECTORS",
    "KERNEL_DETECTOR",
    "QUOTE_PREFIX",
    "V2_DETECTOR",
    "QuoteDetectorFit",
    "fit_quote_detector",
    "kernel_scores",
]

DETECTORS: tuple[str, ...] = MARKET_DETECTORS
"""The detectors the market can quote with (`MarketConfig.detector`)."""
V2_DETECTOR, KERNEL_DETECTOR = DETECTORS
QUOTE_PREFIX = "quote"
"""The recall table's prefix label of the market's quote (the other labels count events)."""
SESSION_COLUMNS = ("session_id", "actor", "experiment_id", "fold", "trajectory", "event_offsets_ms")


@dataclass(frozen=True)
class QuoteDetectorFit:
    """A store's two quote-time detectors.

    Attributes:
        scores: one row per labelled session: `session_id`, `actor`, `experiment_id`, `fold`,
            the quote-time features (`QUOTE_FEATURES`), `kernel_score` and `v2_score` (both out
            of fold).
        classifier: v2's classifier fitted on every labelled session (the bundle's).
        fold_classifiers: v2's classifier fitted without each fold (the out-of-fold scores').
        recall: `recall.RECALL_SCHEMA` rows of both detectors and v2 − kernel.
        calibration: per detector, `classifier.calibration_summary` of its quote-time scores.
    """

    scores: pl.DataFrame
    classifier: QuoteClassifier
    fold_classifiers: dict[int, QuoteClassifier]
    recall: pl.DataFrame
    calibration: dict[str, dict[str, float]]


def kernel_scores(features: np.ndarray, f_coef: tuple[float, float]) -> np.ndarray:
    """The kernel-only detector's f = σ(a + b·kernel_gap) of feature rows."""
    return expit(f_coef[0] + f_coef[1] * features[:, QUOTE_FEATURES.index(KERNEL_FEATURE)])


def fit_quote_detector(
    sessions: pl.DataFrame,
    fold_llr: np.ndarray,
    f_coef: tuple[float, float],
    *,
    prefix_events: Sequence[int],
    rng: np.random.Generator,
    fprs: Sequence[float] = DETECTOR_FPRS,
    n_resamples: int = 1000,
    c: float = DEFAULT_C,
) -> QuoteDetectorFit:
    """Both detectors' out-of-fold scores at the quote, v2's classifier and the recall table.

    Args:
        sessions: labelled sessions of both classes with `SESSION_COLUMNS` (`labeled_sessions`).
        fold_llr: (k, S·S) log K_A − log K_H of the kernels fitted without fold j.
        f_coef: (a, b) of the store's selected f.
        prefix_events: the recall table's prefix lengths in events (besides the quote).
        rng: randomness of the recall intervals.
        fprs: the recall table's human false-positive rates.
        n_resamples: the recall intervals' bootstrap resamples.
        c: the classifier's inverse L2 strength.

    Raises:
        ValueError: if a column is missing or a class has no session.
    """
    missing = [name for name in SESSION_COLUMNS if name not in sessions.columns]
    if missing:
        raise ValueError(f"sessions lack columns {missing}")
    present = set(sessions["actor"].unique().to_list())
    if not set(ACTORS) <= present:
        raise ValueError(f"need labelled sessions of both classes {ACTORS}, got {sorted(present)}")
    trajectories, offsets = sessions["trajectory"], sessions["event_offsets_ms"]
    folds = sessions["fold"].to_numpy()
    is_agent = (sessions["actor"] == ACTORS[1]).to_numpy()
    experiment = sessions["experiment_id"].fill_null(sessions["session_id"]).to_list()
    k = len(fold_llr)
    at_quote = quote_features(trajectories, offsets, folds, fold_llr)
    models = fold_classifiers(at_quote, is_agent, folds, k, QUOTE_FEATURES, c)
    prefixes = {
        **{
            str(n): prefix_features(
                trajectories, offsets, folds, fold_llr, length_moves(trajectories, n)
            )
            for n in prefix_events
        },
        QUOTE_PREFIX: at_quote,
    }
    by_detector = {
        V2_DETECTOR: {p: out_of_fold_scores(models, x, folds) for p, x in prefixes.items()},
        KERNEL_DETECTOR: {p: kernel_scores(x, f_coef) for p, x in prefixes.items()},
    }
    recall = recall_table(
        by_detector,
        is_agent,
        experiment,
        fprs=fprs,
        differences=[(V2_DETECTOR, KERNEL_DETECTOR)],
        n_resamples=n_resamples,
        rng=rng,
    )
    quote_scores = {name: by_detector[name][QUOTE_PREFIX] for name in DETECTORS}
    scores = sessions.select("session_id", "actor", "experiment_id", "fold").with_columns(
        *(pl.Series(name, at_quote[:, j]) for j, name in enumerate(QUOTE_FEATURES)),
        *(pl.Series(f"{name}_score", quote_scores[name]) for name in DETECTORS),
    )
    return QuoteDetectorFit(
        scores=scores,
        classifier=fit_quote_classifier(at_quote, is_agent, QUOTE_FEATURES, c),
        fold_classifiers=models,
        recall=recall,
        calibration={
            name: calibration_summary(score, is_agent) for name, score in quote_scores.items()
        },
    )
