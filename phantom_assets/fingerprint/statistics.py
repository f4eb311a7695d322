"""Two-sample statistics on the divergence gap (DESIGN §5 "Separability report").

Convention: the *agent* sample is the first sample, so ``U`` counts (agent, human) pairs with the
agent gap larger (ties count ½) and ``AUC = U / (n_H · n_A)`` is the probability that a random
agent session has a larger gap than a random human one.

* :func:`mann_whitney` -- scipy's ``mannwhitneyu`` (two-sided): exact null distribution when there
  are no ties and the smaller sample has at most ``exact_max_n`` sessions (scipy's own 'auto'
  rule, stated explicitly so a scipy default change cannot alter reports), otherwise the normal
  approximation with tie correction and continuity correction.
* :func:`bootstrap_auc` -- AUCs of ``B`` resamples drawn within each class. Each resample is a
  vector of multiplicities; with the human gaps sorted once, the number of resampled humans below /
  tied with each agent gap is a cumulative sum looked up by ``searchsorted`` -- O(B·n) per chunk,
  exact with ties, equal to the rank-based AUC of the resampled data.
* :func:`permutation_auc_pvalue` -- two-sided permutation p-value of the AUC: pooled mid-ranks are
  fixed under label permutation, so each permuted U is a sum of ``n_A`` randomly chosen ranks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu, rankdata

logger = logging.getLogger(__name__)

EXACT_MAX_N = 8
_CHUNK_CELLS = 4_000_000  # matrix cells per vectorized chunk (bounds memory)

__all__ = [
    "EXACT_MAX_N",
    "MannWhitney",
    "auc",
    "bootstrap_auc",
    "mann_whitney",
    "permutation_auc_pvalue",
    "roc_curve",
    "weighted_auc",
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


def _resample_counts(rng: np.random.Generator, b: int, n: int) -> np.ndarray:
    draws = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)


def _group_index(groups: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Dense group code per session (each session its own group when ``groups`` is None)."""
    if groups is None:
        return np.arange(n), n
    codes = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    if codes.size != n:
        raise ValueError(f"groups has {codes.size} entries for {n} sessions")
    return codes, int(codes.max()) + 1


def bootstrap_auc(
    human: np.ndarray,
    agent: np.ndarray,
    n_draws: int,
    rng: np.random.Generator,
    *,
    human_groups: np.ndarray | None = None,
    agent_groups: np.ndarray | None = None,
) -> np.ndarray:
    """AUC of ``n_draws`` bootstrap resamples, drawn with replacement within class.

    With ``*_groups`` (e.g. experiment ids) whole groups are resampled -- a cluster bootstrap, as
    one subject's sessions are not independent draws; without them single sessions are.
    """
    h, a = _samples(human, agent)
    h_codes, n_h_groups = _group_index(human_groups, h.size)
    a_codes, n_a_groups = _group_index(agent_groups, a.size)
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws!r}")
    order = np.argsort(h, kind="stable")
    h_sorted = h[order]
    below_idx = np.searchsorted(h_sorted, a, side="left")
    upto_idx = np.searchsorted(h_sorted, a, side="right")
    chunk = max(1, _CHUNK_CELLS // (h.size + a.size + 1))
    out = np.empty(n_draws)
    for start in range(0, n_draws, chunk):  # loop over bootstrap batches
        b = min(chunk, n_draws - start)
        w_h = _resample_counts(rng, b, n_h_groups)[:, h_codes]
        w_a = _resample_counts(rng, b, n_a_groups)[:, a_codes]
        out[start : start + b] = _weighted_auc(w_h[:, order], w_a, below_idx, upto_idx)
    return out


def _weighted_auc(
    w_h_sorted: np.ndarray, w_a: np.ndarray, below_idx: np.ndarray, upto_idx: np.ndarray
) -> np.ndarray:
    """AUC per row for multiplicities ``w_h_sorted`` (humans in sorted order) and ``w_a``."""
    b = w_h_sorted.shape[0]
    cum = np.concatenate([np.zeros((b, 1)), np.cumsum(w_h_sorted, axis=1)], axis=1)
    below = cum[:, below_idx]
    tied = cum[:, upto_idx] - below
    pairs = w_h_sorted.sum(axis=1) * w_a.sum(axis=1)
    return ((below + 0.5 * tied) * w_a).sum(axis=1) / pairs


def weighted_auc(
    human: np.ndarray, agent: np.ndarray, w_h: np.ndarray, w_a: np.ndarray
) -> np.ndarray:
    """AUC of the samples repeated ``w_h`` / ``w_a`` times, one value per row of the weights.

    Row ``b`` equals the rank-based :func:`auc` of ``np.repeat(human, w_h[b])`` vs
    ``np.repeat(agent, w_a[b])``.
    """
    h, a = _samples(human, agent)
    w_h, w_a = np.atleast_2d(w_h).astype(np.float64), np.atleast_2d(w_a).astype(np.float64)
    if w_h.shape[1] != h.size or w_a.shape[1] != a.size or w_h.shape[0] != w_a.shape[0]:
        raise ValueError(
            f"weight shapes {w_h.shape}, {w_a.shape} do not match samples {h.size}, {a.size}"
        )
    order = np.argsort(h, kind="stable")
    h_sorted = h[order]
    below_idx = np.searchsorted(h_sorted, a, side="left")
    upto_idx = np.searchsorted(h_sorted, a, side="right")
    return _weighted_auc(w_h[:, order], w_a, below_idx, upto_idx)


def permutation_auc_pvalue(
    human: np.ndarray, agent: np.ndarray, n_permutations: int, rng: np.random.Generator
) -> float:
    """Two-sided permutation p-value of ``|AUC − ½|``, ``(1 + #extreme) / (1 + B)``."""
    h, a = _samples(human, agent)
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations!r}")
    ranks = rankdata(np.concatenate([a, h]))
    n, n_a = ranks.size, a.size
    scale = n_a * h.size
    observed = abs((ranks[:n_a].sum() - n_a * (n_a + 1) / 2) / scale - 0.5)
    chunk = max(1, _CHUNK_CELLS // n)
    extreme = 0
    for start in range(0, n_permutations, chunk):  # loop over permutation batches
        b = min(chunk, n_permutations - start)
        order = rng.permuted(np.broadcast_to(np.arange(n), (b, n)), axis=1)
        u = ranks[order[:, :n_a]].sum(axis=1) - n_a * (n_a + 1) / 2
        extreme += int(np.sum(np.abs(u / scale - 0.5) >= observed - 1e-12))
    return (1 + extreme) / (1 + n_permutations)


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
