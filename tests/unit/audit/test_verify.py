"""Offline tamper evidence: re-hashing artifacts against recorded data versions."""

from __future__ import annotations

import re
from pathlib import Path

from phantom_assets.audit import ArtifactRecord, verify_records
from phantom_assets.storage import file_digest
from tests.unit.audit.conftest import record_for


def _flip_first_byte(path: Path) -> bytes:
    original = path.read_bytes()
    path.write_bytes(bytes([original[0] ^ 0x01]) + original[1:])
    return original


def _artifact(records: list[ArtifactRecord], name: str) -> Path:
    return next(Path(a) for r in records for a in r.artifacts if Path(a).name == name)


def test_verify_records_accepts_untouched_artifacts(lineage):
    result = verify_records(lineage)
    assert result.ok
    assert result.mismatches == [] and result.first_mismatch is None
    assert (result.n_records, result.n_files) == (3, 4)  # the warehouse table has no files


def test_verify_records_names_asset_partition_and_file_after_one_byte_flip(lineage):
    kernel = _artifact(lineage, "kernel.parquet")
    recorded = file_digest(kernel)
    original = _flip_first_byte(kernel)
    result = verify_records(lineage)
    assert not result.ok
    assert len(result.mismatches) == 1
    mismatch = result.mismatches[0]
    assert (mismatch.asset, mismatch.partition, mismatch.file) == (
        "transition_kernels",
        "agent|airline",
        str(kernel),
    )
    assert result.first_mismatch == (
        f"transition_kernels [agent|airline]: kernel.parquet changed "
        f"(recorded {recorded[:8]}..., found {file_digest(kernel)[:8]}...)"
    )
    kernel.write_bytes(original)
    assert verify_records(lineage).ok


def test_verify_records_reports_a_missing_file(lineage):
    report = _artifact(lineage, "report.json")
    report.unlink()
    result = verify_records(lineage)
    assert [(m.asset, m.partition, m.reason) for m in result.mismatches] == [
        ("separability_report", "airline", "missing")
    ]
    assert result.first_mismatch.startswith("separability_report [airline]: report.json is missing")


def test_verify_records_lists_mismatches_in_lineage_order(lineage):
    for name in ("report.json", "events.parquet", "fold_kernels.parquet"):
        _flip_first_byte(_artifact(lineage, name))
    result = verify_records(lineage)
    assert [m.asset for m in result.mismatches] == [
        "raw_events",
        "transition_kernels",
        "separability_report",
    ]
    assert Path(result.mismatches[1].file).name == "fold_kernels.parquet"


def test_verify_records_without_file_digests_names_every_file_of_the_record(tmp_path):
    record = record_for(
        "divergence_scores",
        "hotel",
        {"scores.parquet": b"s", "prefix_scores.parquet": b"p"},
        tmp_path,
        with_file_digests=False,
    )
    (tmp_path / "scores.parquet").write_bytes(b"S")
    result = verify_records([record])
    assert re.fullmatch(
        r"divergence_scores \[hotel\]: prefix_scores\.parquet, scores\.parquet changed "
        r"\(recorded [0-9a-f]{8}\.\.\., found [0-9a-f]{8}\.\.\.\)",
        result.first_mismatch,
    )
    assert result.mismatches[0].recorded == record.data_version


def test_verify_records_trusts_the_data_version_over_stale_file_digests(tmp_path):
    # File digests taken after a tamper-and-restore must not flag the restored (correct) bytes.
    record = record_for("raw_events", "b1", {"events.parquet": b"raw"}, tmp_path)
    stale = ArtifactRecord(**{**record.__dict__, "file_digests": {record.artifacts[0]: "0" * 64}})
    assert verify_records([stale]).ok


def test_verify_records_flags_a_data_version_that_matches_no_file(tmp_path):
    record = record_for("raw_events", "b1", {"events.parquet": b"raw"}, tmp_path)
    forged = ArtifactRecord(**{**record.__dict__, "data_version": "f" * 64})
    result = verify_records([forged])
    assert [m.reason for m in result.mismatches] == ["changed"]
    assert result.mismatches[0].recorded == "f" * 64


def test_verify_records_resolves_relative_paths_against_root(tmp_path):
    record = record_for("raw_events", None, {"events.parquet": b"raw"}, tmp_path / "lake")
    relative = ArtifactRecord(
        **{
            **record.__dict__,
            "artifacts": ("lake/events.parquet",),
            "file_digests": {"lake/events.parquet": record.file_digests[record.artifacts[0]]},
        }
    )
    assert verify_records([relative], root=tmp_path).ok
    missing = verify_records([relative], root=tmp_path / "elsewhere")
    assert missing.first_mismatch.startswith("raw_events: events.parquet is missing")


def test_verify_records_skips_records_without_files():
    record = ArtifactRecord("sessions", None, "v1", None, "run", None)
    result = verify_records([record])
    assert result.ok and result.n_records == 0


def test_report_differences_name_each_decided_field_that_disagrees():
    from phantom_assets.audit import report_differences

    derived = {
        "policy": "p",
        "certified": False,
        "reasons": ["a", "b"],
        "gate": {"ci_low": -1.0, "comparisons": [{"mean": 2.0}]},
        "seeds": {"gate": 29},
        "environment": {"python": "3.11"},
    }
    forged = {
        **derived,
        "certified": True,
        "reasons": ["a", "c"],
        "gate": {"ci_low": -1.0, "comparisons": [{"mean": 2.5}]},
        "environment": {"python": "3.12"},
    }
    assert report_differences(derived, derived) == []
    assert report_differences(forged, derived) == [
        "certified",
        "reasons[1]",
        "gate.comparisons[0].mean",
    ]  # environment is not decided: not compared
    assert report_differences({**derived, "reasons": ["a"]}, derived) == ["reasons"]
