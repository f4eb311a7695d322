"""Confidence interval for the reported out-of-fold AUC (docs/method.md#separability-report).

Target. The reported ``auc`` is the out-of-fold AUC over all labeled sessions. It is biased --
under no difference it sits below ½, because folds holding more agents score with a noisier
held-out agent kernel -- and its bias depends on the numbers of experiments and sessions and on
the fold design. The interval therefore targets

    θ_n = E[AUC], the expected value of the reported AUC over repeated studies with the same
    numbers of human and agent experiments, drawn from the same experiment populations (same
    sessions-per-experiment layout), scored with the same folds and κ,

not a population AUC that no finite study estimates without bias.

Method ("experiment_cluster_bootstrap_refit_centred"). Experiments are resampled with
replacement *within class* (a subject's sessions move together), the fold kernels are *refitted*
on every draw with the multiplicities as weights (a duplicated experiment keeps its fold, so it
never scores against itself) and the AUC is recomputed with the multiplicities as pair weights.
Resampling changes the kernels' effective sample size, so the bootstrap distribution is shifted
relative to the observed AUC; only its *shape* is used: with b = θ̂ − mean(θ*) the interval is
``[q_{α/2}(θ*) + b, q_{1−α/2}(θ*) + b]`` clipped to [0, 1] -- θ̂ plus the centred quantiles of
θ*. Coverage of θ_n is checked by simulation (:mod:`phantom_assets.calibration.separability`).
"""

from __future__ import annotations

import logging

import numpy as np

from phantom_assets.fingerprint.refit_core import SessionCounts, batch_size, oof_aucs

logger = logging.getLogger(__name__)

AUC_CI_METHOD = "experiment_cluster_bootstrap_refit_centred"

__all__ = ["AUC_CI_METHOD", "auc_interval", "cluster_bootstrap_aucs"]


def _multiplicities(data: SessionCounts, b: int, rng: np.random.Generator) -> np.ndarray:
    """``(b, n_sessions)`` multiplicities: experiments drawn with replacement within class."""
    n_xp = int(data.experiment.max()) + 1
    xp_agent = np.zeros(n_xp, dtype=bool)
    xp_agent[data.experiment] = data.is_agent
    present = np.zeros(n_xp, dtype=bool)
    present[data.experiment] = True
    weights = np.zeros((b, n_xp))
    for cls in (False, True):  # the two classes, resampled separately
        members = np.flatnonzero(present & (xp_agent == cls))
        draws = members[rng.integers(0, members.size, size=(b, members.size))]
        flat = (np.arange(b)[:, None] * n_xp + draws).ravel()
        weights += np.bincount(flat, minlength=b * n_xp).reshape(b, n_xp)
    return weights[:, data.experiment]


def cluster_bootstrap_aucs(
    data: SessionCounts, *, kappa: float, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Out-of-fold AUCs of ``n_draws`` experiment-cluster bootstrap draws, kernels refitted.

    Args:
        data: Labeled sessions with their experiments (:func:`session_counts`).
        kappa: Additive smoothing κ (> 0).
        n_draws: Number of bootstrap draws.
        rng: Random generator.

    Raises:
        ValueError: If κ <= 0, ``n_draws`` < 1 or a class has no session.
    """
    if kappa <= 0:
        raise ValueError(f"the refit bootstrap needs kappa > 0, got {kappa!r}")
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws!r}")
    n_agent = int(data.is_agent.sum())
    if n_agent == 0 or n_agent == data.n_sessions:
        raise ValueError(f"both classes need sessions; got n_agent={n_agent} of {data.n_sessions}")
    labels = data.is_agent.astype(np.int64)[None, :]
    out = np.empty(n_draws)
    step = batch_size(data)
    for start in range(0, n_draws, step):  # loop over bootstrap batches
        b = min(step, n_draws - start)
        weights = _multiplicities(data, b, rng)
        out[start : start + b] = oof_aucs(data, np.repeat(labels, b, axis=0), kappa, weights)
    return out


def auc_interval(observed: float, boot: np.ndarray, confidence: float) -> tuple[float, float]:
    """θ̂ plus the centred bootstrap quantiles, clipped to [0, 1] (see module docstring).

    Args:
        observed: The reported AUC θ̂.
        boot: Bootstrap AUCs θ* (:func:`cluster_bootstrap_aucs`).
        confidence: Nominal coverage in (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    boot = np.asarray(boot, dtype=np.float64)
    if boot.size == 0 or not np.isfinite(boot).all():
        raise ValueError(f"boot must be a non-empty finite array, got size {boot.size}")
    tail = (1.0 - confidence) / 2
    shift = observed - float(boot.mean())
    low, high = np.quantile(boot, [tail, 1.0 - tail]) + shift
    return float(np.clip(low, 0.0, 1.0)), float(np.clip(high, 0.0, 1.0))
