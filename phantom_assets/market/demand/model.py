"""The store's demand from its purchase decisions (docs/method.md#the-stores-demand).

Every session's quoted view is one purchase decision (`features.quote_features`' `decision`: the
quote the market's banks use). Per class, the relative quote r = price / anchor and the engagement
s before the view (in the store's pricing signal, g(s) = 1 − exp(−s/s0) as in the market) explain
whether it bought:

    P(buy | r, s) = π · Φ((μ + β·g(s) − r) / σ),

a valuation V = μ + β·g(s) + σ·ε (× the anchor) of shoppers in the market for the product, a share
π of the decisions (most non-purchases are not about the price: another product, other dates,
just looking). Fitted by maximum likelihood (analytic gradient, a few starts); intervals are
profile-likelihood intervals (`_interval`); the store's replicates (`market.replicates`: a Poisson
bootstrap by experiment, each replicate refitted) are what the market draws its episodes from.

Identification needs price variation at equal engagement -- a randomized price test, as stores
run them: with prices that only rise with engagement, the price and the engagement slope cannot
be told apart (on the pre-v4 demo, g(s) and r correlated at 0.97 and a probit got the price
coefficient's sign wrong 12% of the time). `identification` measures it: the SD of log r within
engagement strata, corr(g(s), r), and the replicates' spread of β and σ; a class is `identified`
only when the variation is there and the fit is determinate. An unidentified store's market
falls back to the revealed-preference calibration (`revealed.revealed_preference`), declared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from phantom_assets.market.replicates import session_multiplicities

__all__ = [
    "MAX_SIGMA",
    "PARAMETERS",
    "ClassDemand",
    "DemandFitParams",
    "conversion_probability",
    "fit_class",
    "maximum_likelihood",
    "within_stratum_sd",
]

PARAMETERS: tuple[str, ...] = ("mu", "beta", "sigma", "in_market")
"""The model's parameters, in the order every array of them uses."""
MAX_SIGMA = 1.0
"""A valuation spread above the anchor itself is no demand curve: the fit is indeterminate."""
BOUNDS: tuple[tuple[float, float], ...] = ((-10.0, 10.0), (-10.0, 10.0), (-7.0, 3.0), (-12.0, 12.0))
"""The search box of θ = (μ, β, log σ, logit π); an estimate on its edge is indeterminate."""
MAX_AT_BOUND = 0.05
"""A class whose replicates run to the box's edge more often than this is not identified."""
_LOG_FLOOR = -700.0


@dataclass(frozen=True)
class DemandFitParams:
    """Knobs of the demand fit.

    Attributes:
        replicates: store replicates (bootstrap refits) for the intervals.
        level: two-sided level of the intervals.
        min_decisions, min_purchases, min_experiments: below these a class is not identified.
        min_price_variation: least SD of log r at equal engagement (a price test) for the price
            response to be identified.
    """

    replicates: int = 200
    level: float = 0.95
    min_decisions: int = 100
    min_purchases: int = 20
    min_experiments: int = 20
    min_price_variation: float = 0.03

    def __post_init__(self) -> None:
        """Raises ValueError naming a bad value."""
        if self.replicates < 2 or not 0.0 < self.level < 1.0 or self.min_price_variation < 0:
            raise ValueError(
                f"need replicates >= 2, level in (0, 1), min_price_variation >= 0: "
                f"{self.replicates}, {self.level}, {self.min_price_variation}"
            )


def conversion_probability(
    params: np.ndarray | tuple[float, ...], g: np.ndarray, ratio: np.ndarray
) -> np.ndarray:
    """P(buy) = π·Φ((μ + β·g − r)/σ) for `params` = (μ, β, σ, π)."""
    mu, beta, sigma, in_market = (float(x) for x in params)
    return in_market * special.ndtr((mu + beta * np.asarray(g) - np.asarray(ratio)) / sigma)


def _objective(
    theta: np.ndarray, g: np.ndarray, r: np.ndarray, bought: np.ndarray, weight: np.ndarray
) -> tuple[float, np.ndarray]:
    """Weighted negative log-likelihood and its gradient in θ = (μ, β, log σ, logit π)."""
    mu, beta, log_sigma, logit_pi = theta
    sigma = math.exp(log_sigma)
    z = (mu + beta * g - r) / sigma
    log_cdf = np.maximum(special.log_ndtr(z), _LOG_FLOOR)
    log_pi = -math.log1p(math.exp(-logit_pi)) if logit_pi > -30 else logit_pi
    log_p = log_pi + log_cdf
    p = np.exp(log_p)
    log_q = np.log1p(-np.minimum(p, 1.0 - 1e-15))
    nll = -float(np.sum(weight * np.where(bought, log_p, log_q)))
    # d log p / dz = φ/Φ (Mills); d log(1 − p)/dz = −p/(1 − p)·φ/Φ.
    mills = np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - log_cdf)
    dz = weight * np.where(bought, mills, -p / np.exp(log_q) * mills)
    dpi = weight * np.where(bought, 1.0, -p / np.exp(log_q))
    pi_share = 1.0 / (1.0 + math.exp(logit_pi)) if logit_pi > -30 else 1.0  # 1 − π
    grad = -np.array(
        [dz.sum() / sigma, (dz * g).sum() / sigma, -(dz * z).sum(), dpi.sum() * pi_share]
    )
    return nll, grad


def _theta(params: np.ndarray) -> np.ndarray:
    mu, beta, sigma, in_market = params
    share = min(max(in_market, 1e-6), 1 - 1e-6)
    return np.array([mu, beta, math.log(sigma), math.log(share / (1 - share))])


def _params(theta: np.ndarray) -> np.ndarray:
    return np.array([theta[0], theta[1], math.exp(theta[2]), special.expit(theta[3])])


def maximum_likelihood(
    g: np.ndarray,
    r: np.ndarray,
    bought: np.ndarray,
    weight: np.ndarray | None = None,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, bool]:
    """The maximum-likelihood (μ, β, σ, π) of weighted decisions, and whether it converged.

    Args:
        g: (n,) g(s) of each decision.
        r: (n,) relative quote.
        bought: (n,) purchases.
        weight: (n,) decision weights (replicate multiplicities; default 1).
        start: (4,) a starting point (a replicate starts from the point estimate); else a few
            data-driven starts and the best.
    """
    g, r = np.asarray(g, np.float64), np.asarray(r, np.float64)
    bought = np.asarray(bought, dtype=bool)
    weight = np.ones(g.size) if weight is None else np.asarray(weight, np.float64)
    share = float(np.average(bought, weights=weight)) if weight.sum() > 0 else 0.5
    center = float(np.average(r, weights=weight)) if weight.sum() > 0 else 1.0
    starts = (
        [start]
        if start is not None
        else [
            np.array([center + 0.2, 0.0, 0.3, min(max(2 * share, 0.05), 0.95)]),
            np.array([center, 0.5, 0.15, min(max(1.5 * share, 0.05), 0.95)]),
            np.array([center + 0.5, 0.0, 0.6, 0.9]),
        ]
    )
    best: optimize.OptimizeResult | None = None
    for guess in starts:  # three starts at most
        result = optimize.minimize(
            _objective,
            _theta(np.asarray(guess, np.float64)),
            args=(g, r, bought, weight),
            jac=True,
            method="L-BFGS-B",
            bounds=[(-10, 10), (-10, 10), (-7, 3), (-12, 12)],
        )
        if best is None or result.fun < best.fun:
            best = result
    assert best is not None
    return _params(best.x), bool(best.success)


def within_stratum_sd(values: np.ndarray, engagement: np.ndarray, max_exact: int = 20) -> float:
    """Pooled SD of `values` within engagement strata (each distinct s when there are at most
    `max_exact`, else deciles): the variation left at equal engagement."""
    values, engagement = np.asarray(values, np.float64), np.asarray(engagement, np.float64)
    distinct = np.unique(engagement)
    if distinct.size <= max_exact:
        stratum = np.searchsorted(distinct, engagement)
    else:
        edges = np.unique(np.quantile(engagement, np.linspace(0.1, 0.9, 9)))
        stratum = np.searchsorted(edges, engagement, side="right")
    sizes = np.bincount(stratum)
    means = np.bincount(stratum, weights=values) / np.maximum(sizes, 1)
    dof = values.size - int((sizes > 0).sum())
    if dof < 1:
        return math.nan
    return math.sqrt(float(np.sum((values - means[stratum]) ** 2)) / dof)


@dataclass(frozen=True)
class ClassDemand:
    """One class's demand fit.

    Attributes:
        actor: "human" or "agent".
        estimate: (4,) point estimates of `PARAMETERS`.
        ci: (2, 4) interval from the replicates' spread (`_interval`; NaN without replicates).
        replicates: (B, 4) the replicates' estimates (NaN where a refit failed).
        identified: price response and engagement slope determinate (module docstring).
        reason: why not, in words ("" when identified).
        diagnostics: n_decisions, n_purchases, n_experiments, price_variation (SD of log r at
            equal engagement), corr_g_r, beta_sd and sigma_sd (over the replicates), converged.
        decisions: (g, r, bought) the class was fitted on (for `region_p`; not written).
    """

    actor: str
    estimate: np.ndarray
    ci: np.ndarray
    replicates: np.ndarray
    identified: bool
    reason: str
    diagnostics: dict[str, Any] = field(default_factory=dict)
    decisions: tuple[np.ndarray, np.ndarray, np.ndarray] = field(
        default=(np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool)), repr=False
    )

    def region_p(self, values: np.ndarray) -> float:
        """p of the likelihood-ratio test that the parameters are `values` ((4,) `PARAMETERS`):
        the χ²(4) tail of the deviance between them and the estimate on the class's decisions
        (the joint confidence region: `values` lie in the 95% region iff p > 0.05)."""
        if not np.all(np.isfinite(self.estimate)) or self.decisions[0].size == 0:
            return math.nan
        weight = np.ones(self.decisions[0].size)
        at = _objective(_theta(np.asarray(values, np.float64)), *self.decisions, weight)[0]
        best = _objective(_theta(self.estimate), *self.decisions, weight)[0]
        return float(stats.chi2.sf(2.0 * max(at - best, 0.0), len(PARAMETERS)))

    def to_json(self) -> dict[str, Any]:
        """The class's entry of `demand.json` (non-finite numbers become null)."""

        def num(x: float) -> float | None:
            return float(x) if math.isfinite(float(x)) else None

        return {
            "identified": self.identified,
            "reason": self.reason,
            **{name: num(self.estimate[i]) for i, name in enumerate(PARAMETERS)},
            **{f"{name}_ci_low": num(self.ci[0, i]) for i, name in enumerate(PARAMETERS)},
            **{f"{name}_ci_high": num(self.ci[1, i]) for i, name in enumerate(PARAMETERS)},
            **{key: num(v) if isinstance(v, float) else v for key, v in self.diagnostics.items()},
        }


PROFILE_STEPS = np.array([0.05, 0.05, 0.1, 0.25])
"""First step out from the estimate, per coordinate of θ, when searching an interval's end."""


def _profile(
    data: tuple[np.ndarray, np.ndarray, np.ndarray], j: int, value: float, start: np.ndarray
) -> tuple[float, np.ndarray]:
    """(min negative log-likelihood with θ_j held at `value`, the other coordinates there)."""
    g, r, bought = data
    weight = np.ones(g.size)
    free = [i for i in range(4) if i != j]

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta = np.empty(4)
        theta[j], theta[free] = value, x
        nll, grad = _objective(theta, g, r, bought, weight)
        return nll, grad[free]

    # The likelihood has a ridge with two ends (few in the market / a wide valuation spread):
    # start from the neighbouring profile point and from both ends, keep the best.
    share = float(np.mean(bought)) if bought.size else 0.5
    ends = (
        np.array([np.mean(r) + 0.1, 0.3, 0.2, min(max(2.0 * share, 0.05), 0.95)]),
        np.array([np.mean(r) - 0.2, 0.3, 0.6, 0.99]),
    )
    starts = [start[free], *(_theta(end)[free] for end in ends)]
    result = min(
        (
            optimize.minimize(
                objective, x0, jac=True, method="L-BFGS-B", bounds=[BOUNDS[i] for i in free]
            )
            for x0 in starts
        ),
        key=lambda fit: fit.fun,
    )
    theta = np.empty(4)
    theta[j], theta[free] = value, result.x
    return float(result.fun), theta


def _profile_end(
    data: tuple[np.ndarray, np.ndarray, np.ndarray],
    theta_hat: np.ndarray,
    j: int,
    direction: float,
    floor: float,
    critical: float,
) -> float:
    """θ_j where the profile negative log-likelihood first exceeds `floor` + `critical`, going
    in `direction` from the estimate (the search box's edge if it never does)."""
    edge = BOUNDS[j][1] if direction > 0 else BOUNDS[j][0]
    inside, start, step = float(theta_hat[j]), theta_hat, PROFILE_STEPS[j]
    while True:  # doubling steps: a dozen profiles at most
        outside = inside + direction * step
        if (outside - edge) * direction >= 0:
            value, _ = _profile(data, j, edge, start)
            if value - floor < critical:
                return edge
            outside = edge
        value, theta = _profile(data, j, outside, start)
        if value - floor >= critical:
            break
        inside, start, step = outside, theta, 2.0 * step
    return float(
        optimize.brentq(
            lambda t: _profile(data, j, t, start)[0] - floor - critical,
            min(inside, outside),
            max(inside, outside),
            xtol=1e-4,
        )
    )


def _interval(
    estimate: np.ndarray, data: tuple[np.ndarray, np.ndarray, np.ndarray], level: float
) -> np.ndarray:
    """(2, 4) profile-likelihood intervals: each parameter's values whose profile deviance is
    within the χ²(1) `level` quantile, found in the fitting scale θ = (μ, β, log σ, logit π) and
    mapped back. Along the likelihood's ridge between "few in the market" and "a wide valuation
    spread" (a price test of ±20% cannot always tell them apart at a few hundred decisions) the
    replicates' spread under-covered badly (μ 0.57 on 7 demo-world stores whose estimate ran to
    π = 1); the profile follows the ridge."""
    if not np.all(np.isfinite(estimate)):
        return np.full((2, 4), math.nan)
    theta_hat = _theta(estimate)
    floor = _objective(theta_hat, *data, np.ones(data[0].size))[0]
    critical = float(stats.chi2.ppf(level, 1)) / 2.0
    ends = np.array(
        [
            [_profile_end(data, theta_hat, j, direction, floor, critical) for j in range(4)]
            for direction in (-1.0, 1.0)
        ]
    )
    return np.vstack([_params(ends[0]), _params(ends[1])])


def _at_bound(estimates: np.ndarray) -> float:
    """Share of the rows of (k, 4) estimates with a parameter on the search box's edge."""
    theta = np.column_stack(
        [
            estimates[:, 0],
            estimates[:, 1],
            np.log(estimates[:, 2]),
            special.logit(np.clip(estimates[:, 3], 1e-12, 1 - 1e-12)),
        ]
    )
    low, high = np.array(BOUNDS).T
    high[3] = np.inf  # π → 1 (every decision in the market) is a value, not an indeterminacy
    edge = (theta <= low + 1e-3) | (theta >= high - 1e-3)
    return float(np.mean(edge.any(axis=1)))


def _why_not(diagnostics: dict[str, Any], ci: np.ndarray, params: DemandFitParams) -> str:
    """The first reason a class is not identified ("" when it is)."""
    sigma_high = float(ci[1, PARAMETERS.index("sigma")])
    checks = (
        (
            diagnostics["n_decisions"] < params.min_decisions,
            f"{diagnostics['n_decisions']} decisions < {params.min_decisions}",
        ),
        (
            diagnostics["n_purchases"] < params.min_purchases,
            f"{diagnostics['n_purchases']} purchases < {params.min_purchases}",
        ),
        (
            diagnostics["n_experiments"] < params.min_experiments,
            f"{diagnostics['n_experiments']} experiments < {params.min_experiments}",
        ),
        (
            not diagnostics["price_variation"] >= params.min_price_variation,
            f"no price variation at equal engagement (SD of log price/anchor "
            f"{diagnostics['price_variation']:.3g} < {params.min_price_variation:g}): the store "
            f"runs no price test, so price and engagement effects cannot be told apart",
        ),
        (not diagnostics["converged"], "the maximum-likelihood fit did not converge"),
        (
            not diagnostics["beta_sd"] > 0 or not diagnostics["sigma_sd"] > 0,
            "the replicates do not move β or σ: the likelihood is flat in them",
        ),
        (
            diagnostics["at_bound"] > MAX_AT_BOUND,
            f"the fit runs to the edge of the parameter space in {diagnostics['at_bound']:.0%} of "
            f"the replicates (the model does not describe these decisions, or they carry no "
            f"information on a parameter)",
        ),
        (
            not sigma_high <= MAX_SIGMA,
            f"the valuation spread is indeterminate (σ up to {sigma_high:.3g} × the anchor)",
        ),
    )
    return next((why for failed, why in checks if failed), "")


def fit_class(
    actor: str,
    g: np.ndarray,
    engagement: np.ndarray,
    r: np.ndarray,
    bought: np.ndarray,
    experiments: np.ndarray,
    params: DemandFitParams,
) -> ClassDemand:
    """Fit one class's decisions: the point estimate, its replicates and the diagnostics.

    Args:
        actor: the class.
        g: (n,) g(s) at each decision.
        engagement: (n,) s at each decision (for the strata of the price-variation check).
        r: (n,) relative quote.
        bought: (n,) purchases.
        experiments: (n,) each decision's experiment id (the replicates resample them).
        params: the fit's knobs.
    """

    n = int(np.size(r))
    estimate, converged = (
        maximum_likelihood(g, r, bought) if n and bought.any() else (np.full(4, math.nan), False)
    )
    replicates = np.full((params.replicates, 4), math.nan)
    if converged:
        weights = session_multiplicities(experiments.tolist(), params.replicates)
        for b in range(params.replicates):  # one refit per replicate, warm-started
            fit, ok = maximum_likelihood(g, r, bought, weights[b], start=estimate)
            replicates[b] = fit if ok else math.nan
    finite = replicates[np.isfinite(replicates).all(axis=1)]
    ci = _interval(estimate, (g, r, bought), params.level)
    log_r = np.log(np.maximum(r, 1e-12))
    corr = float(np.corrcoef(g, r)[0, 1]) if n > 2 and np.std(g) > 0 and np.std(r) > 0 else None
    diagnostics: dict[str, Any] = {
        "n_decisions": n,
        "n_purchases": int(np.sum(bought)),
        "n_experiments": int(np.unique(experiments).size),
        "price_variation": within_stratum_sd(log_r, engagement) if n else math.nan,
        "corr_g_r": corr,
        "beta_sd": float(np.std(finite[:, 1], ddof=1)) if finite.shape[0] >= 2 else math.nan,
        "sigma_sd": float(np.std(finite[:, 2], ddof=1)) if finite.shape[0] >= 2 else math.nan,
        "failed_replicates": int(params.replicates - finite.shape[0]),
        "at_bound": _at_bound(np.vstack([estimate[None, :], finite])) if converged else 1.0,
        "converged": converged,
    }
    reason = _why_not(diagnostics, ci, params)
    data = (np.asarray(g, np.float64), np.asarray(r, np.float64), np.asarray(bought, bool))
    return ClassDemand(actor, estimate, ci, replicates, not reason, reason, diagnostics, data)
