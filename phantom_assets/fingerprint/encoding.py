"""Trajectories -> integer transitions over ``constants.KERNEL_STATES`` (docs/method.md#sessions).

A trajectory is the list of canonical event names of one session, in order, *without* the
``<start>``/``<end>`` tokens. Encoding adds them: a session with L events yields L + 1 transitions
``<start> -> e_1, e_1 -> e_2, ..., e_L -> <end>`` (an empty session yields ``<start> -> <end>``).
State codes are indices into ``KERNEL_STATES`` (``<start>`` = 0, the events 1..17, ``<end>`` = 18),
so every array built from them shares the kernel's row/column order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.constants import END_TOKEN, KERNEL_STATES, START_TOKEN

logger = logging.getLogger(__name__)

N_STATES = len(KERNEL_STATES)
START = KERNEL_STATES.index(START_TOKEN)
END = KERNEL_STATES.index(END_TOKEN)
_EVENT_CODES = {name: i for i, name in enumerate(KERNEL_STATES) if i not in (START, END)}

__all__ = ["END", "N_STATES", "START", "Transitions", "encode_trajectories"]


@dataclass(frozen=True, eq=False)
class Transitions:
    """Flat transition arrays of a set of sessions (one entry per transition).

    Attributes:
        src: Source state code per transition (int64, rows of a kernel).
        dst: Destination state code per transition (int64, columns of a kernel).
        session: Index of the session (0..n_sessions-1) each transition belongs to.
        position: Index of the transition inside its session (0 = ``<start> -> first``).
        n_events: Events per session (int64, length n_sessions); a session has n_events + 1
            transitions, stored contiguously and in order.
    """

    src: np.ndarray
    dst: np.ndarray
    session: np.ndarray
    position: np.ndarray
    n_events: np.ndarray

    @property
    def n_sessions(self) -> int:
        """Number of sessions (including empty ones)."""
        return int(self.n_events.size)

    @property
    def n_transitions(self) -> int:
        """Total number of transitions."""
        return int(self.src.size)

    def select_sessions(self, mask: np.ndarray) -> Transitions:
        """The transitions of the sessions where ``mask`` is true, sessions renumbered 0..n-1."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_sessions,):
            raise ValueError(f"mask shape {mask.shape} != (n_sessions,) = ({self.n_sessions},)")
        new_index = np.cumsum(mask) - 1
        keep = mask[self.session]
        return Transitions(
            src=self.src[keep],
            dst=self.dst[keep],
            session=new_index[self.session[keep]],
            position=self.position[keep],
            n_events=self.n_events[mask],
        )


def _as_list_series(trajectories: pl.Series | Sequence[Sequence[str]]) -> pl.Series:
    if isinstance(trajectories, pl.Series):
        series = trajectories
    else:
        series = pl.Series("trajectory", [list(t) for t in trajectories], dtype=pl.List(pl.String))
    if series.dtype != pl.List(pl.String):
        raise ValueError(f"trajectories must be a list[str] column, got dtype {series.dtype}")
    if series.null_count():
        first = int(series.is_null().arg_true()[0])
        raise ValueError(f"trajectory of session {first} is null; use an empty list instead")
    return series


def _event_codes(flat: pl.Series) -> np.ndarray:
    if flat.null_count():
        raise ValueError("a trajectory contains a null event name; every event needs a name")
    codes = flat.replace_strict(_EVENT_CODES, default=-1, return_dtype=pl.Int64).to_numpy()
    unknown = codes < 0
    if unknown.any():
        bad = flat.filter(pl.Series(unknown)).unique(maintain_order=True).head(5).to_list()
        raise ValueError(
            f"unknown event name(s) {bad} in trajectories; expected canonical names from "
            "constants.VOCABULARY (without <start>/<end> tokens)"
        )
    return codes


def encode_trajectories(trajectories: pl.Series | Sequence[Sequence[str]]) -> Transitions:
    """Encode trajectories into flat transition arrays, adding ``<start>``/``<end>``.

    Args:
        trajectories: A polars ``list[str]`` series (or a sequence of lists) of canonical event
            names per session, in order, without start/end tokens.

    Returns:
        The :class:`Transitions` of all sessions, in input order.

    Raises:
        ValueError: On a null trajectory, a null event, an unknown event name (named in the
            message) or a wrong dtype.
    """
    series = _as_list_series(trajectories)
    n_events = series.list.len().cast(pl.Int64).to_numpy().astype(np.int64)
    flat = series.explode(empty_as_null=False, keep_nulls=True)
    if flat.len() != int(n_events.sum()):  # pragma: no cover - guards a polars semantics change
        raise ValueError(f"exploded {flat.len()} events but list lengths sum to {n_events.sum()}")
    codes = _event_codes(flat)
    n = n_events.size
    # Augmented sequence per session: <start>, events..., <end>; session s occupies
    # [off_s, off_s + L_s + 2) where off_s = sum_{r<s} (L_r + 2).
    seg = n_events + 2
    aug_start = np.cumsum(seg) - seg
    aug = np.empty(int(seg.sum()), dtype=np.int64)
    aug[aug_start] = START
    aug[aug_start + n_events + 1] = END
    session_of_event = np.repeat(np.arange(n), n_events)
    aug[np.arange(codes.size) + 1 + 2 * session_of_event] = codes
    keep = aug[:-1] != END  # drop the <end> -> next <start> pseudo-transitions between sessions
    src = aug[:-1][keep]
    dst = aug[1:][keep]
    per_session = n_events + 1
    session = np.repeat(np.arange(n), per_session)
    first = np.cumsum(per_session) - per_session
    position = np.arange(src.size) - first[session]
    return Transitions(src=src, dst=dst, session=session, position=position, n_events=n_events)
