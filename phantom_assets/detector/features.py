"""What a pricing service knows about a session at the moment it quotes: the quote-time features
of detector v2 (docs/detector.md#detector-v2).

A prefix of a session is its first moves (`<start>` → e_1 is move 1, …; the market's quote rule
picks how many, `bank.quote_prefix_moves`). Its features, all computable event by event:

- `kernel_gap`: the mean log K_A − log K_H of the prefix's moves (the kernel-only detector's
  statistic, `bank.session_bank`);
- `mean_log_gap`, `sd_log_gap`: the mean and standard deviation of log(seconds between
  consecutive events) of the prefix (0 where it has fewer than 1 / 2 gaps);
- `log_elapsed`: log(1 + seconds from the session's first event to the prefix's last);
- `no_timing`: 1 when the prefix has a single event (no gap yet), else 0.

The names and the gap floor are the runtime's (`runtime.QUOTE_FEATURES`, `runtime.MIN_GAP_S`),
which computes the same features event by event.

The user agent is not a feature: it is trivially spoofed. Gaps are floored at `MIN_GAP_S` before
the log (equal timestamps happen in logs).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.detector.runtime import MIN_GAP_S, QUOTE_FEATURES
from phantom_assets.fingerprint.encoding import N_STATES, encode_trajectories
from phantom_assets.market.bank import quote_prefix_moves

__all__ = [
    "KERNEL_FEATURE",
    "MIN_GAP_S",
    "QUOTE_FEATURES",
    "TIMING_FEATURES",
    "length_moves",
    "prefix_features",
    "quote_features",
]

KERNEL_FEATURE = QUOTE_FEATURES[0]
TIMING_FEATURES: tuple[str, ...] = QUOTE_FEATURES[1:]


def _check(trajectories: pl.Series, offsets_ms: pl.Series, folds: np.ndarray) -> None:
    n = len(trajectories)
    if len(offsets_ms) != n or np.shape(folds) != (n,):
        raise ValueError(
            f"need one offsets list and one fold per session: {n} trajectories, "
            f"{len(offsets_ms)} offsets lists, folds of shape {np.shape(folds)}"
        )
    mismatch = np.flatnonzero(
        (trajectories.list.len() != offsets_ms.list.len()).fill_null(True).to_numpy()
    )
    if mismatch.size:
        raise ValueError(
            f"session {mismatch[0]}: {trajectories.list.len()[int(mismatch[0])]} events but "
            f"{offsets_ms.list.len()[int(mismatch[0])]} event times"
        )


def prefix_features(
    trajectories: pl.Series,
    offsets_ms: pl.Series,
    folds: np.ndarray,
    fold_llr: np.ndarray,
    moves: np.ndarray,
) -> np.ndarray:
    """(n, len(QUOTE_FEATURES)) features of each session's prefix of `moves[i]` moves.

    Args:
        trajectories: list[str] event names per session (no `<start>`/`<end>`).
        offsets_ms: list[i64] each event's time in ms after the session's first event
            (`labeled_sessions.event_offsets_ms`), non-decreasing.
        folds: (n,) the fold whose kernels score each session (0 with one full-data pair).
        fold_llr: (k, S·S) log K_A − log K_H per move of each fold's kernels
            (`bank.fold_log_ratios`).
        moves: (n,) moves in each prefix, 1 … n_events + 1.

    Raises:
        ValueError: if lengths disagree, a fold has no kernels or a prefix is empty or too long.
    """
    folds = np.asarray(folds, dtype=np.int64)
    _check(trajectories, offsets_ms, folds)
    fold_llr = np.asarray(fold_llr, dtype=np.float64)
    if folds.size and (folds.min() < 0 or folds.max() >= len(fold_llr)):
        raise ValueError(f"folds must be in [0, {len(fold_llr)}), got {folds.min()}…{folds.max()}")
    encoded = encode_trajectories(trajectories)
    n_events = encoded.n_events
    moves = np.asarray(moves, dtype=np.int64)
    if moves.shape != n_events.shape or np.any((moves < 1) | (moves > n_events + 1)):
        raise ValueError("moves must be in [1, n_events + 1] for every session")
    n = n_events.size
    llr = fold_llr[folds[encoded.session], encoded.src * N_STATES + encoded.dst]
    in_prefix = encoded.position < moves[encoded.session]
    kernel_gap = np.bincount(encoded.session, weights=np.where(in_prefix, llr, 0.0), minlength=n)
    kernel_gap /= moves

    # Timing over the prefix's events (move m lands on event m; the move to <end> on none).
    events = np.minimum(moves, n_events)
    offsets = offsets_ms.explode().cast(pl.Float64).to_numpy() / 1000.0
    session = np.repeat(np.arange(n), n_events)
    index = np.arange(offsets.size) - np.repeat(np.cumsum(n_events) - n_events, n_events)
    if np.any(np.diff(offsets)[(index[1:] > 0)] < 0):
        raise ValueError("event times must be non-decreasing within each session")
    is_gap = (index > 0) & (index < events[session])
    gap = np.log(np.maximum(np.diff(offsets, prepend=0.0), MIN_GAP_S))
    count = np.bincount(session, weights=is_gap, minlength=n)
    total = np.bincount(session, weights=np.where(is_gap, gap, 0.0), minlength=n)
    square = np.bincount(session, weights=np.where(is_gap, gap**2, 0.0), minlength=n)
    mean = np.divide(total, count, out=np.zeros(n), where=count > 0)
    variance = np.divide(square, count, out=np.zeros(n), where=count > 1) - np.where(
        count > 1, mean**2, 0.0
    )
    last = index == events[session] - 1
    elapsed = np.zeros(n)
    elapsed[session[last]] = offsets[last]
    return np.column_stack(
        [
            kernel_gap,
            mean,
            np.sqrt(np.maximum(variance, 0.0)),
            np.log1p(elapsed),
            (count == 0).astype(np.float64),
        ]
    )


def quote_features(
    trajectories: pl.Series, offsets_ms: pl.Series, folds: np.ndarray, fold_llr: np.ndarray
) -> np.ndarray:
    """`prefix_features` of each session's prefix up to and including its quote."""
    moves = quote_prefix_moves(encode_trajectories(trajectories))
    return prefix_features(trajectories, offsets_ms, folds, fold_llr, moves)


def length_moves(trajectories: pl.Series, events: int) -> np.ndarray:
    """Moves of the prefixes of at most `events` events (the session's whole when shorter; the
    move to `<end>` never included)."""
    if events < 1:
        raise ValueError(f"a prefix has at least one event, got {events}")
    n_events = trajectories.list.len().to_numpy().astype(np.int64)
    return np.maximum(np.minimum(n_events, events), 1)
