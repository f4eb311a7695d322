"""Deterministic cross-fitting folds from a stable hash of the session id
(docs/method.md#labeled-partitions-and-folds).

The fold of a session must be the same on every machine, Python version and polars release, so
neither ``hash()`` (salted per process) nor ``pl.Series.hash`` (seeded, version-dependent) is
used. Instead: 64-bit FNV-1a over the UTF-8 bytes of the id, followed by the MurmurHash3 ``fmix64``
finalizer (FNV's low bits alone are weakly mixed, and the fold is taken modulo ``k``):

    fold = fmix64(fnv1a64(utf8(session_id))) mod k

Vectorized with numpy: the ids are packed into one padded ``(n, max_len)`` byte matrix and the FNV
recurrence runs over the byte *positions* (a loop of at most ``max_len`` steps), never over the
sessions. Unsigned 64-bit arithmetic wraps modulo 2**64 exactly like the reference definition.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import polars as pl

logger = logging.getLogger(__name__)

FNV64_OFFSET = np.uint64(0xCBF29CE484222325)
FNV64_PRIME = np.uint64(0x100000001B3)
_FMIX_C1 = np.uint64(0xFF51AFD7ED558CCD)
_FMIX_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_CHUNK = 1 << 16  # sessions per padded byte matrix (bounds memory for long ids)

__all__ = ["assign_folds", "fnv1a64", "stable_hash64"]


def _as_series(session_ids: pl.Series | Sequence[str]) -> pl.Series:
    series = (
        session_ids
        if isinstance(session_ids, pl.Series)
        else pl.Series("session_id", list(session_ids), dtype=pl.String)
    )
    if series.dtype != pl.String:
        raise ValueError(f"session ids must be strings, got dtype {series.dtype}")
    if series.null_count():
        first = int(series.is_null().arg_true()[0])
        raise ValueError(f"session id at position {first} is null; every session needs an id")
    return series


def _fnv1a64_chunk(series: pl.Series) -> np.ndarray:
    ids = series.to_list()
    lengths = series.str.len_bytes().cast(pl.Int64).to_numpy()
    flat = np.frombuffer("".join(ids).encode("utf-8"), dtype=np.uint8)
    width = int(lengths.max(initial=0))
    padded = np.zeros((len(ids), max(width, 1)), dtype=np.uint64)
    rows = np.repeat(np.arange(len(ids)), lengths)
    starts = np.cumsum(lengths) - lengths
    cols = np.arange(flat.size) - np.repeat(starts, lengths)
    padded[rows, cols] = flat
    h = np.full(len(ids), FNV64_OFFSET, dtype=np.uint64)
    for j in range(width):  # loop over byte positions, vectorized over sessions
        active = lengths > j
        h = np.where(active, (h ^ padded[:, j]) * FNV64_PRIME, h)
    return h


def fnv1a64(session_ids: pl.Series | Sequence[str]) -> np.ndarray:
    """64-bit FNV-1a of the UTF-8 bytes of each id (uint64 array)."""
    series = _as_series(session_ids)
    parts = [_fnv1a64_chunk(series.slice(i, _CHUNK)) for i in range(0, series.len(), _CHUNK)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def _fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * _FMIX_C1
    h = h ^ (h >> np.uint64(33))
    h = h * _FMIX_C2
    return h ^ (h >> np.uint64(33))


def stable_hash64(session_ids: pl.Series | Sequence[str]) -> np.ndarray:
    """``fmix64(fnv1a64(id))``: a well-mixed, platform-independent 64-bit hash per id."""
    return _fmix64(fnv1a64(session_ids))


def assign_folds(session_ids: pl.Series | Sequence[str], k: int) -> np.ndarray:
    """Deterministic fold id in ``[0, k)`` for every session id.

    Args:
        session_ids: Session ids (a polars String series or any sequence of str), no nulls.
        k: Number of folds, at least 2.

    Returns:
        int64 array of fold ids, aligned with ``session_ids``.

    Raises:
        ValueError: If ``k < 2`` or an id is null / not a string.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    return (stable_hash64(session_ids) % np.uint64(k)).astype(np.int64)
