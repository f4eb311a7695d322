"""Human-vs-agent kernel divergence and its split-half null (DESIGN §5 "Separability report").

D(H‖A) = Σ_a π_H(a) · KL(T̂_H[a] ‖ T̂_A[a]) with π_H the human state-visit shares (source-row
counts). The null ("split-half") comes from random splits of the pooled labeled sessions into two
groups *of the observed class sizes* (halves when n_H = n_A), refitted with the same κ: same-size
groups make the null carry the same estimation noise as the observed value.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.constants import ACTORS, MIN_EVENTS_FOR_KERNEL
from phantom_assets.fingerprint.encoding import N_STATES, encode_trajectories
from phantom_assets.fingerprint.kernels import probs_from_counts

_CHUNK_CELLS = 8_000_000

__all__ = ["kernel_divergence", "kernel_divergence_summary", "split_half_null"]


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


def split_half_null(
    pair_session: np.ndarray,
    pair_code: np.ndarray,
    pair_count: np.ndarray,
    n_sessions: int,
    n_first: int,
    n_repeats: int,
    kappa: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Kernel divergences between random splits (sizes ``n_first`` / rest) of pooled sessions.

    Args:
        pair_session: Session index of each sparse (session, src·S+dst) count.
        pair_code: ``src * S + dst`` of each count.
        pair_count: The counts.
        n_sessions: Number of pooled sessions.
        n_first: Size of the first ("human") group.
        n_repeats: Number of random splits.
        kappa: κ of the refitted kernels.
        rng: Random generator.
    """
    cells = N_STATES * N_STATES
    chunk = max(1, _CHUNK_CELLS // max(pair_code.size, 1))
    base = (np.arange(n_sessions) >= n_first).astype(np.int64)  # 0 = first group, 1 = second
    out = np.empty(n_repeats)
    for start in range(0, n_repeats, chunk):  # loop over batches of splits
        b = min(chunk, n_repeats - start)
        group = rng.permuted(np.broadcast_to(base, (b, n_sessions)), axis=1)
        key = (np.arange(b)[:, None] * 2 + group[:, pair_session]) * cells + pair_code
        counts = np.bincount(
            key.ravel(),
            weights=np.broadcast_to(pair_count, key.shape).ravel(),
            minlength=b * 2 * cells,
        ).reshape(b, 2, N_STATES, N_STATES)
        out[start : start + b] = kernel_divergence(counts[:, 0], counts[:, 1], kappa)
    return out


def kernel_divergence_summary(
    sessions: pl.DataFrame, kappa: float, n_split_half: int, rng: np.random.Generator
) -> dict[str, float]:
    """Observed human-vs-agent kernel divergence, its split-half null and the null's p-value."""
    labeled = sessions.filter(
        pl.col("actor").is_in(list(ACTORS)) & (pl.col("n_events") >= MIN_EVENTS_FOR_KERNEL)
    ).sort(pl.col("actor") != ACTORS[0], maintain_order=True)  # humans first
    n_h = int((labeled["actor"] == ACTORS[0]).sum())
    t = encode_trajectories(labeled["trajectory"])
    keys, counts = np.unique((t.session * N_STATES + t.src) * N_STATES + t.dst, return_counts=True)
    pair_session, pair_code = keys // (N_STATES * N_STATES), keys % (N_STATES * N_STATES)
    is_agent = (pair_session >= n_h).astype(np.int64)
    by_class = np.bincount(
        is_agent * N_STATES * N_STATES + pair_code,
        weights=counts,
        minlength=2 * N_STATES * N_STATES,
    ).reshape(2, N_STATES, N_STATES)
    observed = float(kernel_divergence(by_class[0], by_class[1], kappa))
    null = split_half_null(
        pair_session, pair_code, counts.astype(np.float64), labeled.height, n_h,
        n_split_half, kappa, rng,
    )  # fmt: skip
    return {
        "kernel_divergence": observed,
        "kernel_divergence_null_mean": float(null.mean()),
        "kernel_divergence_null_q95": float(np.quantile(null, 0.95)),
        "kernel_divergence_p": float((1 + np.sum(null >= observed)) / (1 + null.size)),
    }
