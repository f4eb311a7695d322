"""Human-vs-agent kernel divergence (docs/method.md#separability-report).

D(H‖A) = Σ_a π_H(a) · KL(T̂_H[a] ‖ T̂_A[a]) with π_H the human state-visit shares (source-row
counts) and T̂ the κ-smoothed class kernels. It is reported on all eligible labeled sessions as a
descriptive effect size; its test (``kernel_divergence_p``) is the experiment-level refit
permutation test of :mod:`refit_permutation`, whose null permutes experiments, not sessions
(permuting the sessions of clustered experiments rejects 10–35% of the time under a subject
effect).
"""

from __future__ import annotations

import numpy as np

from phantom_assets.fingerprint.encoding import N_STATES
from phantom_assets.fingerprint.kernels import probs_from_counts

__all__ = ["class_counts", "kernel_divergence"]


def kernel_divergence(
    human_counts: np.ndarray, agent_counts: np.ndarray, kappa: float
) -> np.ndarray:
    """D(H‖A) for (stacks of) ``(..., S, S)`` count matrices, weighted by human row visits."""
    p_h = probs_from_counts(human_counts, kappa)
    p_a = probs_from_counts(agent_counts, kappa)
    visits = np.asarray(human_counts, dtype=np.float64).sum(axis=-1)
    weights = visits / np.maximum(visits.sum(axis=-1, keepdims=True), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p_h > 0, p_h * (np.log(p_h) - np.log(p_a)), 0.0)
    return (weights * terms.sum(axis=-1)).sum(axis=-1)


def class_counts(
    session: np.ndarray, pair: np.ndarray, count: np.ndarray, weight: np.ndarray, label: np.ndarray
) -> np.ndarray:
    """``(2, S, S)`` class transition counts (0 = human, 1 = agent) of sparse session counts.

    Args:
        session: Session index of each sparse count.
        pair: ``src * S + dst`` of each count.
        count: The counts.
        weight: Per session weight (0 for sessions that fit no kernel).
        label: Per session class (0 human, 1 agent).
    """
    cells = N_STATES * N_STATES
    key = np.asarray(label, dtype=np.int64)[session] * cells + pair
    return np.bincount(key, weights=count * weight[session], minlength=2 * cells).reshape(
        2, N_STATES, N_STATES
    )
