"""Artifact records and certification reports: lossless JSON, blocking-check summary."""

from __future__ import annotations

import json

import pytest

from phantom_assets.audit import (
    ArtifactRecord,
    CertificationReport,
    failed_blocking_checks,
    stale_records,
)


def test_certification_report_json_round_trip_is_lossless(report):
    text = report.to_json()
    assert CertificationReport.from_json(text) == report
    assert CertificationReport.from_json(text).to_json() == text


def test_certification_report_json_is_canonical(report):
    payload = json.loads(report.to_json())
    assert payload["format_version"] == 2
    assert list(payload) == sorted(payload)
    assert payload["records"][1] == {
        "asset": "sessions",
        "partition": None,
        "data_version": "dbt1",
        "code_version": "sql1",
        "run_id": "run-dbt",
        "materialized_at": "2026-01-02T00:00:00+00:00",
        "artifacts": [],
        "checks": {},
        "metadata": {},
        "file_digests": {},
        "stale": [],
    }


def test_stale_records_name_each_stale_record_with_its_causes():
    fresh = ArtifactRecord("market_simulators", "hotel", "v2", None, None, None)
    stale = ArtifactRecord(
        "trained_policies",
        "ppo-a050|hotel",
        "v1",
        None,
        None,
        None,
        stale=(
            "has a new dependency data version: market_simulators [hotel]",
            "has a new code version",
        ),
    )
    assert stale_records([fresh, stale]) == [
        "trained_policies [ppo-a050|hotel] is stale (has a new dependency data version: "
        "market_simulators [hotel]; has a new code version)"
    ]
    assert ArtifactRecord.from_dict(stale.to_dict()) == stale  # survives the report's JSON


def test_certification_report_to_json_rejects_values_json_cannot_hold(report):
    bad = CertificationReport(**{**report.__dict__, "config": {"kappa": float("nan")}})
    with pytest.raises(ValueError, match="not JSON-serializable"):
        bad.to_json()


@pytest.mark.parametrize(
    ("text", "message"),
    [("not json", "not valid JSON"), ('{"format_version": 99}', "format_version 99")],
)
def test_certification_report_from_json_rejects_unknown_input(text, message):
    with pytest.raises(ValueError, match=message):
        CertificationReport.from_json(text)


def test_artifact_record_from_dict_names_missing_keys():
    with pytest.raises(ValueError, match="data_version"):
        ArtifactRecord.from_dict({"asset": "raw_events", "partition": None})


def test_artifact_record_label_shows_the_partition_only_when_there_is_one():
    assert ArtifactRecord("sessions", None, "v", None, None, None).label == "sessions"
    assert ArtifactRecord("scores", "hotel", "v", None, None, None).label == "scores [hotel]"


def test_failed_blocking_checks_lists_only_failed_blocking_checks_and_holes():
    records = [
        ArtifactRecord(
            "transition_kernels",
            "agent|hotel",
            "v",
            None,
            "r",
            None,
            checks={"rows_sum_to_one": False, "soft_check": False, "no_negative_entries": True},
            metadata={"blocking_checks": ["no_negative_entries", "rows_sum_to_one"]},
        ),
        ArtifactRecord("divergence_scores", "hotel", None, None, None, None),
    ]
    assert failed_blocking_checks(records) == [
        "transition_kernels [agent|hotel]: rows_sum_to_one",
        "divergence_scores [hotel]: never materialized",
    ]


def test_artifact_record_relative_to_rebases_paths_below_the_root_only():
    record = ArtifactRecord(
        "kernels",
        "hotel",
        "v",
        None,
        None,
        None,
        artifacts=("/data/lake/k.parquet", "/elsewhere/x.json", "lake/already.json"),
        file_digests={"/data/lake/k.parquet": "d1", "/elsewhere/x.json": "d2"},
    )
    rebased = record.relative_to("/data")
    assert rebased.artifacts == ("lake/k.parquet", "/elsewhere/x.json", "lake/already.json")
    assert rebased.file_digests == {"lake/k.parquet": "d1", "/elsewhere/x.json": "d2"}


def test_certification_report_relative_to_its_recorded_root_is_portable(report):
    moved = CertificationReport(**{**report.__dict__, "config": {"data_dir": "/old/data"}})
    assert moved.data_root is not None and str(moved.data_root) == "/old/data"
    assert moved.relative_to(None) is moved
