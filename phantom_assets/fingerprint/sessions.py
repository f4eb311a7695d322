"""The sessions input contract of the fingerprint package and per-class kernel fitting.

Sessions frame (what the ``labeled_sessions`` asset passes): ``session_id`` str, ``store`` str,
``actor`` str (human | agent | unknown), ``fold`` i64 (-1 for unlabeled), ``trajectory`` list[str]
(canonical events in order, no start/end tokens), ``n_events`` i64 (= trajectory length).
A labeled session (actor human/agent) must carry a fold in ``[0, k)``: it is scored out-of-fold.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.constants import ACTORS, DEFAULT_FOLDS, DEFAULT_KAPPA, UNKNOWN_ACTOR
from phantom_assets.fingerprint.encoding import Transitions, encode_trajectories
from phantom_assets.fingerprint.kernels import Kernel, fit_fold_kernels, fit_kernel

logger = logging.getLogger(__name__)

SESSION_SCHEMA: dict[str, pl.DataType] = {
    "session_id": pl.String(),
    "store": pl.String(),
    "actor": pl.String(),
    "fold": pl.Int64(),
    "trajectory": pl.List(pl.String()),
    "n_events": pl.Int64(),
}

__all__ = [
    "SESSION_SCHEMA",
    "KernelSet",
    "fit_class_kernels",
    "fit_kernel_set",
    "validate_sessions",
]


@dataclass(frozen=True, eq=False)
class KernelSet:
    """The kernels of one actor class: fitted on all its sessions, and once without each fold.

    Attributes:
        full: Kernel fitted on every eligible session of the class (scores unlabeled sessions).
        folds: ``folds[j]`` fitted without fold ``j`` (scores labeled fold-``j`` sessions).
    """

    full: Kernel
    folds: tuple[Kernel, ...]

    @property
    def k(self) -> int:
        """Number of folds."""
        return len(self.folds)


def validate_sessions(sessions: pl.DataFrame, k: int | None = None) -> None:
    """Check ``sessions`` against the input contract; raise ValueError naming the first problem.

    Args:
        sessions: The sessions frame.
        k: If given, labeled sessions must have a fold in ``[0, k)``.
    """
    for name, dtype in SESSION_SCHEMA.items():
        if name not in sessions.columns:
            raise ValueError(f"sessions frame lacks column {name!r} (has {sessions.columns})")
        if sessions.schema[name] != dtype:
            raise ValueError(f"column {name!r} must be {dtype}, got {sessions.schema[name]}")
    bad_actor = ~sessions["actor"].is_in([*ACTORS, UNKNOWN_ACTOR]) | sessions["actor"].is_null()
    if bad_actor.any():
        value = sessions.filter(bad_actor)["actor"][0]
        raise ValueError(f"actor {value!r} is not one of {[*ACTORS, UNKNOWN_ACTOR]}")
    lengths = sessions["trajectory"].list.len().cast(pl.Int64)
    mismatch = (lengths != sessions["n_events"]).fill_null(True)
    if mismatch.any():
        sid = sessions.filter(mismatch)["session_id"][0]
        raise ValueError(f"session {sid!r}: n_events does not match the trajectory length")
    if k is not None:
        labeled = sessions["actor"].is_in(list(ACTORS))
        fold = sessions["fold"]
        bad_fold = labeled & (fold.is_null() | (fold < 0) | (fold >= k))
        if bad_fold.any():
            row = sessions.filter(bad_fold).row(0, named=True)
            raise ValueError(
                f"labeled session {row['session_id']!r} has fold {row['fold']!r}; labeled sessions "
                f"need a fold in [0, {k}) so no kernel that saw them ever scores them"
            )


def fit_kernel_set(transitions: Transitions, folds: np.ndarray, k: int, kappa: float) -> KernelSet:
    """Full kernel plus the ``k`` leave-one-fold-out kernels of one class."""
    return KernelSet(
        full=fit_kernel(transitions, kappa),
        folds=tuple(fit_fold_kernels(transitions, folds, k, kappa)),
    )


def fit_class_kernels(
    sessions: pl.DataFrame,
    actor: str,
    *,
    kappa: float = DEFAULT_KAPPA,
    k: int = DEFAULT_FOLDS,
) -> KernelSet:
    """Fit the :class:`KernelSet` of one actor class from a sessions frame.

    Only sessions labeled ``actor`` are used (unlabeled sessions never fit kernels); sessions with
    fewer than ``MIN_EVENTS_FOR_KERNEL`` events are skipped by the fitter.

    Args:
        sessions: Sessions frame (input contract above); may hold other classes too.
        actor: ``"human"`` or ``"agent"``.
        kappa: Additive smoothing κ >= 0.
        k: Number of folds.
    """
    if actor not in ACTORS:
        raise ValueError(f"actor must be one of {ACTORS}, got {actor!r}")
    validate_sessions(sessions, k)
    own = sessions.filter(pl.col("actor") == actor)
    if own.height == 0:
        logger.warning("no %s sessions: its kernels are uniform (all rows empty)", actor)
    transitions = encode_trajectories(own["trajectory"])
    return fit_kernel_set(transitions, own["fold"].to_numpy(), k, kappa)
