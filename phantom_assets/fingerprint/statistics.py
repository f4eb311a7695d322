"""Two-sample statistics on the divergence gap (docs/method.md#separability-report).

Convention: the *agent* sample is the first sample, so ``U`` counts (agent, human) pairs with the
agent gap larger (ties count ½) and ``AUC = U / (n_H · n_A)`` is the probability that a random
agent session has a larger gap than a random human one.

* :func:`mann_whitney` -- scipy's ``mannwhitneyu`` (two-sided): exact null distribution when there
  are no ties and the smaller sample has at most ``exact_max_n`` sessions (scipy's own 'auto'
  rule, stated explicitly so a scipy default change cannot alter reports), otherwise the normal
  approximation with tie correction and continuity correction.
* :func:`roc_curve` -- ROC points of "agent iff gap >= threshold".
* :func:`weighted_row_auc` -- the AUC of many rows of gaps at once, sessions weighted by
  multiplicities (a bootstrap's copies); one sort per row, ties at mid-rank.

These treat sessions as independent. Sessions of one experiment are clustered and out-of-fold gaps
share fold kernels, so the Mann–Whitney p is *descriptive* (anti-conservative under clustering);
the calibrated test and interval are in :mod:`refit_permutation` / :mod:`refit_bootstrap`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu, rankdata

logger = logging.getLogger(__name__)

EXACT_MAX_N = 8

__all__ = [
    "EXACT_MAX_N",
    "MannWhitney",
    "auc",
    "mann_whitney",
    "roc_curve",
    "weighted_row_auc",
]


@dataclass(frozen=True)
class MannWhitney:
    """Result of :func:`mann_whitney` (agent = first sample)."""

    u_statistic: float
    p_value: float
    method: str
    auc: float


def _samples(human: np.ndarray, agent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.asarray(human, dtype=np.float64).ravel()
    a = np.asarray(agent, dtype=np.float64).ravel()
    if h.size == 0 or a.size == 0:
        raise ValueError(f"both classes need sessions; got n_human={h.size}, n_agent={a.size}")
    if np.isnan(h).any() or np.isnan(a).any():
        raise ValueError("gaps contain NaN; drop them before testing")
    return h, a


def auc(human: np.ndarray, agent: np.ndarray) -> float:
    """Rank-based AUC = U_agent / (n_H · n_A), ties counted ½."""
    h, a = _samples(human, agent)
    ranks = rankdata(np.concatenate([a, h]))
    u = ranks[: a.size].sum() - a.size * (a.size + 1) / 2
    return float(u / (a.size * h.size))


def mann_whitney(
    human: np.ndarray, agent: np.ndarray, exact_max_n: int = EXACT_MAX_N
) -> MannWhitney:
    """Two-sided Mann–Whitney U test of agent vs human gaps (see module docstring)."""
    h, a = _samples(human, agent)
    pooled = np.concatenate([a, h])
    ties = np.unique(pooled).size < pooled.size
    method = "exact" if (not ties and min(h.size, a.size) <= exact_max_n) else "asymptotic"
    res = mannwhitneyu(a, h, alternative="two-sided", method=method, use_continuity=True)
    u = float(res.statistic)
    return MannWhitney(u, float(res.pvalue), method, u / (a.size * h.size))


def weighted_row_auc(gaps: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUC per row: P(agent gap > human gap) + ½ P(tie), pairs weighted by multiplicities.

    With unit weights this is the rank-based AUC = U / (n_H · n_A) with mid-ranks for ties.
    """
    b, n = gaps.shape
    order = np.argsort(gaps, axis=1, kind="stable")
    g = np.take_along_axis(gaps, order, axis=1)
    agent = np.take_along_axis(labels, order, axis=1).astype(bool)
    w = np.take_along_axis(np.broadcast_to(weights, gaps.shape), order, axis=1)
    starts = np.ones((b, n), dtype=bool)
    starts[:, 1:] = g[:, 1:] != g[:, :-1]
    group = np.cumsum(starts.ravel()) - 1  # tie groups, numbered across rows
    n_groups = int(group[-1]) + 1 if group.size else 0
    h_in = np.bincount(group, weights=(w * ~agent).ravel(), minlength=n_groups)
    a_in = np.bincount(group, weights=(w * agent).ravel(), minlength=n_groups)
    row_of_group = np.repeat(np.arange(b), starts.sum(axis=1))
    h_before = np.cumsum(h_in) - h_in
    h_before -= h_before[group.reshape(b, n)[:, 0]][row_of_group]
    u = np.bincount(row_of_group, weights=a_in * (h_before + 0.5 * h_in), minlength=b)
    w_h = (w * ~agent).sum(axis=1)
    w_a = (w * agent).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return u / (w_h * w_a)


def roc_curve(human: np.ndarray, agent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ROC points ``(fpr, tpr)`` of "agent iff gap >= threshold", thresholds from high to low.

    Tied gaps form one step (a diagonal segment), so the trapezoid area equals :func:`auc`.
    """
    h, a = _samples(human, agent)
    values = np.concatenate([a, h])
    positive = np.concatenate([np.ones(a.size), np.zeros(h.size)])
    thresholds, inverse = np.unique(-values, return_inverse=True)  # ascending -gap = descending gap
    tp = np.bincount(inverse, weights=positive, minlength=thresholds.size)
    fp = np.bincount(inverse, weights=1.0 - positive, minlength=thresholds.size)
    tpr = np.concatenate([[0.0], np.cumsum(tp) / a.size])
    fpr = np.concatenate([[0.0], np.cumsum(fp) / h.size])
    return fpr, tpr
