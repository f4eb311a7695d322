"""Out-of-fold logistic calibration of the divergence gap (docs/method.md#calibrated-f).

For each fold ``j`` a 1-D logistic regression ``is_agent ~ σ(a + b·gap)`` is fitted on the
out-of-fold gaps of the labeled sessions of the *other* folds and applied to fold ``j``; unlabeled
sessions use the fit on all labeled sessions. Fitted by Newton's method (IRLS) with a small ridge
penalty on the standardized gap, so perfectly separated data still gives finite coefficients.

Which f is used downstream is `fingerprint.calibration` (`CALIBRATION_METHODS`):
``"temperature"`` (f = σ(gap / T)) or ``"logistic"`` (the out-of-fold calibrated f).
:class:`ScoreCalibration` records that choice with the coefficients fitted on all labeled sessions,
so sessions scored later (synthetic agents, new traffic) get the same f as unlabeled ones.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import expit, log_expit

logger = logging.getLogger(__name__)

DEFAULT_RIDGE = 1e-3
CALIBRATION_METHODS = ("temperature", "logistic")

__all__ = [
    "CALIBRATION_METHODS",
    "DEFAULT_RIDGE",
    "ScoreCalibration",
    "apply_logistic",
    "calibrate_out_of_fold",
    "fit_logistic_1d",
    "fit_score_calibration",
    "validate_method",
]


def validate_method(method: str) -> str:
    """Return ``method`` if it is one of `CALIBRATION_METHODS`, else raise ValueError."""
    if method not in CALIBRATION_METHODS:
        raise ValueError(f"calibration must be one of {CALIBRATION_METHODS}, got {method!r}")
    return method


def _penalized_loglik(beta: np.ndarray, z: np.ndarray, y: np.ndarray, ridge: float) -> float:
    eta = beta[0] + beta[1] * z
    return float(np.sum(y * log_expit(eta) + (1 - y) * log_expit(-eta)) - 0.5 * ridge * beta @ beta)


def fit_logistic_1d(
    x: np.ndarray, y: np.ndarray, *, ridge: float = DEFAULT_RIDGE, max_iter: int = 100
) -> tuple[float, float]:
    """Ridge-penalized logistic regression ``P(y=1|x) = σ(a + b·x)`` by damped Newton steps.

    Args:
        x: Finite predictor values.
        y: 0/1 outcomes, same length as ``x``.
        ridge: L2 penalty on (intercept, slope) of the *standardized* predictor (> 0).
        max_iter: Newton iterations at most.

    Returns:
        ``(a, b)`` on the original scale of ``x``.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(
            f"x and y must be equal-length non-empty 1-D arrays, got {x.shape}, {y.shape}"
        )
    if not np.isfinite(x).all():
        raise ValueError("x must be finite")
    if ridge <= 0:
        raise ValueError(f"ridge must be > 0, got {ridge!r}")
    mu, sd = float(x.mean()), float(x.std())
    sd = sd if sd > 0 else 1.0
    z = (x - mu) / sd
    design = np.column_stack([np.ones_like(z), z])
    beta = np.zeros(2)
    current = _penalized_loglik(beta, z, y, ridge)
    for _ in range(max_iter):  # Newton iterations, vectorized over samples
        p = expit(design @ beta)
        grad = design.T @ (y - p) - ridge * beta
        hess = (design * (p * (1 - p))[:, None]).T @ design + ridge * np.eye(2)
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        value = _penalized_loglik(beta + step, z, y, ridge)
        while value < current - 1e-12 and scale > 1e-8:  # backtracking line search
            scale *= 0.5
            value = _penalized_loglik(beta + scale * step, z, y, ridge)
        if value < current - 1e-12:
            break
        beta, current = beta + scale * step, value
        if np.max(np.abs(scale * step)) < 1e-10:
            break
    return float(beta[0] - beta[1] * mu / sd), float(beta[1] / sd)


def apply_logistic(x: np.ndarray, coef: tuple[float, float]) -> np.ndarray:
    """``σ(a + b·x)``; ±inf gaps map to 0/1 by the sign of ``b``, NaN stays NaN."""
    a, b = coef
    with np.errstate(invalid="ignore"):
        return expit(a + b * np.asarray(x, dtype=np.float64))


def calibrate_out_of_fold(
    gap: np.ndarray,
    is_agent: np.ndarray,
    fold: np.ndarray,
    labeled: np.ndarray,
    k: int,
    *,
    ridge: float = DEFAULT_RIDGE,
    full_coef: tuple[float, float] | None = None,
) -> np.ndarray:
    """Calibrated agent probability per session, never fitted on the session's own fold.

    Args:
        gap: Out-of-fold gap per session.
        is_agent: True for agent-labeled sessions (ignored where not ``labeled``).
        fold: Fold per session (``[0, k)`` for labeled sessions).
        labeled: True for sessions with a human/agent label.
        k: Number of folds.
        ridge: Ridge penalty of :func:`fit_logistic_1d`.
        full_coef: Coefficients for the unlabeled sessions (a stored fit on all labeled sessions,
            e.g. :attr:`ScoreCalibration.coef`); fitted here from the labeled sessions when None.

    Returns:
        ``f_calibrated`` per session; NaN where the training sessions lack one of the classes
        (there is nothing to calibrate against).
    """
    gap = np.asarray(gap, dtype=np.float64)
    usable = np.asarray(labeled, dtype=bool) & np.isfinite(gap)
    y = np.asarray(is_agent, dtype=np.float64)
    out = np.full(gap.shape, np.nan)
    groups = [(np.asarray(fold) == j) & labeled for j in range(k)]
    groups.append(~np.asarray(labeled, dtype=bool))  # unlabeled: fit on every labeled session
    for j, target in enumerate(groups):  # loop over the <= k + 1 fits
        if not target.any():
            continue
        if j == k and full_coef is not None:
            out[target] = apply_logistic(gap[target], full_coef)
            continue
        train = usable & ~target if j < k else usable
        if not (train.any() and 0 < y[train].sum() < train.sum()):
            logger.warning("calibration for fold %d: training data lacks a class; leaving NaN", j)
            continue
        coef = fit_logistic_1d(gap[train], y[train], ridge=ridge)
        out[target] = apply_logistic(gap[target], coef)
    return out


@dataclass(frozen=True)
class ScoreCalibration:
    """Which f a store uses downstream, with what it needs to score new sessions.

    Attributes:
        method: ``"temperature"`` or ``"logistic"`` (`CALIBRATION_METHODS`).
        temperature: T of f = σ(gap / T).
        intercept: Logistic intercept a fitted on all labeled out-of-fold gaps (None: no fit).
        slope: Logistic slope b (None: no fit).
        ridge: Ridge penalty of the logistic fit.
    """

    method: str
    temperature: float
    intercept: float | None = None
    slope: float | None = None
    ridge: float = DEFAULT_RIDGE

    def __post_init__(self) -> None:
        """Validate the method, temperature and coefficients."""
        validate_method(self.method)
        if not np.isfinite(self.temperature) or self.temperature <= 0:
            raise ValueError(f"temperature must be a finite number > 0, got {self.temperature!r}")
        if (self.intercept is None) != (self.slope is None):
            raise ValueError("give both intercept and slope, or neither")
        if self.method == "logistic" and self.intercept is None:
            raise ValueError("calibration 'logistic' needs fitted coefficients (both classes)")

    @property
    def coef(self) -> tuple[float, float] | None:
        """``(intercept, slope)`` or None."""
        if self.intercept is None or self.slope is None:
            return None
        return self.intercept, self.slope

    @property
    def linear_coef(self) -> tuple[float, float]:
        """(a, b) with the selected f = σ(a + b·gap): (0, 1/T), or the logistic fit."""
        if self.method == "logistic" and self.coef is not None:
            return self.coef
        return 0.0, 1.0 / self.temperature

    def apply(self, gap: np.ndarray) -> np.ndarray:
        """The selected f of sessions scored against the full kernels (``gap`` = Δ_H − Δ_A)."""
        gap = np.asarray(gap, dtype=np.float64)
        if self.method == "logistic" and self.coef is not None:
            return apply_logistic(gap, self.coef)
        with np.errstate(invalid="ignore"):
            return expit(gap / self.temperature)

    def to_dict(self) -> dict[str, Any]:
        """JSON payload (``calibration.json`` beside the scores)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> ScoreCalibration:
        """Inverse of :meth:`to_dict`."""
        return cls(
            **{
                name: payload[name]
                for name in ("method", "temperature", "intercept", "slope", "ridge")
            }
        )


def fit_score_calibration(
    gap: np.ndarray,
    is_agent: np.ndarray,
    labeled: np.ndarray,
    method: str,
    temperature: float,
    *,
    ridge: float = DEFAULT_RIDGE,
) -> ScoreCalibration:
    """The store's :class:`ScoreCalibration`: logistic fit on every labeled session with a gap.

    It is the fit :func:`calibrate_out_of_fold` applies to unlabeled sessions. Where the labeled
    sessions lack a class the coefficients are None (and ``method="logistic"`` raises).
    """
    gap = np.asarray(gap, dtype=np.float64)
    train = np.asarray(labeled, dtype=bool) & np.isfinite(gap)
    y = np.asarray(is_agent, dtype=np.float64)[train]
    coef = None
    if train.any() and 0 < y.sum() < y.size:
        coef = fit_logistic_1d(gap[train], y, ridge=ridge)
    return ScoreCalibration(
        method=validate_method(method),
        temperature=temperature,
        intercept=None if coef is None else coef[0],
        slope=None if coef is None else coef[1],
        ridge=ridge,
    )
