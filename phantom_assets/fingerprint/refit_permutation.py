"""Experiment-level refit permutation tests of separability (docs/method.md#separability-report).

Why a test sample. Sessions of one experiment share a subject's habits (they are clustered), and
the number of sessions per experiment differs by class (an agent splits a task into several
sessions). Permuting labels between whole experiments of different sizes changes each class's
session count, and the out-of-fold AUC's null distribution depends on that count, so experiments
of the full data are *not* exchangeable (size reveals the label). The tests therefore run on a
**test sample of exactly one session per labeled experiment**, picked without looking at the data:
the sessions of an experiment are ordered by session id and the one at position
``(stable_hash64(experiment_id) >> 32) mod n_sessions`` is taken (the high bits, so the pick is
unrelated to the fold, which uses the low bits; ineligible, too-short sessions are included: they
are scored but fit no kernel, as in the pipeline). Under the null

    H0: the hash-picked session of an experiment has the same law in both classes,

which holds whenever human and agent sessions follow one trajectory law, with or without subject
effects and whatever the sessions-per-experiment layout, the test sample is i.i.d. across
experiments. Labels are permuted between its sessions (= experiments) **within folds**: each
fold keeps its observed numbers of humans and agents, so the observed labelling and every
permutation share the fold design and the test is exact conditional on it (permuting across folds
would mix in fold compositions the observed statistic never had).

Statistics, recomputed for every permutation by refitting the fold kernels (batched sparse
products, see :mod:`refit_core`):

* AUC of the out-of-fold gaps. Under H0 it is not centred on ½: folds with more agents score with
  a noisier held-out agent kernel, which pushes their sessions towards "human", so the AUC sits
  below ½ by an amount that depends on the class sizes and fold composition. The p is two-sided
  around the centre c = mean of the observed and permuted AUCs (a symmetric function of all B + 1
  values, which keeps the Monte Carlo test exact): ``p = (1 + #{|AUC_π − c| >= |AUC − c|}) /
  (B + 1)``.
* Kernel divergence D(H‖A) of the class kernels (same κ), one-sided (large = different).

The smallest attainable p is ``1 / (B + 1)`` (reported as ``p_floor``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from phantom_assets.fingerprint.kernel_divergence import kernel_divergence
from phantom_assets.fingerprint.refit_core import (
    SessionCounts,
    batch_size,
    class_totals,
    fold_counts,
    oof_aucs,
    oof_gaps,
)
from phantom_assets.fingerprint.statistics import weighted_row_auc

logger = logging.getLogger(__name__)

P_METHOD = "refit_permutation_one_session_per_experiment_within_folds"
KERNEL_DIVERGENCE_P_METHOD = "refit_permutation_one_session_per_experiment_within_folds_upper"
_TOLERANCE = 1e-12  # float ties between observed and permuted statistics count as extreme

__all__ = [
    "KERNEL_DIVERGENCE_P_METHOD",
    "P_METHOD",
    "PermutationTest",
    "centred_pvalue",
    "experiment_permutation_test",
    "observed_auc",
    "one_session_per_experiment",
    "permute_within_folds",
    "upper_pvalue",
]


@dataclass(frozen=True, eq=False)
class PermutationTest:
    """Observed statistics of the test sample and their permutation nulls.

    Attributes:
        auc: Out-of-fold AUC of the test sample.
        auc_null: AUC of each permutation.
        divergence: Kernel divergence D(H‖A) of the test sample.
        divergence_null: D of each permutation.
        n_test_human: Human experiments (= sessions) in the test sample.
        n_test_agent: Agent experiments (= sessions) in the test sample.
    """

    auc: float
    auc_null: np.ndarray
    divergence: float
    divergence_null: np.ndarray
    n_test_human: int
    n_test_agent: int

    @property
    def auc_p(self) -> float:
        """Two-sided p of the AUC around the permutation centre (:func:`centred_pvalue`)."""
        return centred_pvalue(self.auc, self.auc_null)

    @property
    def divergence_p(self) -> float:
        """One-sided p of the kernel divergence (:func:`upper_pvalue`)."""
        return upper_pvalue(self.divergence, self.divergence_null)

    @property
    def p_floor(self) -> float:
        """Smallest attainable p, ``1 / (B + 1)``."""
        return 1.0 / (self.auc_null.size + 1)


def one_session_per_experiment(experiment: np.ndarray, experiment_hash: np.ndarray) -> np.ndarray:
    """Index of the hash-picked session of each experiment (experiments in code order).

    Within an experiment, sessions keep their order in ``experiment`` (callers order them by
    session id); the pick is position ``(experiment_hash[e] >> 32) mod n_sessions(e)``.
    """
    experiment = np.asarray(experiment, dtype=np.int64)
    sizes = np.bincount(experiment, minlength=experiment_hash.size)
    present = np.flatnonzero(sizes)
    order = np.argsort(experiment, kind="stable")
    starts = np.cumsum(sizes) - sizes
    high = np.asarray(experiment_hash, dtype=np.uint64)[present] >> np.uint64(32)
    offset = (high % sizes[present].astype(np.uint64)).astype(np.int64)
    return order[starts[present] + offset]


def centred_pvalue(observed: float, null: np.ndarray) -> float:
    """Two-sided permutation p of ``|AUC − c|``, c = mean of the observed and null AUCs."""
    null = np.asarray(null, dtype=np.float64)
    centre = (float(null.sum()) + observed) / (null.size + 1)
    extreme = int(np.sum(np.abs(null - centre) >= abs(observed - centre) - _TOLERANCE))
    return (1 + extreme) / (1 + null.size)


def upper_pvalue(observed: float, null: np.ndarray) -> float:
    """One-sided permutation p, ``(1 + #{null >= observed}) / (B + 1)``."""
    null = np.asarray(null, dtype=np.float64)
    return (1 + int(np.sum(null >= observed - _TOLERANCE))) / (1 + null.size)


def permute_within_folds(
    labels: np.ndarray, fold: np.ndarray, n_rows: int, rng: np.random.Generator
) -> np.ndarray:
    """``(n_rows, n)`` random permutations of ``labels``, each moving labels only within a fold."""
    n = labels.size
    slots = np.argsort(fold[None, :] + rng.random((n_rows, n)), axis=1)  # random order per fold
    grouped = labels[np.argsort(fold, kind="stable")]  # the same fold blocks, observed order
    out = np.empty((n_rows, n), dtype=labels.dtype)
    np.put_along_axis(out, slots, np.broadcast_to(grouped, (n_rows, n)), axis=1)
    return out


def _statistics(
    data: SessionCounts, labels: np.ndarray, kappa: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(auc, divergence)`` per label row, both from one batched kernel refit."""
    counts = fold_counts(data, labels, None)
    gaps = oof_gaps(data, counts, kappa)
    total = class_totals(data, counts)
    divergence = kernel_divergence(total[:, 0], total[:, 1], kappa)
    return weighted_row_auc(gaps, labels, np.ones_like(gaps)), divergence


def experiment_permutation_test(
    data: SessionCounts, *, kappa: float, n_permutations: int, rng: np.random.Generator
) -> PermutationTest:
    """Refit permutation tests (AUC and kernel divergence) on the one-session test sample.

    Args:
        data: Labeled sessions with their experiments (:func:`session_counts`).
        kappa: Additive smoothing κ (> 0; κ = 0 gives infinite gaps and is not supported).
        n_permutations: Number of label permutations B.
        rng: Random generator.

    Raises:
        ValueError: If κ <= 0, B < 1, or a class has no experiment.
    """
    if kappa <= 0:
        raise ValueError(f"the refit permutation test needs kappa > 0, got {kappa!r}")
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations!r}")
    test = data.select(one_session_per_experiment(data.experiment, data.experiment_hash))
    labels = test.is_agent.astype(np.int64)
    n_agent = int(labels.sum())
    if n_agent == 0 or n_agent == labels.size:
        raise ValueError(
            f"both classes need experiments; got n_agent={n_agent} of {labels.size} experiments"
        )
    auc, divergence = _statistics(test, labels[None, :], kappa)
    auc_null, divergence_null = [], []
    step = batch_size(test)
    for start in range(0, n_permutations, step):  # loop over permutation batches
        b = min(step, n_permutations - start)
        permuted = permute_within_folds(labels, test.fold, b, rng)
        a, d = _statistics(test, permuted, kappa)
        auc_null.append(a)
        divergence_null.append(d)
    return PermutationTest(
        auc=float(auc[0]),
        auc_null=np.concatenate(auc_null),
        divergence=float(divergence[0]),
        divergence_null=np.concatenate(divergence_null),
        n_test_human=int(labels.size - n_agent),
        n_test_agent=n_agent,
    )


def observed_auc(data: SessionCounts, kappa: float) -> float:
    """Out-of-fold AUC of all sessions in ``data`` (equals that of :func:`score_sessions`)."""
    return float(oof_aucs(data, data.is_agent[None, :], kappa)[0])
