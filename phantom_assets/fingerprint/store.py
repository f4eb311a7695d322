"""The fingerprint artifacts in the lake: kernel sets, labeled sessions and score calibrations.

The one place that writes a store × class kernel set and turns stored files back into fingerprint
objects. A kernel set is stored with the κ it was fitted with (`kernel.json`), so every reader
rebuilds the kernels of that κ, never the one the current settings name.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from phantom_assets.constants import ACTORS, KERNEL_STATES
from phantom_assets.fingerprint.calibration import ScoreCalibration
from phantom_assets.fingerprint.kernels import kernel_frame, kernel_from_frame
from phantom_assets.fingerprint.sessions import SESSION_SCHEMA, KernelSet
from phantom_assets.lake import (
    CALIBRATION_FILE,
    FOLD_KERNELS_FILE,
    KERNEL_FILE,
    KERNEL_META_FILE,
    Lake,
)
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

__all__ = [
    "KernelMeta",
    "load_kernel_meta",
    "load_kernel_set",
    "load_score_calibration",
    "read_kernel_meta",
    "read_kernel_set",
    "read_labeled_sessions",
    "write_kernel_set",
]


@dataclass(frozen=True)
class KernelMeta:
    """What `kernel.json` records beside a kernel set: its κ, fold count and state labels."""

    kappa: float
    folds: int
    states: tuple[str, ...] = KERNEL_STATES

    @classmethod
    def of(cls, kernels: KernelSet) -> KernelMeta:
        """The record of `kernels` (every kernel of a set shares one κ)."""
        kappas = {kernel.kappa for kernel in (kernels.full, *kernels.folds)}
        if len(kappas) != 1:
            raise ValueError(f"a kernel set must share one kappa, got {sorted(kappas)}")
        return cls(kappa=kappas.pop(), folds=kernels.k, states=kernels.full.states)


def write_kernel_set(kernels: KernelSet, folder: Path) -> tuple[Path, Path, Path]:
    """Write the full kernel, the fold kernels and `kernel.json` into `folder` (atomically).

    Returns:
        The three written paths (kernel, fold kernels, metadata).
    """
    paths = folder / KERNEL_FILE, folder / FOLD_KERNELS_FILE, folder / KERNEL_META_FILE
    folds = [kernel_frame(kernel, fold=j) for j, kernel in enumerate(kernels.folds)]
    write_parquet_atomic(kernel_frame(kernels.full), paths[0])
    write_parquet_atomic(pl.concat(folds), paths[1])
    write_json_atomic(asdict(KernelMeta.of(kernels)), paths[2])
    return paths


def read_kernel_meta(folder: Path) -> KernelMeta:
    """The `kernel.json` of a kernels folder.

    Raises:
        FileNotFoundError: when the folder predates stored κ (re-materialize transition_kernels).
        ValueError: when the kernels were written with other state labels.
    """
    path = folder / KERNEL_META_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the kernels in {folder} were written without their κ; "
            "re-materialize transition_kernels"
        )
    payload = json.loads(path.read_text())
    meta = KernelMeta(float(payload["kappa"]), int(payload["folds"]), tuple(payload["states"]))
    if meta.states != KERNEL_STATES:
        raise ValueError(
            f"{path} lists states {meta.states}, not the current {KERNEL_STATES}; "
            "re-materialize transition_kernels"
        )
    return meta


def read_kernel_set(folder: Path) -> KernelSet:
    """The kernel set stored in `folder`, with the κ recorded in its `kernel.json`."""
    meta = read_kernel_meta(folder)
    frames = pl.read_parquet(folder / FOLD_KERNELS_FILE).partition_by("fold", maintain_order=True)
    if len(frames) != meta.folds:
        raise ValueError(
            f"{folder / FOLD_KERNELS_FILE} holds {len(frames)} folds, {KERNEL_META_FILE} "
            f"records {meta.folds}; re-materialize transition_kernels"
        )
    return KernelSet(
        full=kernel_from_frame(pl.read_parquet(folder / KERNEL_FILE), kappa=meta.kappa),
        folds=tuple(kernel_from_frame(frame, kappa=meta.kappa) for frame in frames),
    )


def load_kernel_set(lake: Lake, store: str, actor: str) -> KernelSet:
    """The stored kernel set of one store × actor class."""
    return read_kernel_set(lake.kernels_dir(store, actor))


def load_kernel_meta(lake: Lake, store: str) -> KernelMeta:
    """The κ and folds both class kernel sets of `store` were fitted with (they must agree)."""
    human, agent = (read_kernel_meta(lake.kernels_dir(store, actor)) for actor in ACTORS)
    if human != agent:
        raise ValueError(
            f"store {store!r}: the class kernels were fitted with different settings "
            f"({human} vs {agent}); re-materialize transition_kernels for {store}"
        )
    return human


def read_labeled_sessions(lake: Lake, store: str, *extra: str) -> pl.DataFrame:
    """Both classes' labeled sessions of `store` in the scoring schema (plus `extra` columns)."""
    return pl.concat(
        [
            pl.read_parquet(lake.labeled_sessions(store, actor)).select(*SESSION_SCHEMA, *extra)
            for actor in ACTORS
        ]
    ).cast(SESSION_SCHEMA)


def load_score_calibration(lake: Lake, store: str) -> ScoreCalibration:
    """The `calibration.json` written beside a store's divergence scores."""
    path = lake.scores_dir(store) / CALIBRATION_FILE
    return ScoreCalibration.from_dict(json.loads(path.read_text()))
