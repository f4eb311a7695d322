"""Small synthetic builders for the fingerprint unit tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
import pytest

from phantom_assets.fingerprint import assign_folds, random_chain, synthetic_sessions


def make_sessions(
    trajectories: Sequence[Sequence[str]],
    actors: Sequence[str],
    folds: Sequence[int] | None = None,
    *,
    k: int = 5,
    store: str = "hotel",
) -> pl.DataFrame:
    """A sessions frame in the fingerprint input contract (folds hashed unless given)."""
    ids = [f"s{i:04d}" for i in range(len(trajectories))]
    fold = np.asarray(folds) if folds is not None else assign_folds(ids, k)
    fold = np.where(np.asarray(actors) == "unknown", -1, fold) if folds is None else fold
    return pl.DataFrame(
        {
            "session_id": pl.Series(ids, dtype=pl.String),
            "store": pl.Series([store] * len(ids), dtype=pl.String),
            "actor": pl.Series(list(actors), dtype=pl.String),
            "fold": pl.Series(fold, dtype=pl.Int64),
            "trajectory": pl.Series([list(t) for t in trajectories], dtype=pl.List(pl.String)),
            "n_events": pl.Series([len(t) for t in trajectories], dtype=pl.Int64),
        }
    )


@pytest.fixture
def separable_sessions() -> pl.DataFrame:
    """Humans and agents from two different random chains (seeded), in the simulator's shape:
    40 human experiments of 1-2 sessions, 20 agent experiments of 3-6 sessions."""
    rng = np.random.default_rng(2024)
    return synthetic_sessions(
        random_chain(rng),
        random_chain(rng),
        40,
        20,
        rng,
        max_events=60,
        human_sessions=(1, 2),
        agent_sessions=(3, 6),
    )


@pytest.fixture
def same_chain_sessions() -> pl.DataFrame:
    """Humans and agents from the SAME random chain (nothing to detect), with a subject effect
    (each experiment's sessions share a perturbed chain) and agents using more sessions."""
    rng = np.random.default_rng(7)
    chain = random_chain(rng, end_prob=0.1)
    return synthetic_sessions(
        chain,
        chain,
        60,
        30,
        rng,
        max_events=60,
        human_sessions=(1, 2),
        agent_sessions=(3, 6),
        subject_concentration=10.0,
    )
