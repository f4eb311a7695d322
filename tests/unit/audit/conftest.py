"""Builders for audit tests: artifact files on disk and the records that describe them, and
v2 stress tables of the real shape (the calibration study's builder) with planted effects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from phantom_assets.audit import (
    ArtifactRecord,
    CertificationReport,
    GateDecision,
    file_digests_of,
    promotion_gate,
)
from phantom_assets.calibration.gate import (
    BASELINE,
    HARM_BOUND,
    POLICIES,
    STATIC,
    GateLayout,
    stress_table,
)
from phantom_assets.storage import combined_digest

PASSED = {key: () for key in POLICIES}
WINNER = "dqn-robust-a050"


def gate_table(seed: int = 0, **layout) -> pl.DataFrame:
    """A null stress table (no effect anywhere) of the real shape: 24 held-out seeds."""
    return stress_table(GateLayout("null", **layout), np.random.default_rng(seed))


def run_gate(stress: pl.DataFrame, **kwargs) -> GateDecision:
    """`promotion_gate` against the tuned-static baseline, every check passed, the study's
    harm bound."""
    options = {
        "baseline": BASELINE,
        "static": STATIC,
        "failed_checks": PASSED,
        "rng": np.random.default_rng(0),
        "max_human_harm": HARM_BOUND,
    }
    return promotion_gate(stress, **{**options, **kwargs})


def plant(
    stress: pl.DataFrame,
    policy: str,
    *,
    profit: float = 0.0,
    value: float = 0.0,
    harm: float = 0.0,
    split: str | None = None,
    alpha: float | None = None,
    theta: float | None = None,
) -> pl.DataFrame:
    """`profit` added with both detectors, `value` with the fitted one only (a detector value),
    `harm` to the harm share, on `policy`'s rows of `split`, band α `alpha` and evasion share
    `theta` (each: all if None)."""
    rows = pl.col("policy") == policy
    for column, kept in (("split", split), ("alpha", alpha), ("theta", theta)):
        if kept is not None:
            rows &= pl.col(column) == kept
    added = profit + pl.when(pl.col("detector") == "fitted").then(value).otherwise(0.0)
    return stress.with_columns(
        profit=pl.col("profit") + pl.when(rows).then(added).otherwise(0.0),
        human_harm=pl.col("human_harm") + pl.when(rows).then(harm).otherwise(0.0),
    )


def defence(stress: pl.DataFrame, policy: str = WINNER) -> pl.DataFrame:
    """A clear agent-aware defence: +4 fitted profit over the baseline, detector value +1."""
    return plant(stress, policy, profit=3.0, value=1.0)


def record_for(
    asset: str,
    partition: str | None,
    files: dict[str, bytes],
    folder: Path,
    *,
    with_file_digests: bool = True,
    checks: dict[str, bool] | None = None,
) -> ArtifactRecord:
    """Write `files` into `folder` and return a record whose data version is their digest."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in files.items():
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    artifacts = tuple(sorted(str(p) for p in paths))
    return ArtifactRecord(
        asset=asset,
        partition=partition,
        data_version=combined_digest(paths),
        code_version="c0de",
        run_id="run-1234abcd",
        materialized_at="2026-01-02T03:04:05+00:00",
        artifacts=artifacts,
        checks=checks or {},
        metadata={"dagster/row_count": 3},
        file_digests=file_digests_of(artifacts) if with_file_digests else {},
    )


@pytest.fixture
def lineage(tmp_path: Path) -> list[ArtifactRecord]:
    """raw_events batch -> warehouse table (no files) -> kernels (two files) -> report."""
    lake = tmp_path / "lake"
    return [
        record_for("raw_events", "20260101_aa", {"events.parquet": b"raw"}, lake / "raw"),
        ArtifactRecord("sessions", None, "dbt1", "sql1", "run-dbt", "2026-01-02T00:00:00+00:00"),
        record_for(
            "transition_kernels",
            "agent|airline",
            {"kernel.parquet": b"kernel-bytes", "fold_kernels.parquet": b"fold-bytes"},
            lake / "kernels",
            checks={"rows_sum_to_one": True},
        ),
        record_for("separability_report", "airline", {"report.json": b"{}"}, lake / "report"),
    ]


@pytest.fixture
def report(lineage: list[ArtifactRecord]) -> CertificationReport:
    return CertificationReport(
        store="airline",
        policy="ppo-robust-a030",
        certified=True,
        reasons=("certified: because",),
        records=tuple(lineage),
        gate={
            "candidate": "ppo-robust-a050",
            "baseline": "tuned-a050",
            "static": "static-a050",
            "n_pairs": 24,
            "p_value": 0.0039,
            "selection_seeds": list(range(17, 25)),
            "test_seeds": list(range(100, 124)),
            "comparisons": [
                {
                    "role": "profit vs the best undefended response",
                    "n": 24,
                    "mean": 1.5,
                    "ci_low": 0.5,
                    "ci_high": 2.5,
                    "p_value": 0.0039,
                    "threshold": 0.0,
                    "alternative": "greater",
                    "compared_at": [
                        {"alpha0": 0.5, "alpha": 0.3, "theta": 0.0},
                        {"alpha0": 1.0, "alpha": 0.8, "theta": 0.25},
                    ],
                },
                {
                    "role": "detector value beyond engagement",
                    "n": 24,
                    "mean": 0.25,
                    "ci_low": 0.125,
                    "ci_high": 0.5,
                    "p_value": 0.0039,
                    "threshold": 0.0,
                    "alternative": "greater",
                    "compared_at": [
                        {"alpha0": 0.5, "alpha": 0.7, "theta": 0.25},
                        {"alpha0": 1.0, "alpha": 1.0, "theta": 0.25},
                    ],
                },
                {
                    "role": "total human harm",
                    "n": 24,
                    "mean": 0.005,
                    "ci_low": 0.003,
                    "ci_high": 0.007,
                    "p_value": 0.001,
                    "threshold": 0.02,
                    "alternative": "less",
                    "compared_at": [
                        {"alpha0": 0.5, "alpha": 0.5, "theta": 0.0},
                        {"alpha0": 1.0, "alpha": 1.0, "theta": 0.0},
                    ],
                },
            ],
            "evasion_thetas": [0.0, 0.25],
            "candidates": [
                {
                    "policy": "ppo-robust-a050",
                    "profit_advantage": 1.25,
                    "detector_value": 0.5,
                    "score": 0.5,
                    "human_harm": 0.004,
                    "p_profit": 0.0039,
                    "p_detector": 0.0039,
                    "p_harm": 0.001,
                    "p_value": 0.0039,
                    "p_holm": 0.0039,
                    "failed_checks": [],
                },
            ],
            "reported": {
                "profit_vs_static": {
                    "reference": "static-a050",
                    "n": 24,
                    "mean": 2.0,
                    "ci_low": None,
                    "ci_high": 3.0,
                    "p_value": 0.0078,
                    "threshold": 0.0,
                    "alternative": "greater",
                    "compared_at": [{"alpha0": 0.5, "alpha": 0.3, "theta": 0.0}],
                },
                "false_positive_rate_at_alpha_0": 0.021,
                "human_quoted_up": 0.03,
            },
        },
        config={"profile": "demo", "alpha_grid": [0.0, 0.3]},
        seeds={"train": 7, "eval": [1, 2]},
        environment={"python": "3.11.9", "packages": {"numpy": "2.4.0"}, "git_revision": None},
    )
