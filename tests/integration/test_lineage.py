"""Lineage walk over a real instance (the session's built pipeline): separability_report[hotel]
back to every raw batch, and offline tamper evidence over the files that walk records (on a
copy)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from phantom_assets.assets.lineage import collect_lineage
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.audit import (
    ArtifactRecord,
    CertificationReport,
    failed_blocking_checks,
    verify_records,
)
from phantom_assets.config import Settings
from tests.built_pipeline import BuiltPipeline
from tests.pipeline_helpers import demo_definitions

WAREHOUSE_TABLES = {"stg_events", "sessions", "session_labels"}


@dataclasses.dataclass(frozen=True)
class Built:
    settings: Settings
    instance: dg.DagsterInstance
    batches: list[str]
    records: list[ArtifactRecord]


def _built(pipeline: BuiltPipeline) -> Iterator[Built]:
    with pipeline.instance() as instance:
        records = collect_lineage(
            instance,
            demo_definitions().resolve_asset_graph(),
            dg.AssetKey("separability_report"),
            "hotel",
        )
        batches = sorted(instance.get_dynamic_partitions(BATCH_PARTITIONS_NAME))
        yield Built(pipeline.settings, instance, batches, records)


@pytest.fixture(scope="module")
def built(built_pipeline: BuiltPipeline) -> Iterator[Built]:
    """The lineage of the shared build's separability_report[hotel]."""
    yield from _built(built_pipeline)


@pytest.fixture
def copied(built_pipeline: BuiltPipeline, tmp_path: Path) -> Iterator[tuple[Built, Path]]:
    """The same lineage of a private copy (its files may be tampered with), and the data root
    it was copied from (the copy's instance records the original's artifact paths)."""
    for built in _built(built_pipeline.copy_to(tmp_path)):
        yield built, built_pipeline.data_dir


def _partitions(records: list[ArtifactRecord], asset: str) -> list[str | None]:
    return [r.partition for r in records if r.asset == asset]


def test_collect_lineage_reaches_every_raw_events_batch(built: Built):
    assert _partitions(built.records, "raw_events") == built.batches
    assert len(built.batches) == 5


def test_collect_lineage_follows_partition_mappings_to_the_store(built: Built):
    assert _partitions(built.records, "separability_report") == ["hotel"]
    assert _partitions(built.records, "divergence_scores") == ["hotel"]
    for asset in ("labeled_sessions", "transition_kernels"):
        assert _partitions(built.records, asset) == ["agent|hotel", "human|hotel"]
    assert WAREHOUSE_TABLES <= {r.asset for r in built.records if r.partition is None}


def test_collect_lineage_is_deduplicated_and_topologically_ordered(built: Built):
    nodes = [(r.asset, r.partition) for r in built.records]
    assert len(nodes) == len(set(nodes))
    order = [r.asset for r in built.records]
    assert order[-1] == "separability_report"
    assert order.index("sessions") < order.index("labeled_sessions")
    assert order.index("labeled_sessions") < order.index("transition_kernels")
    assert max(i for i, a in enumerate(order) if a == "raw_events") < order.index("stg_events")


def test_collect_lineage_records_versions_runs_and_checks(built: Built):
    runs = {run.run_id for run in built.instance.get_runs()}
    for record in built.records:
        assert record.data_version, record.label
        assert record.code_version, record.label
        assert record.run_id in runs, record.label
        assert record.materialized_at.endswith("+00:00"), record.label
    by_label = {r.label: r for r in built.records}
    assert by_label["transition_kernels [agent|hotel]"].checks == {
        "counts_match_transitions": True,
        "no_negative_entries": True,
        "rows_sum_to_one": True,
    }
    assert all(r.checks == {"no_row_lost": True} for r in built.records if r.asset == "raw_events")
    assert by_label["sessions"].checks and all(by_label["sessions"].checks.values())  # dbt tests
    assert by_label["sessions"].artifacts == ()  # lives in DuckDB: nothing to re-hash
    assert failed_blocking_checks(built.records) == []


def test_collect_lineage_file_records_verify_and_survive_a_json_round_trip(built: Built):
    file_records = [r for r in built.records if r.artifacts]
    assert {r.asset for r in file_records} == {
        "raw_events",
        "store_warehouse",
        "labeled_sessions",
        "transition_kernels",
        "divergence_scores",
        "quote_detector",
        "separability_report",
    }
    result = verify_records(built.records)
    assert result.ok, result.first_mismatch
    assert result.n_records == len(file_records)
    report = CertificationReport("hotel", "none", False, ("lineage only",), tuple(built.records))
    assert verify_records(CertificationReport.from_json(report.to_json()).records).ok


def test_verify_records_names_a_tampered_kernel_and_passes_once_restored(
    copied: tuple[Built, Path],
):
    built, original_root = copied
    # Rebased on the copy, as `phantom audit` does: the original's files stay untouched.
    records = [record.relative_to(original_root) for record in built.records]
    root = built.settings.data_dir
    kernel = built.settings.lake.kernels_dir("hotel", "agent") / "kernel.parquet"
    original = kernel.read_bytes()
    middle = len(original) // 2
    try:
        kernel.write_bytes(
            original[:middle] + bytes([original[middle] ^ 0xFF]) + original[middle + 1 :]
        )
        result = verify_records(records, root)
        assert not result.ok
        assert [(m.asset, m.partition) for m in result.mismatches] == [
            ("transition_kernels", "agent|hotel")
        ]
        assert root / result.mismatches[0].file == kernel
        assert result.first_mismatch.startswith(
            "transition_kernels [agent|hotel]: kernel.parquet changed (recorded "
        )
    finally:
        kernel.write_bytes(original)
    assert verify_records(records, root).ok


def test_collect_lineage_rejects_an_unknown_asset(built: Built):
    with pytest.raises(ValueError, match="not_an_asset"):
        collect_lineage(
            built.instance,
            demo_definitions().resolve_asset_graph(),
            dg.AssetKey("not_an_asset"),
            None,
        )


@pytest.mark.parametrize(
    ("asset", "partition", "message"),
    [
        ("separability_report", "shop", "has no partition 'shop'"),
        ("separability_report", None, "is partitioned"),
        ("sessions", "hotel", "is not partitioned"),
    ],
)
def test_collect_lineage_rejects_a_partition_that_does_not_fit(
    built: Built, asset: str, partition: str | None, message: str
):
    with pytest.raises(ValueError, match=message):
        collect_lineage(
            built.instance, demo_definitions().resolve_asset_graph(), dg.AssetKey(asset), partition
        )
