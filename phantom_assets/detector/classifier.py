"""Detector v2's classifier (docs/detector.md#detector-v2): an L2-penalized logistic regression
of the class (agent = 1) on the standardized quote-time features, fitted with scikit-learn and
kept as plain numbers, so a pricing service evaluates it with one dot product and no library.

Logistic regression is a proper-scoring-rule fit: its probabilities are calibrated to the
labelled sessions' class mix, as the kernel detector's f is; `calibration_summary` measures how
well (Brier score, calibration intercept and slope of the out-of-fold scores). Out of fold by
experiment: `out_of_fold_scores` scores each fold with a model fitted without it (folds hash the
experiment, `labeled_sessions`) with `fold_classifiers`, as the market's bank needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from phantom_assets.fingerprint.calibration import fit_logistic_1d

__all__ = [
    "DEFAULT_C",
    "QuoteClassifier",
    "calibration_summary",
    "classifiers_from_dict",
    "classifiers_to_dict",
    "fit_quote_classifier",
    "fold_classifiers",
    "out_of_fold_scores",
]

DEFAULT_C = 1.0
"""Inverse L2 strength on the standardized features (scikit-learn's default)."""
_MAX_ITER = 1000


@dataclass(frozen=True)
class QuoteClassifier:
    """P(agent | x) = σ(intercept + Σ coef_j · (x_j − mean_j) / scale_j).

    Attributes:
        features: the feature names, in column order (`features.QUOTE_FEATURES` or a subset).
        mean, scale: the standardization of each feature (scale 1 for a constant feature).
        coef: the weight of each standardized feature.
        intercept: the log-odds at the mean session.
    """

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def __post_init__(self) -> None:
        """Every per-feature tuple has one finite number per feature; scales are > 0."""
        n = len(self.features)
        numbers = (self.mean, self.scale, self.coef)
        if any(len(x) != n for x in numbers) or not n:
            raise ValueError(f"mean, scale and coef need one value per feature ({n})")
        if not np.isfinite([*self.mean, *self.scale, *self.coef, self.intercept]).all():
            raise ValueError("classifier numbers must be finite")
        if min(self.scale) <= 0:
            raise ValueError("feature scales must be > 0")

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(n,) agent probability of each row of `x` (n, len(features))."""
        z = (np.asarray(x, dtype=np.float64) - np.array(self.mean)) / np.array(self.scale)
        return expit(self.intercept + z @ np.array(self.coef))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the detector bundle's `classifier`."""
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuoteClassifier:
        """The classifier of a `to_dict` object."""
        return cls(
            features=tuple(data["features"]),
            mean=tuple(float(x) for x in data["mean"]),
            scale=tuple(float(x) for x in data["scale"]),
            coef=tuple(float(x) for x in data["coef"]),
            intercept=float(data["intercept"]),
        )


def fit_quote_classifier(
    x: np.ndarray, is_agent: np.ndarray, features: Sequence[str], c: float = DEFAULT_C
) -> QuoteClassifier:
    """Fit the classifier on rows `x` (n, len(features)) with labels `is_agent`.

    Raises:
        ValueError: if a class is missing or shapes disagree.
    """
    # scikit-learn takes ~1.4 s to import: only the fit needs it, not the code location.
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(is_agent, dtype=bool)
    if x.ndim != 2 or x.shape != (y.size, len(features)):
        raise ValueError(f"x must be (n, {len(features)}) with n = {y.size}, got {x.shape}")
    if y.all() or not y.any():
        raise ValueError("the classifier needs sessions of both classes")
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    model = LogisticRegression(C=c, max_iter=_MAX_ITER).fit((x - scaler.mean_) / scale, y)
    return QuoteClassifier(
        features=tuple(features),
        mean=tuple(float(v) for v in scaler.mean_),
        scale=tuple(float(v) for v in scale),
        coef=tuple(float(v) for v in model.coef_[0]),
        intercept=float(model.intercept_[0]),
    )


def fold_classifiers(
    x: np.ndarray,
    is_agent: np.ndarray,
    folds: np.ndarray,
    k: int,
    features: Sequence[str],
    c: float = DEFAULT_C,
) -> dict[int, QuoteClassifier]:
    """Per fold present in `folds`, the classifier fitted on the rows of every other fold."""
    folds = np.asarray(folds, dtype=np.int64)
    if folds.shape != (len(x),) or (folds.size and (folds.min() < 0 or folds.max() >= k)):
        raise ValueError(f"need one fold in [0, {k}) per row")
    y = np.asarray(is_agent, dtype=bool)
    return {
        int(fold): fit_quote_classifier(x[folds != fold], y[folds != fold], features, c)
        for fold in np.unique(folds)
    }


def out_of_fold_scores(
    models: Mapping[int, QuoteClassifier], x: np.ndarray, folds: np.ndarray
) -> np.ndarray:
    """(n,) each row's agent probability from its fold's model (`fold_classifiers`: fitted
    without that fold)."""
    folds = np.asarray(folds, dtype=np.int64)
    missing = sorted(set(np.unique(folds).tolist()) - set(models))
    if missing:
        raise ValueError(f"no classifier for folds {missing}")
    scores = np.empty(len(x))
    for fold, model in models.items():
        held = folds == fold
        scores[held] = model.predict(np.asarray(x)[held])
    return scores


def classifiers_to_dict(
    full: QuoteClassifier, folds: Mapping[int, QuoteClassifier]
) -> dict[str, Any]:
    """The JSON object of `quote_detector/classifier.json`: the classifier fitted on every
    session (the bundle's) and each fold's (the bank's out-of-fold scores)."""
    return {
        "classifier": full.to_dict(),
        "fold_classifiers": {str(fold): model.to_dict() for fold, model in sorted(folds.items())},
    }


def classifiers_from_dict(
    data: Mapping[str, Any],
) -> tuple[QuoteClassifier, dict[int, QuoteClassifier]]:
    """(full, per-fold) classifiers of a `classifiers_to_dict` object."""
    folds = {int(k): QuoteClassifier.from_dict(v) for k, v in data["fold_classifiers"].items()}
    return QuoteClassifier.from_dict(data["classifier"]), folds


def calibration_summary(score: np.ndarray, is_agent: np.ndarray) -> dict[str, float]:
    """How well probabilities `score` match outcomes: the Brier score, and the intercept and
    slope of the logistic recalibration logit P(agent) = a + b·logit(score) (a perfectly
    calibrated score has a = 0, b = 1)."""
    score = np.clip(np.asarray(score, dtype=np.float64), 1e-9, 1 - 1e-9)
    y = np.asarray(is_agent, dtype=np.float64)
    a, b = fit_logistic_1d(np.log(score / (1 - score)), y)
    return {
        "brier": float(np.mean((score - y) ** 2)),
        "calibration_intercept": a,
        "calibration_slope": b,
    }
