"""Out-of-fold logistic calibration of the divergence gap (DESIGN §5 "Divergence scores").

For each fold ``j`` a 1-D logistic regression ``is_agent ~ σ(a + b·gap)`` is fitted on the
out-of-fold gaps of the labeled sessions of the *other* folds and applied to fold ``j``; unlabeled
sessions use the fit on all labeled sessions. Fitted by Newton's method (IRLS) with a small ridge
penalty on the standardized gap, so perfectly separated data still gives finite coefficients.
"""

from __future__ import annotations

import logging

import numpy as np
from scipy.special import expit, log_expit

logger = logging.getLogger(__name__)

DEFAULT_RIDGE = 1e-3

__all__ = ["DEFAULT_RIDGE", "apply_logistic", "calibrate_out_of_fold", "fit_logistic_1d"]


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
) -> np.ndarray:
    """Calibrated agent probability per session, never fitted on the session's own fold.

    Args:
        gap: Out-of-fold gap per session.
        is_agent: True for agent-labeled sessions (ignored where not ``labeled``).
        fold: Fold per session (``[0, k)`` for labeled sessions).
        labeled: True for sessions with a human/agent label.
        k: Number of folds.
        ridge: Ridge penalty of :func:`fit_logistic_1d`.

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
        train = usable & ~target if j < k else usable
        if not (train.any() and 0 < y[train].sum() < train.sum()):
            logger.warning("calibration for fold %d: training data lacks a class; leaving NaN", j)
            continue
        coef = fit_logistic_1d(gap[train], y[train], ridge=ridge)
        out[target] = apply_logistic(gap[target], coef)
    return out
