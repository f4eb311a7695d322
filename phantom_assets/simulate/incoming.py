"""`simulate_to_incoming`: a demo drop of raw exports, one file per format (`phantom simulate`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.simulate.corpus import simulate_events
from phantom_assets.simulate.exports import ALL_FORMATS, write_exports
from phantom_assets.simulate.params import SimulatedCorpus, params_from

__all__ = ["simulate_to_incoming"]

_SPLIT_SALT = 4_242  # seeds the experiment -> format assignment (independent of the corpus draws)


def _subset(corpus: SimulatedCorpus, experiment_ids: pl.Series) -> SimulatedCorpus:
    """The part of `corpus` belonging to the given experiments."""
    return SimulatedCorpus(
        corpus.events.filter(pl.col("experiment_id").is_in(experiment_ids.implode())),
        corpus.experiments.filter(pl.col("experimentId").is_in(experiment_ids.implode())),
        corpus.params,
    )


def simulate_to_incoming(
    settings_like: Any, incoming_dir: Path, *, partition: bool = True
) -> list[Path]:
    """Simulate a corpus and drop it into `incoming_dir` as one file per raw format.

    By default the experiments (with all their sessions) are dealt round-robin, in a seeded random
    order, into four disjoint groups, one per format of `ALL_FORMATS`, so every session appears
    exactly once across the folder and the demo exercises every reader. Each group mixes stores.

    Args:
        settings_like: `SimulationParams`, `SimulationConfig` or `Settings` (see `params_from`).
        incoming_dir: The drop zone (created if missing).
        partition: False writes the whole corpus in every format (each session four times).

    Returns:
        Every file written (data files and label sidecars).
    """
    params = params_from(settings_like)
    corpus = simulate_events(params)
    xp_ids = corpus.experiments["experimentId"]
    order = np.random.default_rng([params.seed, _SPLIT_SALT]).permutation(xp_ids.len())
    group = np.empty(xp_ids.len(), dtype=np.int64)
    group[order] = np.arange(xp_ids.len()) % len(ALL_FORMATS)
    written: list[Path] = []
    for k, fmt in enumerate(ALL_FORMATS):
        part = _subset(corpus, xp_ids.filter(group == k)) if partition else corpus
        if part.events.is_empty():
            continue
        prefix = f"sim{params.seed}-{fmt.replace('_', '-')}"
        written += write_exports(part, Path(incoming_dir), formats=(fmt,), prefix=prefix)
    return written
