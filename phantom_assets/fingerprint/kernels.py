"""Pooled Markov transition kernels with additive smoothing (docs/method.md#transition-kernels).

Orientation: ``counts[a, b]`` / ``probs[a, b]`` = transitions *from* ``states[a]`` *to*
``states[b]`` (rows = sources, columns = destinations; pitfall 1 of
docs/method.md#pitfalls-this-method-avoids).

Estimator: P(b|a) = (N(a,b) + κ) / (Σ_c N(a,c) + κ·|V|) over the destination support V =
``KERNEL_STATES[1:]`` (the 17 events and ``<end>``, |V| = 18). ``<start>`` is never a destination,
so its column is structurally zero and never receives κ (a sampler must not jump back to
``<start>`` mid-session). Two rows are decided by convention:

* ``<end>`` row: an absorbing self-loop (P(<end>|<end>) = 1, count 0), so every row is stochastic
  and a sampler that reaches ``<end>`` stays there.
* a source row with zero count (never visited) is uniform over V, for every κ including κ = 0:
  this is the κ -> 0 limit of the smoothed estimator for an empty row ((0+κ)/(0+κ|V|) = 1/|V|),
  so rows stay stochastic. Such rows are listed by :func:`empty_rows`.

Sessions with fewer than ``MIN_EVENTS_FOR_KERNEL`` events are excluded from fitting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.constants import KERNEL_STATES, MIN_EVENTS_FOR_KERNEL, ROW_SUM_TOLERANCE
from phantom_assets.fingerprint.encoding import END, N_STATES, START, Transitions

logger = logging.getLogger(__name__)

DESTINATIONS = np.array([i != START for i in range(N_STATES)])  # support V of every row
N_DESTINATIONS = int(DESTINATIONS.sum())

__all__ = [
    "DESTINATIONS",
    "Kernel",
    "empty_rows",
    "fit_fold_kernels",
    "fit_kernel",
    "kernel_checks",
    "kernel_frame",
    "kernel_from_frame",
    "probs_from_counts",
]


@dataclass(frozen=True, eq=False)
class Kernel:
    """A transition kernel with explicit state labels.

    Attributes:
        states: State labels in ``KERNEL_STATES`` order; index ``a`` labels row and column ``a``.
        counts: ``(S, S)`` transition counts, rows = sources, columns = destinations.
        probs: ``(S, S)`` transition probabilities, rows = sources (each row sums to one).
        kappa: The additive smoothing κ used to turn counts into probabilities.
    """

    states: tuple[str, ...]
    counts: np.ndarray
    probs: np.ndarray
    kappa: float

    @property
    def n_transitions(self) -> int:
        """Total number of counted transitions."""
        return int(self.counts.sum())


def _check_kappa(kappa: float) -> float:
    kappa = float(kappa)
    if not np.isfinite(kappa) or kappa < 0:
        raise ValueError(f"kappa must be a finite number >= 0, got {kappa!r}")
    return kappa


def probs_from_counts(counts: np.ndarray, kappa: float) -> np.ndarray:
    """Smoothed row-stochastic probabilities from ``(..., S, S)`` counts (see module docstring).

    Works on a stack of count matrices (leading axes are kept), e.g. one per fold.
    """
    kappa = _check_kappa(kappa)
    counts = np.asarray(counts, dtype=np.float64)
    smoothed = (counts + kappa) * DESTINATIONS
    totals = smoothed.sum(axis=-1, keepdims=True)
    uniform = np.broadcast_to(DESTINATIONS / N_DESTINATIONS, counts.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        probs = np.where(totals > 0, smoothed / totals, uniform)
    probs[..., END, :] = 0.0
    probs[..., END, END] = 1.0
    return probs


def _kernel_transitions(transitions: Transitions) -> Transitions:
    eligible = transitions.n_events >= MIN_EVENTS_FOR_KERNEL
    if not eligible.all():
        logger.debug(
            "excluding %d sessions with < %d events from kernel fitting",
            int((~eligible).sum()),
            MIN_EVENTS_FOR_KERNEL,
        )
    return transitions.select_sessions(eligible)


def _count(src: np.ndarray, dst: np.ndarray, group: np.ndarray | None, n_groups: int) -> np.ndarray:
    key = src * N_STATES + dst
    if group is not None:
        key = key + group * (N_STATES * N_STATES)
    flat = np.bincount(key, minlength=n_groups * N_STATES * N_STATES)
    return flat.reshape(n_groups, N_STATES, N_STATES).astype(np.int64)


def fit_kernel(transitions: Transitions, kappa: float) -> Kernel:
    """Pooled smoothed MLE kernel of all eligible sessions in ``transitions``.

    Args:
        transitions: Encoded sessions (see :func:`encode_trajectories`).
        kappa: Additive smoothing κ >= 0 (0 = pure MLE).

    Returns:
        The fitted :class:`Kernel`.
    """
    kappa = _check_kappa(kappa)
    used = _kernel_transitions(transitions)
    counts = _count(used.src, used.dst, None, 1)[0]
    return Kernel(KERNEL_STATES, counts, probs_from_counts(counts, kappa), kappa)


def fit_fold_kernels(
    transitions: Transitions, folds: np.ndarray, k: int, kappa: float
) -> list[Kernel]:
    """One kernel per fold ``j``, each fitted on every eligible session NOT in fold ``j``.

    Args:
        transitions: Encoded sessions.
        folds: Fold id per session (length ``transitions.n_sessions``), each in ``[0, k)``.
        k: Number of folds (>= 2).
        kappa: Additive smoothing κ >= 0.

    Returns:
        ``k`` kernels; kernel ``j`` never saw a transition of a fold-``j`` session.
    """
    kappa = _check_kappa(kappa)
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k!r}")
    folds = np.asarray(folds)
    if folds.shape != (transitions.n_sessions,):
        raise ValueError(
            f"folds shape {folds.shape} != (n_sessions,) = ({transitions.n_sessions},)"
        )
    bad = (folds < 0) | (folds >= k)
    if bad.any():
        raise ValueError(
            f"fold ids must lie in [0, {k}) for kernel fitting; got {np.unique(folds[bad])[:5]} "
            "(unlabeled sessions, fold -1, never fit kernels)"
        )
    eligible = transitions.n_events >= MIN_EVENTS_FOR_KERNEL
    used = transitions.select_sessions(eligible)
    per_fold = _count(used.src, used.dst, folds[eligible][used.session].astype(np.int64), k)
    held_out = per_fold.sum(axis=0, keepdims=True) - per_fold
    probs = probs_from_counts(held_out, kappa)
    return [Kernel(KERNEL_STATES, held_out[j], probs[j], kappa) for j in range(k)]


def empty_rows(kernel: Kernel) -> tuple[str, ...]:
    """Source states (not ``<end>``) with zero count: their rows are uniform by convention."""
    zero = kernel.counts.sum(axis=1) == 0
    return tuple(s for i, s in enumerate(kernel.states) if zero[i] and i != END)


def kernel_checks(kernel: Kernel, n_transitions: int) -> dict[str, bool]:
    """The kernel checks of docs/method.md#transition-kernels.

    Args:
        kernel: The kernel to check.
        n_transitions: Number of transitions the kernel was fitted on (from the input data).

    Returns:
        ``rows_sum_to_one`` (within ``ROW_SUM_TOLERANCE``), ``no_negative_entries`` (counts and
        probabilities), ``counts_match_transitions`` and ``labels_are_kernel_states``.
    """
    probs, counts = np.asarray(kernel.probs), np.asarray(kernel.counts)
    shape_ok = probs.shape == (len(kernel.states),) * 2 == counts.shape
    finite = shape_ok and bool(np.isfinite(probs).all())
    row_sums = probs.sum(axis=1) if finite else np.array([np.nan])
    return {
        "rows_sum_to_one": bool(finite and np.all(np.abs(row_sums - 1.0) <= ROW_SUM_TOLERANCE)),
        "no_negative_entries": bool(finite and (probs >= 0).all() and (counts >= 0).all()),
        "counts_match_transitions": bool(int(counts.sum()) == int(n_transitions)),
        "labels_are_kernel_states": tuple(kernel.states) == KERNEL_STATES and shape_ok,
    }


def kernel_frame(kernel: Kernel, fold: int | None = None) -> pl.DataFrame:
    """Long table ``src, dst, count, prob`` (+ ``fold``): every (src, dst) pair, row-major."""
    states = list(kernel.states)
    size = len(states)
    data = {
        "src": pl.Series("src", np.repeat(states, size).tolist(), dtype=pl.String),
        "dst": pl.Series("dst", states * size, dtype=pl.String),
        "count": pl.Series("count", np.asarray(kernel.counts).reshape(-1), dtype=pl.Int64),
        "prob": pl.Series("prob", np.asarray(kernel.probs).reshape(-1), dtype=pl.Float64),
    }
    if fold is not None:
        data["fold"] = pl.Series("fold", [int(fold)] * size * size, dtype=pl.Int64)
    return pl.DataFrame(data)


def kernel_from_frame(frame: pl.DataFrame, *, kappa: float) -> Kernel:
    """Inverse of :func:`kernel_frame` (row order of ``frame`` does not matter).

    Args:
        frame: ``src, dst, count, prob`` (optionally one single ``fold`` value).
        kappa: The κ the kernel was fitted with (not stored in the table).

    Raises:
        ValueError: On missing columns, unknown labels, missing or duplicate pairs, or several
            folds.
    """
    missing = {"src", "dst", "count", "prob"} - set(frame.columns)
    if missing:
        raise ValueError(f"kernel frame lacks columns {sorted(missing)}")
    if "fold" in frame.columns and frame["fold"].n_unique() > 1:
        raise ValueError(f"kernel frame holds several folds {frame['fold'].unique().to_list()}")
    index = {s: i for i, s in enumerate(KERNEL_STATES)}
    labels = set(frame["src"].to_list()) | set(frame["dst"].to_list())
    if labels - index.keys():
        raise ValueError(f"kernel frame has unknown states {sorted(labels - index.keys())}")
    if frame.height != N_STATES * N_STATES or frame.select(["src", "dst"]).is_duplicated().any():
        raise ValueError(
            f"kernel frame must hold each of the {N_STATES}x{N_STATES} (src, dst) pairs exactly "
            f"once; got {frame.height} rows"
        )
    codes = frame.select(
        pl.col("src").replace_strict(index, return_dtype=pl.Int64),
        pl.col("dst").replace_strict(index, return_dtype=pl.Int64),
    )
    rows, cols = codes["src"].to_numpy(), codes["dst"].to_numpy()
    counts = np.zeros((N_STATES, N_STATES), dtype=np.int64)
    probs = np.zeros((N_STATES, N_STATES), dtype=np.float64)
    counts[rows, cols] = frame["count"].to_numpy()
    probs[rows, cols] = frame["prob"].to_numpy()
    return Kernel(KERNEL_STATES, counts, probs, _check_kappa(kappa))
