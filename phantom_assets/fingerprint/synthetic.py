"""Synthetic Markov-chain sessions for benchmarks, tests and calibration studies (vectorized).

A chain is an ``(S, S)`` row-stochastic matrix over ``KERNEL_STATES`` (rows = sources). Sampling
runs all sessions in parallel and loops only over the step index (at most ``max_events + 1``);
each session may follow its own chain (``chains[chain_of_session[i]]``), which is how a subject
effect is simulated: an experiment draws a perturbed copy of its class chain
(:func:`perturbed_chains`) and all its sessions share it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.constants import KERNEL_STATES
from phantom_assets.fingerprint.encoding import END, N_STATES, START
from phantom_assets.fingerprint.folds import assign_folds

__all__ = [
    "perturbed_chains",
    "random_chain",
    "sample_event_codes",
    "sample_trajectories",
    "sessions_per_experiment",
    "synthetic_sessions",
    "transitions_from_codes",
]

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


def _check_chains(chains: np.ndarray) -> np.ndarray:
    chains = np.asarray(chains, dtype=np.float64)
    if chains.shape[-2:] != (N_STATES, N_STATES) or not np.allclose(chains.sum(axis=-1), 1.0):
        raise ValueError(f"chains must be row-stochastic (..., {N_STATES}, {N_STATES}) matrices")
    return chains.reshape(-1, N_STATES, N_STATES)


def perturbed_chains(
    base: np.ndarray, n: int, concentration: float, rng: np.random.Generator
) -> np.ndarray:
    """``n`` subject chains, each row ~ Dirichlet(concentration · base row) on the row's support.

    Larger ``concentration`` = subjects closer to ``base``; ``<end>`` stays absorbing.
    """
    if not np.isfinite(concentration) or concentration <= 0:
        raise ValueError(f"concentration must be a finite number > 0, got {concentration!r}")
    base = _check_chains(base)[0]
    shape = np.broadcast_to(concentration * base, (n, N_STATES, N_STATES))
    draws = np.where(shape > 0, rng.gamma(np.maximum(shape, 1e-300)), 0.0)
    chains = draws / draws.sum(axis=-1, keepdims=True)
    chains[:, END, :] = 0.0
    chains[:, END, END] = 1.0
    return chains


def sample_event_codes(
    chains: np.ndarray,
    chain_of_session: np.ndarray,
    rng: np.random.Generator,
    max_events: int = 200,
) -> np.ndarray:
    """Event codes ``(n, max_events)``, -1 after the end, of ``chains[chain_of_session]`` sessions.

    Sessions that have not reached ``<end>`` after ``max_events`` events are truncated there.
    """
    chains = _check_chains(chains)
    cumulative = np.cumsum(chains, axis=-1)
    cumulative[..., -1] = 1.0 + 1e-12  # guard against round-off at the top of the CDF
    which = np.asarray(chain_of_session, dtype=np.int64)
    n_sessions = which.size
    events = np.full((n_sessions, max_events), -1, dtype=np.int64)
    state = np.full(n_sessions, START, dtype=np.int64)
    active = np.arange(n_sessions)
    for step in range(max_events):  # loop over steps, vectorized over the active sessions
        u = rng.random(active.size)
        nxt = (u[:, None] >= cumulative[which[active], state[active]]).sum(axis=1)
        alive = nxt != END
        active, nxt = active[alive], nxt[alive]
        events[active, step] = nxt
        state[active] = nxt
        if active.size == 0:
            break
    return events


def transitions_from_codes(
    events: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(session, src, dst, n_events)`` with ``<start>``/``<end>`` added, as the encoder does."""
    n, width = events.shape
    n_events = (events >= 0).sum(axis=1)
    full = np.full((n, width + 2), END, dtype=np.int64)
    full[:, 0] = START
    full[:, 1 : width + 1] = np.where(events >= 0, events, END)
    used = np.arange(width + 1)[None, :] <= n_events[:, None]
    session = np.broadcast_to(np.arange(n)[:, None], used.shape)[used]
    return session, full[:, :-1][used], full[:, 1:][used], n_events


def sample_trajectories(
    chain: np.ndarray, n_sessions: int, rng: np.random.Generator, max_events: int = 200
) -> pl.Series:
    """Sample ``n_sessions`` trajectories (event names, no start/end tokens) from ``chain``."""
    import pyarrow as pa

    events = sample_event_codes(chain, np.zeros(n_sessions, dtype=np.int64), rng, max_events)
    return _as_series(events, pa)


def _as_series(events: np.ndarray, pa) -> pl.Series:
    lengths = (events >= 0).sum(axis=1)
    names = np.asarray(KERNEL_STATES, dtype=object)[events[events >= 0]]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    array = pa.ListArray.from_arrays(pa.array(offsets), pa.array(names, type=pa.string()))
    return pl.Series("trajectory", pl.from_arrow(array)).cast(pl.List(pl.String))


def sessions_per_experiment(
    n_experiments: int, sessions: tuple[int, int], rng: np.random.Generator
) -> np.ndarray:
    """Sessions of each experiment, uniform on the inclusive range ``sessions``."""
    low, high = sessions
    if not 1 <= low <= high:
        raise ValueError(f"sessions range must satisfy 1 <= low <= high, got {sessions!r}")
    if low == high:
        return np.full(n_experiments, low, dtype=np.int64)
    return rng.integers(low, high + 1, size=n_experiments)


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
    human_sessions: tuple[int, int] = (1, 1),
    agent_sessions: tuple[int, int] = (1, 1),
    subject_concentration: float | None = None,
) -> pl.DataFrame:
    """A labeled sessions frame (fingerprint input contract + ``experiment_id``) from two chains.

    Args:
        human_chain: Chain of the human class.
        agent_chain: Chain of the agent class.
        n_human: Human experiments.
        n_agent: Agent experiments.
        rng: Random generator.
        k: Folds (hashed from the experiment id, so an experiment's sessions share one).
        store: Store name (prefix of the ids).
        max_events: Truncation length of a session.
        human_sessions: Inclusive range of sessions per human experiment.
        agent_sessions: Inclusive range of sessions per agent experiment.
        subject_concentration: If given, each experiment draws its own chain around its class
            chain (:func:`perturbed_chains`), shared by its sessions (a subject effect).
    """
    import pyarrow as pa

    sizes = np.concatenate(
        [
            sessions_per_experiment(n_human, human_sessions, rng),
            sessions_per_experiment(n_agent, agent_sessions, rng),
        ]
    )
    xp_agent = np.arange(n_human + n_agent) >= n_human
    if subject_concentration is None:
        chains, chain_of_xp = np.stack([human_chain, agent_chain]), xp_agent.astype(np.int64)
    else:
        chains = np.concatenate(
            [
                perturbed_chains(human_chain, n_human, subject_concentration, rng),
                perturbed_chains(agent_chain, n_agent, subject_concentration, rng),
            ]
        )
        chain_of_xp = np.arange(n_human + n_agent)
    session_xp = np.repeat(np.arange(n_human + n_agent), sizes)
    events = sample_event_codes(chains, chain_of_xp[session_xp], rng, max_events)
    trajectories = _as_series(events, pa)
    n = session_xp.size
    experiment = pl.Series("experiment_id", [f"{store}-x{i:06d}" for i in session_xp])
    actor = np.where(xp_agent[session_xp], "agent", "human")
    return pl.DataFrame(
        {
            "session_id": pl.Series([f"{store}-{i:08d}" for i in range(n)], dtype=pl.String),
            "store": pl.Series([store] * n, dtype=pl.String),
            "actor": pl.Series(actor.tolist(), dtype=pl.String),
            "fold": pl.Series(assign_folds(experiment, k), dtype=pl.Int64),
            "trajectory": trajectories,
            "n_events": trajectories.list.len().cast(pl.Int64),
            "experiment_id": experiment,
        }
    )
