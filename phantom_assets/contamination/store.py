"""The contamination artifacts in the lake: scored sessions in, G(α) datasets out.

The one place that turns the fingerprint's stored sessions and scores into the generator's inputs
and writes a contaminated dataset (sessions, demand proxy, α̂ report) into its folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import polars as pl

from phantom_assets.constants import ACTORS
from phantom_assets.lake import ALPHA_HAT_FILE, DEMAND_FILE, SCORES_FILE, SESSIONS_FILE, Lake
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

__all__ = [
    "mean_f_by_alpha",
    "read_human_sessions",
    "read_labeled_f",
    "read_session_f",
    "write_contaminated_dataset",
]


def read_session_f(lake: Lake, store: str) -> pl.DataFrame:
    """`session_id, f` of every scored session of `store` (out of fold for labeled ones)."""
    return pl.read_parquet(lake.scores_dir(store) / SCORES_FILE).select("session_id", "f")


def read_human_sessions(lake: Lake, store: str, event_times: pl.DataFrame) -> pl.DataFrame:
    """The store's labeled human sessions with their f and per-event times (`ts`).

    Args:
        lake: the lake.
        store: the store.
        event_times: `session_id, ts` (a list of event times in trajectory order) per session.
    """
    return (
        pl.read_parquet(lake.labeled_sessions(store, ACTORS[0]))
        .join(read_session_f(lake, store), on="session_id", how="left", maintain_order="left")
        .join(event_times, on="session_id", how="left", maintain_order="left")
    )


def read_labeled_f(lake: Lake, store: str) -> pl.DataFrame:
    """`session_id, actor, experiment_id, f` of both classes' labeled sessions of `store`."""
    scores = read_session_f(lake, store)
    return pl.concat(
        [
            pl.read_parquet(lake.labeled_sessions(store, actor))
            .select("session_id", "actor", "experiment_id")
            .join(scores, on="session_id", how="left", maintain_order="left")
            for actor in ACTORS
        ]
    )


def write_contaminated_dataset(
    frame: pl.DataFrame,
    demand: Mapping[str, float],
    alpha_hat: Mapping[str, object],
    folder: Path,
) -> tuple[Path, Path, Path]:
    """Write a G(α) dataset's sessions, demand proxy and α̂ report into `folder` (atomically).

    Returns:
        The written paths (sessions, demand proxy, α̂ report).
    """
    paths = folder / SESSIONS_FILE, folder / DEMAND_FILE, folder / ALPHA_HAT_FILE
    write_parquet_atomic(frame, paths[0])
    write_json_atomic(demand, paths[1])
    write_json_atomic(alpha_hat, paths[2])
    return paths


def mean_f_by_alpha(lake: Lake, store: str, alphas: Iterable[float]) -> dict[float, float]:
    """Mean f of every materialized α partition of `store` among `alphas` (files on disk)."""
    paths = {alpha: lake.contaminated_dir(store, alpha) / SESSIONS_FILE for alpha in alphas}
    return {
        alpha: float(pl.scan_parquet(path).select(pl.col("f").mean()).collect().item())
        for alpha, path in paths.items()
        if path.exists()
    }
