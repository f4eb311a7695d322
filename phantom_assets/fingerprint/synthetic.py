"""Synthetic Markov-chain sessions for benchmarks and tests (vectorized over sessions).

A chain is an ``(S, S)`` row-stochastic matrix over ``KERNEL_STATES`` (rows = sources). Sampling
runs all sessions in parallel and loops only over the step index (at most ``max_events + 1``).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.constants import KERNEL_STATES
from phantom_assets.fingerprint.encoding import END, N_STATES, START
from phantom_assets.fingerprint.folds import assign_folds

__all__ = ["random_chain", "sample_trajectories", "synthetic_sessions"]

_EVENTS = np.arange(N_STATES)[(np.arange(N_STATES) != START) & (np.arange(N_STATES) != END)]


def random_chain(
    rng: np.random.Generator, concentration: float = 0.5, end_prob: float = 0.05
) -> np.ndarray:
    """A random chain: Dirichlet(concentration) rows over the events, P(event -> <end>) = end_prob.

    ``<start>`` never goes straight to ``<end>`` (no empty sessions); ``<end>`` is absorbing.
    """
    if not 0.0 < end_prob < 1.0:
        raise ValueError(f"end_prob must lie in (0, 1), got {end_prob!r}")
    chain = np.zeros((N_STATES, N_STATES))
    rows = rng.dirichlet(np.full(_EVENTS.size, concentration), size=N_STATES)
    chain[:, _EVENTS] = rows
    chain[_EVENTS, :] *= 1.0 - end_prob
    chain[_EVENTS, END] = end_prob
    chain[END, :] = 0.0
    chain[END, END] = 1.0
    return chain


def sample_trajectories(
    chain: np.ndarray, n_sessions: int, rng: np.random.Generator, max_events: int = 200
) -> pl.Series:
    """Sample ``n_sessions`` trajectories (event names, no start/end tokens) from ``chain``.

    Sessions that have not reached ``<end>`` after ``max_events`` events are truncated there.
    """
    import pyarrow as pa

    chain = np.asarray(chain, dtype=np.float64)
    if chain.shape != (N_STATES, N_STATES) or not np.allclose(chain.sum(axis=1), 1.0):
        raise ValueError(f"chain must be a row-stochastic ({N_STATES}, {N_STATES}) matrix")
    cumulative = np.cumsum(chain, axis=1)
    cumulative[:, -1] = 1.0 + 1e-12  # guard against round-off at the top of the CDF
    events = np.full((n_sessions, max_events), -1, dtype=np.int64)
    state = np.full(n_sessions, START, dtype=np.int64)
    active = np.arange(n_sessions)
    for step in range(max_events):  # loop over steps, vectorized over the active sessions
        u = rng.random(active.size)
        nxt = (u[:, None] >= cumulative[state[active]]).sum(axis=1)
        alive = nxt != END
        active, nxt = active[alive], nxt[alive]
        events[active, step] = nxt
        state[active] = nxt
        if active.size == 0:
            break
    lengths = (events >= 0).sum(axis=1)
    names = np.asarray(KERNEL_STATES, dtype=object)[events[events >= 0]]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    array = pa.ListArray.from_arrays(pa.array(offsets), pa.array(names, type=pa.string()))
    return pl.Series("trajectory", pl.from_arrow(array)).cast(pl.List(pl.String))


def synthetic_sessions(
    human_chain: np.ndarray,
    agent_chain: np.ndarray,
    n_human: int,
    n_agent: int,
    rng: np.random.Generator,
    *,
    k: int = 5,
    store: str = "hotel",
    max_events: int = 200,
) -> pl.DataFrame:
    """A labeled sessions frame (fingerprint input contract) sampled from two chains."""
    trajectories = pl.concat(
        [
            sample_trajectories(human_chain, n_human, rng, max_events),
            sample_trajectories(agent_chain, n_agent, rng, max_events),
        ]
    )
    actor = np.repeat(np.array(["human", "agent"]), [n_human, n_agent])
    ids = pl.Series("session_id", [f"{store}-{i:08d}" for i in range(n_human + n_agent)])
    return pl.DataFrame(
        {
            "session_id": ids,
            "store": pl.Series([store] * (n_human + n_agent), dtype=pl.String),
            "actor": pl.Series(actor.tolist(), dtype=pl.String),
            "fold": pl.Series(assign_folds(ids, k), dtype=pl.Int64),
            "trajectory": trajectories,
            "n_events": trajectories.list.len().cast(pl.Int64),
        }
    )
