"""Timing: inter-event gaps within sessions and start times of sessions.

Humans are slow and bursty: lognormal reading gaps of seconds, fast bursts of hovers, and the odd
distraction of a minute or more (heavy tail). Agents are fast and regular: 0.3-2 s gaps with a small
spread. All parameters come from the session's profile, so at separability 0 both match.
"""

from __future__ import annotations

import numpy as np

from phantom_assets.constants import HOVER_EVENTS, VOCABULARY
from phantom_assets.simulate.layout import BUY, RECON, SECOND, Layout

__all__ = ["MIN_GAP_MS", "PRICE_LOG_DELAY_MS", "event_offsets_ms", "session_starts_ms"]

MIN_GAP_MS = 150  # no two interactions of a session closer than this
PRICE_LOG_DELAY_MS = (1, 20)  # a price log follows its interaction by this many ms (inclusive)
BURST_SIGMA = 0.5
LONG_SIGMA = 0.8
WINDOW_DAYS = 14  # experiments start uniformly within this window after the start date
RETURN_MEDIAN_S = 3 * 3600.0  # median pause before a human's return visit
RETURN_SIGMA = 1.0
AGENT_SESSION_PAUSE_S = (2.0, 45.0)  # pause between an agent's clean sessions
_HOVER_CODES = np.array([VOCABULARY.index(e) for e in HOVER_EVENTS])


def event_offsets_ms(
    session: np.ndarray, event: np.ndarray, layout: Layout, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of events from their session's start, and the gap before each event.

    Args:
        session: (N,) session index of each event, session-major, in emission order.
        event: (N,) vocabulary index of each event.
        layout: Layout holding the per-session timing parameters.
        rng: Source of randomness.

    Returns:
        `(offset_ms, gap_ms)`, int64; both 0 at the first event of a session.
    """
    n = session.size
    read = _lognormal(
        layout.param("gap_median_s")[session], layout.param("gap_sigma")[session], rng
    )
    burst_median = layout.param("burst_median_s")[session]
    burst = _lognormal(burst_median, np.full(n, BURST_SIGMA), rng)
    long_gap = _lognormal(layout.param("long_median_s")[session], np.full(n, LONG_SIGMA), rng)
    is_burst = np.isin(event, _HOVER_CODES) & (rng.random(n) < layout.param("p_burst")[session])
    is_long = rng.random(n) < layout.param("p_long")[session]
    gap_s = np.where(is_burst, burst, read) + np.where(is_long, long_gap, 0.0)
    gap = np.maximum(np.rint(gap_s * 1000.0), MIN_GAP_MS).astype(np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = session[1:] != session[:-1]
    gap[first] = 0
    return _group_cumsum(gap, first), gap


def session_starts_ms(
    layout: Layout, duration_ms: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Start of each session in ms after the simulation's start date.

    Experiments start uniformly within `WINDOW_DAYS`; a human's return visit follows the first
    after hours; an agent's clean sessions follow each other within seconds.

    Args:
        layout: Experiments and sessions (sessions contiguous per experiment).
        duration_ms: (S,) duration of each session (last event offset).
        rng: Source of randomness.

    Returns:
        (S,) int64 start offsets.
    """
    n_s = layout.n_sessions
    xp_start = rng.integers(0, WINDOW_DAYS * 86_400_000, size=layout.xp_task.size)
    returning = _lognormal(np.full(n_s, RETURN_MEDIAN_S), np.full(n_s, RETURN_SIGMA), rng)
    pause_s = np.where(
        layout.session_role == SECOND,
        returning,
        np.where(
            np.isin(layout.session_role, (RECON, BUY)),
            rng.uniform(*AGENT_SESSION_PAUSE_S, size=n_s),
            0.0,
        ),
    )
    first = layout.session_rank == 0
    previous_duration = np.concatenate([[0], duration_ms[:-1]])
    step = np.where(first, 0, previous_duration + np.rint(pause_s * 1000.0).astype(np.int64))
    return xp_start[layout.session_xp] + _group_cumsum(step, first)


def _lognormal(median: np.ndarray, sigma: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Lognormal draws with per-element median and sigma."""
    return np.exp(np.log(median) + sigma * rng.standard_normal(median.size))


def _group_cumsum(values: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    """Cumulative sum of `values` restarting at every True of `group_start` (element 0 is True)."""
    total = np.cumsum(values)
    starts = np.flatnonzero(group_start)
    base = (total - values)[starts]
    group = np.cumsum(group_start) - 1
    return total - base[group]
