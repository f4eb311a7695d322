"""Replicates of the store's own sample: a Poisson bootstrap by experiment that every asset draws
alike (docs/statistics.md#the-stores-sample).

Replicate b gives experiment e the multiplicity w_be ~ Poisson(1), drawn from a generator seeded
by a hash of (b's stream, e's id), so any asset reproduces the same replicate for any set of
experiments without sharing state: `store_demand` refits its demand model with the decisions of
replicate b weighted by w_be, and the market replays its session bank with each session repeated
w_be times in an episode that draws replicate b. The two are then one joint resample of the
store's data, and the spread of the market's results over replicates is the uncertainty of the
store's finite sample (the Poisson bootstrap: Hanley & MacGibbon 2006; an experiment's sessions
and decisions move together, as the cluster bootstrap requires).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

__all__ = ["REPLICATE_SALT", "experiment_multiplicities", "session_multiplicities"]

REPLICATE_SALT = "phantom-store-replicates-v1"
"""Part of every experiment's hash: changing it changes every replicate."""


def _experiment_seed(experiment: str) -> int:
    digest = hashlib.blake2b(f"{REPLICATE_SALT}:{experiment}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def experiment_multiplicities(experiments: Sequence[str], replicates: int) -> np.ndarray:
    """(replicates, len(experiments)) Poisson(1) multiplicities, column e a function of
    `experiments[e]` alone.

    Raises:
        ValueError: for replicates < 1.
    """
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    columns = [
        np.random.default_rng(_experiment_seed(str(e))).poisson(1.0, replicates)
        for e in experiments
    ]
    return np.stack(columns, axis=1) if columns else np.zeros((replicates, 0), dtype=np.int64)


def session_multiplicities(experiments: Sequence[str], replicates: int) -> np.ndarray:
    """(replicates, n) multiplicity of each of n sessions (or decisions): its experiment's, every
    session of one experiment alike (`experiments[i]` is session i's experiment id)."""
    ids, index = np.unique(np.asarray(experiments, dtype=object).astype(str), return_inverse=True)
    return experiment_multiplicities(ids.tolist(), replicates)[:, index]
