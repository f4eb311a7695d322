"""The log-price model with product fixed effects and its experiment-clustered covariance.

Model of a view quote q of product i with engagement s before the view:

    log p_q = a_i + log(1 + m·g(s_q)) + e_q,    g(s) = 1 − exp(−s/s0),

fitted by nonlinear least squares with the product intercepts a_i profiled out (variable
projection: for given (m, log s0) each a_i is its product's mean of log p − log(1 + m·g)), from
a coarse grid over s0 (m solved linearly per grid point) refined by `scipy.optimize.least_squares`.
The covariance of (a, m, log s0) is the CR1 sandwich clustered by experiment,
`G/(G−1)·(N−1)/(N−K) · B⁻¹ (Σ_g U_g U_gᵀ) B⁻¹` with `B = JᵀJ` and `U_g` the cluster score sums;
intervals use t with G − 1 degrees of freedom (`cluster_t_interval`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy import optimize, stats

__all__ = [
    "CurveFit",
    "cluster_means",
    "cluster_ratio",
    "cluster_t_interval",
    "fit_curve",
    "markup_curve",
]

M_BOUNDS = (-0.95, 50.0)  # 1 + m·g must stay positive; m > 50 is not a markup
S0_SPAN = 1e3  # log s0 is searched within [max(s)/S0_SPAN, max(s)·S0_SPAN]
_GRID = 24  # grid points over log s0 for the starting value
_AT_BOUND = 1e-4  # distance (in parameter units) that counts as sitting on a bound


@dataclass(frozen=True)
class CurveFit:
    """A fitted price curve.

    Attributes:
        log_anchor: (P,) product intercepts a_i (log of the zero-engagement quote).
        markup: m.
        log_s0: log s0 (fixed, not fitted, when `s0_fixed`).
        residuals: (N,) log-price residuals.
        vcov: CR1 covariance of (a_1..a_P, m[, log s0]) -- log s0 only when fitted.
        s0_fixed: Whether s0 was held at a given value.
        at_bound: Whether the optimum sits on a bound of m or log s0 (not identified).
        n_clusters: Clusters (experiments) in the data.
    """

    log_anchor: np.ndarray
    markup: float
    log_s0: float
    residuals: np.ndarray
    vcov: np.ndarray
    s0_fixed: bool
    at_bound: bool
    n_clusters: int


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


def _start(y: np.ndarray, s: np.ndarray, product: np.ndarray, counts: np.ndarray, bounds):
    """Best (m, log s0) on a grid of log s0 with m from the linearised model."""
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
) -> CurveFit:
    """Fit the model by profiled NLS; CR1 covariance clustered by `cluster`.

    Args:
        y: (N,) log prices.
        s: (N,) engagement before each quote (>= 0, not all zero).
        product: (N,) product index in [0, P); every product present.
        cluster: (N,) cluster (experiment) index in [0, G); every cluster present.
        log_s0: hold log s0 at this value and fit m only (None: fit both).
    """
    counts = np.bincount(product).astype(np.float64)
    yw = _within(y, product, counts)
    scale = max(float(s.max()), 1e-12)
    lo = (M_BOUNDS[0], np.log(scale / S0_SPAN))
    hi = (M_BOUNDS[1], np.log(scale * S0_SPAN))
    free = log_s0 is None
    x0 = _start(y, s, product, counts, (lo, hi)) if free else np.array([0.0, log_s0])
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
    n_clusters = int(cluster.max()) + 1
    vcov = _cr1(product, deriv[:, :k], residuals, cluster, counts, n_clusters)
    at_bound = bool(
        np.any(np.abs(result.x - np.asarray(lo[:k])) < _AT_BOUND)
        or np.any(np.abs(result.x - np.asarray(hi[:k])) < _AT_BOUND)
    )
    return CurveFit(a, m, ls0, residuals, vcov, not free, at_bound, n_clusters)


def _cr1(
    product: np.ndarray,
    deriv: np.ndarray,
    residuals: np.ndarray,
    cluster: np.ndarray,
    counts: np.ndarray,
    n_clusters: int,
) -> np.ndarray:
    """CR1 sandwich of (a, θ) for residual Jacobian J = −[product dummies, ∂f/∂θ]."""
    n_products, k = counts.size, deriv.shape[1]
    n = residuals.size
    cross = np.column_stack([np.bincount(product, col, n_products) for col in deriv.T])
    bread = np.block([[np.diag(counts), cross], [cross.T, deriv.T @ deriv]])
    shape = (n_clusters, n_products)
    anchor_scores = sp.csr_matrix((residuals, (cluster, product)), shape=shape)
    curve_scores = np.column_stack(
        [np.bincount(cluster, col * residuals, n_clusters) for col in deriv.T]
    )
    scores = sp.hstack([anchor_scores, sp.csr_matrix(curve_scores)]).tocsr()
    meat = (scores.T @ scores).toarray()
    inv = np.linalg.pinv(bread)
    dof = n_products + k
    factor = n_clusters / max(n_clusters - 1, 1) * (n - 1) / max(n - dof, 1)
    return factor * inv @ meat @ inv


def cluster_ratio(
    numerator: np.ndarray, denominator: np.ndarray, cluster: np.ndarray
) -> tuple[float, float, int]:
    """Ratio of sums Σx/Σn with its CR1 (linearised) standard error over clusters.

    Returns:
        (ratio, standard error, number of clusters); the SE is NaN with fewer than 2 clusters.
    """
    _, index = np.unique(cluster, return_inverse=True)
    n_clusters = int(index.max()) + 1 if index.size else 0
    total = float(denominator.sum())
    ratio = float(numerator.sum()) / total if total > 0 else float("nan")
    if n_clusters < 2:
        return ratio, float("nan"), n_clusters
    u = np.bincount(index, numerator - ratio * denominator, n_clusters)
    se = float(np.sqrt(n_clusters / (n_clusters - 1) * (u @ u)) / total)
    return ratio, se, n_clusters


def cluster_means(
    values: np.ndarray, group: np.ndarray, cluster: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-group means of `values` with CR1 standard errors clustered by `cluster`.

    Returns:
        (means, standard errors, clusters per group), each (n_groups,); SE NaN below 2 clusters.
    """
    n = np.bincount(group, minlength=n_groups).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(group, values, n_groups) / n
    _, pair = np.unique(group.astype(np.int64) * (int(cluster.max()) + 1) + cluster,
                        return_inverse=True)  # fmt: skip
    pair_group = np.zeros(int(pair.max()) + 1, dtype=np.int64)
    pair_group[pair] = group
    u = np.bincount(pair, values - mean[group])
    g = np.bincount(pair_group, minlength=n_groups).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = (
            np.sqrt(np.where(g >= 2, g / (g - 1), np.nan) * np.bincount(pair_group, u**2, n_groups))
            / n
        )
    return mean, se, g


def cluster_t_interval(
    estimate: np.ndarray | float, se: np.ndarray | float, n_clusters: np.ndarray | int, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """estimate ± t_{G−1} · se (NaN where G < 2 or se is not finite)."""
    df = np.asarray(n_clusters, dtype=np.float64) - 1.0
    with np.errstate(invalid="ignore"):
        half = stats.t.ppf(0.5 + level / 2.0, np.where(df >= 1, df, np.nan)) * np.asarray(se)
    return np.asarray(estimate) - half, np.asarray(estimate) + half
