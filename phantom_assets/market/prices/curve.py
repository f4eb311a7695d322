"""The log-price model with product fixed effects and its experiment-clustered covariance.

Model of a view quote q of product i with engagement s before the view:

    log p_q = a_i + log(1 + m·g(s_q)) + e_q,    g(s) = 1 − exp(−s/s0),

fitted by nonlinear least squares with the product intercepts a_i profiled out (variable
projection: for given (m, log s0) each a_i is its product's mean of log p − log(1 + m·g)), from
a coarse grid over s0 (m solved linearly per grid point) refined by `scipy.optimize.least_squares`.
The covariance of (a, m[, log s0]) is the CR3 sandwich clustered by experiment on the Jacobian
at the optimum, with Bell-McCaffrey degrees of freedom per parameter (`clustered.cluster_vcov`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from phantom_assets.market.prices.clustered import cluster_vcov

__all__ = ["CurveFit", "fit_curve", "markup_curve"]

M_BOUNDS = (-0.95, 50.0)  # 1 + m·g must stay positive; m > 50 is not a markup
S0_SPAN = 1e3  # log s0 is searched within [max(s)/S0_SPAN, max(s)·S0_SPAN]
_GRID = 24  # grid points over log s0 for the starting value
_START_ROWS = 8_192  # rows the starting grid is evaluated on
_AT_BOUND = 1e-4  # distance (in parameter units) that counts as sitting on a bound
_PROJECTIONS = 50  # alternating projections of the two-way partialling out


@dataclass(frozen=True)
class CurveFit:
    """A fitted price curve.

    Attributes:
        log_anchor: (P,) product intercepts a_i (log of the zero-engagement quote).
        markup: m.
        log_s0: log s0 (fixed, not fitted, when `s0_fixed`).
        residuals: (N,) log-price residuals.
        adjusted: (N,) CR2-adjusted residuals (`clustered.cluster_vcov`; = residuals when the
            covariance is skipped).
        vcov: CR3 covariance of (a_1..a_P, m[, log s0]) -- log s0 only when fitted (empty when
            not computed).
        df: Bell-McCaffrey degrees of freedom of the same parameters.
        s0_fixed: Whether s0 was held at a given value.
        at_bound: Whether the optimum sits on a bound of m or log s0 (not identified).
    """

    log_anchor: np.ndarray
    markup: float
    log_s0: float
    residuals: np.ndarray
    adjusted: np.ndarray
    vcov: np.ndarray
    df: np.ndarray
    s0_fixed: bool
    at_bound: bool


def markup_curve(s: np.ndarray, m: float, log_s0: float) -> tuple[np.ndarray, np.ndarray]:
    """log(1 + m·g(s)) and its (N, 2) derivatives with respect to (m, log s0)."""
    s0 = np.exp(log_s0)
    decay = np.exp(-s / s0)
    g = 1.0 - decay
    den = 1.0 + m * g
    jac = np.column_stack([g / den, -m * decay * (s / s0) / den])
    return np.log(den), jac


def _within(x: np.ndarray, product: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`x` minus its product means (along axis 0; x is (N,) or (N, k))."""
    if x.ndim == 1:
        return x - (np.bincount(product, x, counts.size) / counts)[product]
    return np.column_stack([_within(col, product, counts) for col in x.T])


def _two_way_within(
    x: np.ndarray, product: np.ndarray, counts: np.ndarray, cluster: np.ndarray
) -> np.ndarray:
    """(N, k) `x` with its product and cluster means partialled out (alternating projections)."""
    sizes = np.maximum(np.bincount(cluster), 1).astype(np.float64)
    out = x.copy()
    for _ in range(_PROJECTIONS):
        out = _within(out, product, counts)
        means = np.column_stack([np.bincount(cluster, col, sizes.size) / sizes for col in out.T])
        out = out - means[cluster]
    return _within(out, product, counts)


def _start(y: np.ndarray, s: np.ndarray, product: np.ndarray, bounds) -> np.ndarray:
    """Best (m, log s0) on a grid of log s0 with m from the linearised model (on at most
    `_START_ROWS` evenly spaced rows: it only picks the optimiser's starting point)."""
    if y.size > _START_ROWS:
        rows = np.linspace(0, y.size - 1, _START_ROWS).astype(np.int64)
        y, s, product = y[rows], s[rows], product[rows]
    counts = np.maximum(np.bincount(product), 1).astype(np.float64)
    grid = np.linspace(bounds[0][1], bounds[1][1], _GRID)
    g = 1.0 - np.exp(-s[None, :] / np.exp(grid)[:, None])
    yw = _within(y, product, counts)
    gw = _within(g.T, product, counts).T
    m = np.clip((gw @ yw) / np.maximum((gw * gw).sum(axis=1), 1e-300), *M_BOUNDS)
    fits = np.log1p(m[:, None] * g)
    ssr = ((yw[None, :] - _within(fits.T, product, counts).T) ** 2).sum(axis=1)
    best = int(np.argmin(ssr))
    return np.array([m[best], grid[best]])


def fit_curve(
    y: np.ndarray,
    s: np.ndarray,
    product: np.ndarray,
    cluster: np.ndarray,
    log_s0: float | None = None,
    covariance: bool = True,
    absorbed: bool = False,
    start: tuple[float, float] | None = None,
) -> CurveFit:
    """Fit the model by profiled NLS; CR3 covariance clustered by `cluster`.

    Args:
        y: (N,) log prices.
        s: (N,) engagement before each quote (>= 0, not all zero).
        product: (N,) product index in [0, P); every product present.
        cluster: (N,) cluster (experiment) index in [0, G); every cluster present.
        log_s0: hold log s0 at this value and fit m only (None: fit both).
        covariance: compute the CR3 covariance and df (cross-validation skips them).
        absorbed: `y` had a level per cluster taken out (experiment fixed effects): the curve
            parameters' covariance then comes from their Jacobian with both the product and the
            cluster means partialled out (Frisch-Waugh-Lovell), so the levels' estimation is
            accounted for.
        start: (m, log s0) to start the optimiser from instead of the grid search (a refit
            of slightly changed data, e.g. the experiment levels' alternating projections).
    """
    counts = np.bincount(product).astype(np.float64)
    yw = _within(y, product, counts)
    scale = max(float(s.max()), 1e-12)
    lo = (M_BOUNDS[0], np.log(scale / S0_SPAN))
    hi = (M_BOUNDS[1], np.log(scale * S0_SPAN))
    free = log_s0 is None
    if not free:
        x0 = np.array([0.0, log_s0])
    elif start is not None:
        x0 = np.asarray(start, dtype=np.float64)
    else:
        x0 = _start(y, s, product, (lo, hi))
    k = 2 if free else 1

    def unpack(theta: np.ndarray) -> tuple[float, float]:
        return float(theta[0]), float(theta[1]) if free else float(log_s0)

    def resid(theta: np.ndarray) -> np.ndarray:
        return yw - _within(markup_curve(s, *unpack(theta))[0], product, counts)

    def jac(theta: np.ndarray) -> np.ndarray:
        return -_within(markup_curve(s, *unpack(theta))[1][:, :k], product, counts)

    x0 = np.clip(x0[:k], np.add(lo[:k], 1e-6), np.subtract(hi[:k], 1e-6))
    result = optimize.least_squares(resid, x0, jac=jac, bounds=(lo[:k], hi[:k]), method="trf")
    m, ls0 = unpack(result.x)
    curve, deriv = markup_curve(s, m, ls0)
    a = np.bincount(product, y - curve, counts.size) / counts
    residuals = y - a[product] - curve
    vcov, df, adjusted = np.zeros((0, 0)), np.zeros(0), residuals
    if covariance:
        dummies = np.zeros((y.size, counts.size))
        dummies[np.arange(y.size), product] = 1.0
        jac_full = np.column_stack([dummies, deriv[:, :k]])
        vcov, df, adjusted = cluster_vcov(jac_full, residuals, cluster)
        if absorbed:
            partialled = _two_way_within(deriv[:, :k], product, counts, cluster)
            curve_vcov, curve_df, _ = cluster_vcov(partialled, residuals, cluster)
            vcov[counts.size :, counts.size :] = curve_vcov
            df[counts.size :] = curve_df
    at_bound = bool(
        np.any(np.abs(result.x - np.asarray(lo[:k])) < _AT_BOUND)
        or np.any(np.abs(result.x - np.asarray(hi[:k])) < _AT_BOUND)
    )
    return CurveFit(a, m, ls0, residuals, adjusted, vcov, df, not free, at_bound)
