"""Vectorized sampling of event chains from a transition kernel
(docs/method.md#contamination-generator, pitfall 1 of docs/method.md#pitfalls-this-method-avoids).

A kernel is a dense row-stochastic matrix over `constants.KERNEL_STATES`: rows are *sources*,
columns are *destinations*, so `kernel[a, b] = P(next = b | current = a)`. A chain starts in
`<start>`, steps by inverse-CDF sampling on the cumulative rows and stops on `<end>`; neither token
is part of the returned events.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from phantom_assets.constants import KERNEL_STATES, ROW_SUM_TOLERANCE

logger = logging.getLogger(__name__)

PAD: int = -1
"""Padding code after the last event of a chain."""


def validate_kernel(kernel: np.ndarray, name: str = "kernel", n_states: int | None = None) -> None:
    """Raise ValueError unless `kernel` is a square, non-negative, row-stochastic matrix.

    Args:
        kernel: the matrix to check (rows = sources, columns = destinations).
        name: how the error message names it.
        n_states: the required number of states (`len(KERNEL_STATES)` when None).
    """
    expected = len(KERNEL_STATES) if n_states is None else n_states
    if kernel.ndim != 2 or kernel.shape != (expected, expected):
        raise ValueError(f"{name} must have shape ({expected}, {expected}), got {kernel.shape}")
    if not np.all(np.isfinite(kernel)) or np.any(kernel < 0):
        raise ValueError(f"{name} has negative or non-finite entries")
    sums = kernel.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e3 * ROW_SUM_TOLERANCE)
    if bad.size:
        raise ValueError(
            f"{name} rows must sum to 1; row {int(bad[0])} sums to {float(sums[bad[0]])!r}"
        )


LUT_BINS: int = 1024
"""Bins per row of the inverse-CDF lookup table (a power of two, so u·LUT_BINS is exact)."""


@dataclass(frozen=True)
class InverseCdf:
    """Exact inverse-CDF sampler of a kernel's rows, accelerated by a lookup table.

    `next = #{j : cdf[state, j] <= u}` for a uniform u. The table maps each (state, u-bin) to the
    range of answers over the bin; where the range is a single state (almost every bin) the answer
    is read off, else it is resolved by the exact comparison above.

    Attributes:
        cdf: (S, S) cumulative rows, each ending exactly at 1.
        low: (S·LUT_BINS,) answer at the left edge of each bin.
        high: (S·LUT_BINS,) answer just below the right edge of each bin.
    """

    cdf: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def __call__(self, state: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Next state (int64) of each chain in `state` for uniforms `u` in [0, 1)."""
        key = state * LUT_BINS + (u * LUT_BINS).astype(np.int64)
        nxt = self.low[key]
        ambiguous = np.flatnonzero(nxt != self.high[key])
        if ambiguous.size:
            rows = self.cdf[state[ambiguous]]
            nxt[ambiguous] = (rows <= u[ambiguous, None]).sum(axis=1)
        return np.minimum(nxt, self.cdf.shape[0] - 1)


def sampling_cdf(kernel: np.ndarray, start: int = 0, end: int | None = None) -> InverseCdf:
    """Build the inverse-CDF sampler used by `sample_chains`.

    Transitions *into* `<start>` cannot happen inside a session (they only appear through additive
    smoothing), so that column is zeroed and the rows renormalised; the `<end>` row is never used
    and is made absorbing.

    Args:
        kernel: row-stochastic matrix (rows = sources, columns = destinations).
        start: index of the `<start>` state.
        end: index of the `<end>` state (default S - 1); its row may be anything.
    """
    probs = np.array(kernel, dtype=np.float64, copy=True)
    size = probs.shape[0]
    stop = size - 1 if end is None else end
    probs[:, start] = 0.0
    probs[stop] = 0.0
    probs[stop, stop] = 1.0
    totals = probs.sum(axis=1, keepdims=True)
    dead = totals[:, 0] <= 0.0
    if np.any(dead):
        raise ValueError(f"kernel row {int(np.flatnonzero(dead)[0])} only leads to <start>")
    cdf = np.cumsum(probs / totals, axis=1)
    cdf[:, -1] = 1.0  # guard against round-off: every row's CDF ends exactly at 1
    edges = np.arange(LUT_BINS + 1, dtype=np.float64) / LUT_BINS  # (B + 1,)
    # counts[s, b] = #{j : cdf[s, j] <= edges[b]} and #{j : cdf[s, j] < edges[b]}
    at_or_below = (cdf[:, None, :] <= edges[None, :, None]).sum(axis=2)
    below = (cdf[:, None, :] < edges[None, :, None]).sum(axis=2)
    return InverseCdf(
        cdf=cdf,
        low=at_or_below[:, :-1].astype(np.int64).ravel(),
        high=below[:, 1:].astype(np.int64).ravel(),
    )


def iter_transitions(
    kernel: np.ndarray | InverseCdf,
    n: int,
    rng: np.random.Generator,
    max_len: int = 64,
    *,
    start: int = 0,
    end: int | None = None,
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """Walk `n` chains position by position, yielding every transition of the still-running ones.

    Yields `(position, chains, source, destination)`: `chains` are the indices of the chains that
    make a transition at this position, `destination[i]` the state chain `chains[i]` moves to from
    `source[i]` (`end` for chains that stop here). Chains still running after `max_len` events get a
    final forced transition to `end` (position `max_len`), so every chain's transitions run from
    `<start>` to `<end>`. The random draws are the same whatever the consumer does, so
    `sample_chains` and any statistic accumulated from this iterator see the same chains for the
    same generator state.

    Args:
        kernel: (S, S) row-stochastic matrix, rows = sources, columns = destinations, or its
            prebuilt `sampling_cdf` (built with the same `start`/`end`).
        n: number of chains.
        rng: the only source of randomness.
        max_len: maximum number of events per chain.
        start: index of `<start>` (default 0, as in `KERNEL_STATES`).
        end: index of `<end>` (default S - 1, as in `KERNEL_STATES`).
    """
    if isinstance(kernel, InverseCdf):
        sampler = kernel
        size = sampler.cdf.shape[0]
    else:
        matrix = np.asarray(kernel, dtype=np.float64)
        validate_kernel(matrix, n_states=matrix.shape[0] if matrix.ndim == 2 else None)
        size = matrix.shape[0]
    stop = size - 1 if end is None else end
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    if not (0 <= start < size and 0 <= stop < size and start != stop):
        raise ValueError(f"bad start/end indices {start}/{stop} for {size} states")
    if not isinstance(kernel, InverseCdf):
        sampler = sampling_cdf(matrix, start, stop)
    alive = np.arange(n)
    state = np.full(n, start, dtype=np.int64)
    for position in range(max_len):
        if alive.size == 0:
            return
        nxt = sampler(state, rng.random(alive.size))
        yield position, alive, state, nxt
        running = nxt != stop
        alive, state = alive[running], nxt[running]
    if alive.size:
        yield max_len, alive, state, np.full(alive.size, stop, dtype=np.int64)


def sample_chains(
    kernel: np.ndarray | InverseCdf,
    n: int,
    rng: np.random.Generator,
    max_len: int = 64,
    *,
    start: int = 0,
    end: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample `n` event chains from `kernel`, vectorized over chains.

    The loop runs over positions (at most `max_len`), never over chains. A chain that has not
    reached `<end>` after `max_len` events is truncated there.

    Args:
        kernel: (S, S) row-stochastic matrix, rows = sources, columns = destinations.
        n: number of chains.
        rng: the only source of randomness.
        max_len: maximum number of events per chain.
        start: index of `<start>` (default 0, as in `KERNEL_STATES`).
        end: index of `<end>` (default S - 1, as in `KERNEL_STATES`).

    Returns:
        `(codes, lengths)`: `codes` is int16 (n, max_len) of *state indices* (so
        `np.asarray(KERNEL_STATES)[codes[i, :lengths[i]]]` are chain i's event names), padded with
        `PAD` (-1); `lengths` is int64 (n,), the number of events of each chain.
    """
    size = kernel.cdf.shape[0] if isinstance(kernel, InverseCdf) else np.shape(kernel)[0]
    stop = size - 1 if end is None else end
    codes = np.full((max(n, 0), max(max_len, 1)), PAD, dtype=np.int16)
    lengths = np.zeros(max(n, 0), dtype=np.int64)
    for position, chains, _, nxt in iter_transitions(kernel, n, rng, max_len, start=start, end=end):
        if position == max_len:  # the forced final move to <end> of truncated chains
            break
        running = nxt != stop
        codes[chains[running], position] = nxt[running]
        lengths[chains[running]] = position + 1
    return codes, lengths
