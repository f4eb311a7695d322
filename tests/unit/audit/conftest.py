"""Builders for audit tests: artifact files on disk and the records that describe them."""

from __future__ import annotations

from pathlib import Path

import pytest

from phantom_assets.audit import ArtifactRecord, CertificationReport, file_digests_of
from phantom_assets.storage import combined_digest


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
            "baseline": "ppo-baseline-a050",
            "static": "static-a000",
            "n_pairs": 8,
            "p_value": 0.0039,
            "selection_seeds": list(range(17, 25)),
            "test_seeds": list(range(100, 108)),
            "comparisons": [
                {
                    "reference": "ppo-baseline-a050",
                    "role": "baseline twin",
                    "n": 8,
                    "mean_diff": 1.5,
                    "ci_low": 0.5,
                    "ci_high": 2.5,
                    "p_value": 0.0039,
                },
            ],
        },
        config={"profile": "demo", "alpha_grid": [0.0, 0.3]},
        seeds={"train": 7, "eval": [1, 2]},
        environment={"python": "3.11.9", "packages": {"numpy": "2.4.0"}, "git_revision": None},
    )
