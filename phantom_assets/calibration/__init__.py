"""Simulation studies that show every reported test holds its level and every interval its
coverage (docs/statistics.md#calibration-studies). Pure numpy/polars; each study module exposes
`studies(n_reps, rng) -> list[CalibrationResult]`, and `run_studies` runs them in turn.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence

import numpy as np

from phantom_assets.calibration.result import CalibrationResult, PowerResult, binomial_se

STUDY_MODULES: tuple[str, ...] = (
    "gate",
    "benchmark",
    "separability",
    "alpha_hat",
    "erosion",
    "prices",
    "mean_test",
    "demand",
    "store_sample",
    "quote_recall",
)
"""Every procedure the pipeline reports, by the module that calibrates it."""

__all__ = ["STUDY_MODULES", "CalibrationResult", "PowerResult", "binomial_se", "run_studies"]


def run_studies(
    n_reps: int, seed: int, modules: Sequence[str] = STUDY_MODULES
) -> Iterator[CalibrationResult]:
    """Yield every study's results, module by module (each with its own seeded generator).

    Raises:
        ValueError: for an unknown module name or `n_reps` < 1.
    """
    unknown = set(modules) - set(STUDY_MODULES)
    if unknown:
        raise ValueError(f"unknown calibration studies {sorted(unknown)}; choose {STUDY_MODULES}")
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    for index, name in enumerate(modules):  # a handful of study modules
        module = importlib.import_module(f"phantom_assets.calibration.{name}")
        yield from module.studies(n_reps, np.random.default_rng([seed, index]))
