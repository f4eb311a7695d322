"""Per-session divergence scores against the class kernels (docs/method.md#divergence-scores).

For a session τ with empirical kernel T̂_τ (its transition counts C[a, b], row visits w_a, total
W = Σ_a w_a = n_events + 1):

    Δ_Y(τ) = Σ_a (w_a / W) · KL(T̂_τ[a] ‖ T̂_Y[a])
           = (1/W) · [Σ_ab C log C − Σ_a w_a log w_a − Σ_ab C log T̂_Y[a, b]].

The first two sums (the session's own entropy term) are class-independent and computed from the
sparse (session, src, dst) counts; the last one is a per-transition log-probability lookup. Hence
gap = Δ_H − Δ_A = (1/W) Σ_transitions [log T̂_A(dst|src) − log T̂_H(dst|src)], a per-transition
log-likelihood ratio -- everything is vectorized over transitions, never looped over sessions.

Leakage (pitfall 3 of docs/method.md#pitfalls-this-method-avoids): a labeled session in fold j is
scored with both classes' fold-j kernels (fitted without fold j); only unlabeled sessions (actor
unknown) use the full kernels. With κ = 0 a transition the class never made has probability 0, so Δ
can be +inf and the gap ±inf or NaN (both infinite); f follows (σ(±inf) = 1/0).

Both agent probabilities are reported (`f_temperature` = σ(gap / T), `f_calibrated` = the
out-of-fold logistic calibration); `f` is the one `calibration` selects, the f every downstream
reader uses (docs/method.md#calibrated-f).
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
from scipy.special import expit

from phantom_assets.constants import ACTORS
from phantom_assets.fingerprint.calibration import (
    DEFAULT_RIDGE,
    ScoreCalibration,
    calibrate_out_of_fold,
    fit_score_calibration,
    validate_method,
)
from phantom_assets.fingerprint.encoding import N_STATES, Transitions, encode_trajectories
from phantom_assets.fingerprint.sessions import KernelSet, validate_sessions

logger = logging.getLogger(__name__)

SCORE_COLUMNS = (
    "session_id",
    "store",
    "actor",
    "n_events",
    "delta_h",
    "delta_a",
    "gap",
    "f",
    "f_temperature",
    "f_calibrated",
    "fold",
)

__all__ = [
    "SCORE_COLUMNS",
    "divergences",
    "prefix_scores",
    "score_calibration",
    "score_sessions",
]


def _log_stack(kernels: KernelSet) -> np.ndarray:
    """``(k + 1, S, S)`` log-probabilities: fold kernels 0..k-1, then the full kernel at k."""
    stack = np.stack([kern.probs for kern in (*kernels.folds, kernels.full)])
    with np.errstate(divide="ignore"):
        return np.log(stack)


def _entropy_term(t: Transitions) -> np.ndarray:
    """Σ_ab C log C − Σ_a w_a log w_a per session, from sparse (session, src, dst) counts."""
    n = t.n_sessions
    pair_keys, pair_counts = np.unique(
        (t.session * N_STATES + t.src) * N_STATES + t.dst, return_counts=True
    )
    row_keys, row_counts = np.unique(t.session * N_STATES + t.src, return_counts=True)
    pair = np.bincount(
        pair_keys // (N_STATES * N_STATES), weights=pair_counts * np.log(pair_counts), minlength=n
    )
    rows = np.bincount(row_keys // N_STATES, weights=row_counts * np.log(row_counts), minlength=n)
    return pair - rows


def divergences(t: Transitions, log_probs: np.ndarray, kernel_index: np.ndarray) -> np.ndarray:
    """Δ_Y per session: each session ``s`` against kernel ``log_probs[kernel_index[s]]``.

    Args:
        t: Encoded sessions.
        log_probs: ``(K, S, S)`` log transition probabilities (rows = sources).
        kernel_index: Index into ``log_probs`` per session.

    Returns:
        Weighted KL divergence per session (>= 0; +inf where a used transition has probability 0).
    """
    cross_terms = log_probs[kernel_index[t.session], t.src, t.dst]
    with np.errstate(invalid="ignore"):
        cross = np.bincount(t.session, weights=cross_terms, minlength=t.n_sessions)
        delta = (_entropy_term(t) - cross) / (t.n_events + 1)
    return np.maximum(delta, 0.0)  # KL >= 0; clips float round-off of order 1e-16


def _context(
    sessions: pl.DataFrame, human: KernelSet, agent: KernelSet
) -> tuple[Transitions, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if human.k != agent.k:
        raise ValueError(
            f"human and agent kernel sets have different fold counts {human.k}, {agent.k}"
        )
    validate_sessions(sessions, human.k)
    t = encode_trajectories(sessions["trajectory"])
    labeled = sessions["actor"].is_in(list(ACTORS)).to_numpy()
    kernel_index = np.where(labeled, sessions["fold"].to_numpy(), human.k).astype(np.int64)
    return t, labeled, kernel_index, _log_stack(human), _log_stack(agent)


def score_sessions(
    sessions: pl.DataFrame,
    human: KernelSet,
    agent: KernelSet,
    temperature: float,
    *,
    calibration: str = "temperature",
    ridge: float = DEFAULT_RIDGE,
    logistic: tuple[float, float] | None = None,
) -> pl.DataFrame:
    """Score every session: Δ_H, Δ_A, gap, both agent probabilities and the selected f.

    Args:
        sessions: Sessions frame (contract in :mod:`phantom_assets.fingerprint.sessions`).
        human: Human :class:`KernelSet`.
        agent: Agent :class:`KernelSet` (same number of folds).
        temperature: T > 0 of f_temperature = σ(gap / T).
        calibration: Which probability becomes ``f``: ``"temperature"`` or ``"logistic"``.
        ridge: Ridge penalty of the logistic calibration.
        logistic: Stored logistic coefficients for the unlabeled sessions (e.g.
            ``ScoreCalibration.coef``); fitted on the frame's labeled sessions when None.

    Returns:
        One row per session with columns ``SCORE_COLUMNS``, in input order; ``f`` equals
        ``f_temperature`` or ``f_calibrated`` as ``calibration`` selects.
    """
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    validate_method(calibration)
    t, labeled, kernel_index, log_h, log_a = _context(sessions, human, agent)
    delta_h = divergences(t, log_h, kernel_index)
    delta_a = divergences(t, log_a, kernel_index)
    with np.errstate(invalid="ignore"):
        gap = delta_h - delta_a
        f = expit(gap / temperature)
    is_agent = (sessions["actor"] == ACTORS[1]).to_numpy()
    fold = sessions["fold"].to_numpy()
    f_cal = calibrate_out_of_fold(
        gap, is_agent, fold, labeled, human.k, ridge=ridge, full_coef=logistic
    )
    return sessions.select("session_id", "store", "actor", "n_events").with_columns(
        pl.Series("delta_h", delta_h, dtype=pl.Float64),
        pl.Series("delta_a", delta_a, dtype=pl.Float64),
        pl.Series("gap", gap, dtype=pl.Float64),
        pl.Series("f", f_cal if calibration == "logistic" else f, dtype=pl.Float64),
        pl.Series("f_temperature", f, dtype=pl.Float64),
        pl.Series("f_calibrated", f_cal, dtype=pl.Float64),
        sessions["fold"],
    )


def score_calibration(scores: pl.DataFrame, method: str, temperature: float) -> ScoreCalibration:
    """A store's :class:`ScoreCalibration` from its :func:`score_sessions` table: the selected
    ``method`` with the logistic fit on every labeled out-of-fold gap."""
    return fit_score_calibration(
        scores["gap"].to_numpy(),
        (scores["actor"] == ACTORS[1]).to_numpy(),
        scores["actor"].is_in(list(ACTORS)).to_numpy(),
        method,
        temperature,
    )


def prefix_scores(
    sessions: pl.DataFrame,
    human: KernelSet,
    agent: KernelSet,
    temperature: float,
    max_prefix: int,
) -> pl.DataFrame:
    """Gap and f on the first 2, 3, …, ``max_prefix`` events of each session (no ``<end>``).

    The prefix of length p uses the p transitions ``<start> -> e_1, …, e_{p-1} -> e_p``, scored
    with the same out-of-fold kernels as :func:`score_sessions`. Only sessions with at least p
    events have a length-p prefix.

    Returns:
        Long table ``session_id, actor, fold, prefix_len, gap, f`` (sorted by prefix_len, then
        input order).
    """
    if max_prefix < 2:
        raise ValueError(f"max_prefix must be >= 2, got {max_prefix!r}")
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    t, _, kernel_index, log_h, log_a = _context(sessions, human, agent)
    head = t.position < max_prefix
    session, position = t.session[head], t.position[head]
    idx = kernel_index[session]
    with np.errstate(invalid="ignore"):
        llr = log_a[idx, t.src[head], t.dst[head]] - log_h[idx, t.src[head], t.dst[head]]
    frames = []
    base = sessions.select("session_id", "actor", "fold")
    for p in range(2, max_prefix + 1):  # loop over prefix lengths only
        use = position < p
        with np.errstate(invalid="ignore"):
            gap = np.bincount(session[use], weights=llr[use], minlength=t.n_sessions) / p
        keep = t.n_events >= p
        if not keep.any():
            continue
        with np.errstate(invalid="ignore"):
            f = expit(gap[keep] / temperature)
        frames.append(
            base.filter(pl.Series(keep)).with_columns(
                pl.lit(p, dtype=pl.Int64).alias("prefix_len"),
                pl.Series("gap", gap[keep], dtype=pl.Float64),
                pl.Series("f", f, dtype=pl.Float64),
            )
        )
    if not frames:
        return base.clear().with_columns(
            pl.Series("prefix_len", [], dtype=pl.Int64),
            pl.Series("gap", [], dtype=pl.Float64),
            pl.Series("f", [], dtype=pl.Float64),
        )
    return pl.concat(frames)
