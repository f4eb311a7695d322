"""The certified path, end to end: `phantom run` on the planted world where a defence pays
(`PLANTED_CONFIG`: distinguishable agents that search before their unengaged buy quote, a thin
margin, tight valuations). Both stores certify the tuned-defended candidate, every number the
gate decided on is the candidate's and tuned-static's own held-out rows, and the audit re-derives
the verdict from the certificate's lineage. The twin world, the same but with agents that behave
exactly like humans, certifies nothing, and neither does the planted world itself once its agents
may adapt to the detector all the way (slow tier: each is a second build)."""

from __future__ import annotations

import json
import re

import pytest

from orchestration.certification import certificate_problems, load_report
from phantom_assets.audit import verify_records
from phantom_assets.constants import STORES
from tests.built_pipeline import BuiltPipeline, shared_build
from tests.pipeline_helpers import (
    PLANTED_MIMIC_CONFIG,
    PLANTED_TWIN_CONFIG,
    recomputed_comparison_means,
)

pytestmark = pytest.mark.e2e


def _report(built: BuiltPipeline, store: str) -> dict:
    path = built.data_dir / f"lake/certification_report/store={store}/report.json"
    return json.loads(path.read_text())


def _reports_of_a_variant(
    tmp_path_factory: pytest.TempPathFactory, name: str, config: str
) -> dict[str, dict]:
    """Each store's certificate after `phantom run` with `config` (a variant of the planted
    world, built once per session under `name`)."""
    built = shared_build(tmp_path_factory.getbasetemp(), name, config)
    assert built.returncode == 0, built.stderr[-4000:]
    return {store: _report(built, store) for store in STORES}


@pytest.mark.parametrize("store", STORES)
def test_the_planted_world_certifies_the_defended_candidate(
    planted_pipeline: BuiltPipeline, store: str
):
    report = _report(planted_pipeline, store)
    assert report["certified"] is True, report["reasons"]
    assert report["reasons"][0].startswith("certified: all blocking checks passed")
    assert report["candidate"].startswith("defended-") and report["baseline"].startswith("tuned-")
    gate = report["gate"]
    profit, value, harm = gate["comparisons"]
    assert profit["role"] == "profit vs the best undefended response"
    # Each of the three is shown at the gate's level; their Holm-adjusted p is the report's.
    assert max(c["p_value"] for c in (profit, value, harm)) <= report["p_value"] <= gate["level"]
    assert profit["mean"] > 0 and value["mean"] > 0 and harm["mean"] < harm["threshold"]
    assert [c["n"] for c in gate["comparisons"]] == [24, 24, 24]


def test_the_summary_prints_both_certificates(planted_pipeline: BuiltPipeline):
    verdicts = re.findall(r"certificate\s+((?:NOT )?CERTIFIED):", planted_pipeline.stdout)
    assert verdicts == ["CERTIFIED", "CERTIFIED"], planted_pipeline.stdout[-3000:]


@pytest.mark.parametrize("store", STORES)
def test_the_certified_numbers_are_the_candidates_and_tuned_statics_own_rows(
    planted_pipeline: BuiltPipeline, store: str
):
    report = _report(planted_pipeline, store)
    profit, value, _ = report["gate"]["comparisons"]
    expected = recomputed_comparison_means(planted_pipeline.data_dir, report)
    assert expected == [
        pytest.approx(profit["mean"], rel=1e-9, abs=1e-6),
        pytest.approx(value["mean"], rel=1e-9, abs=1e-6),
    ]


@pytest.mark.parametrize("store", STORES)
def test_the_audit_re_derives_the_certified_verdict_from_its_lineage(
    planted_pipeline: BuiltPipeline, store: str
):
    settings = planted_pipeline.settings
    report = load_report(settings, store)
    assert report.certified
    assert verify_records(report.records, root=settings.data_dir).mismatches == []
    assert certificate_problems(settings, report) == []


@pytest.mark.slow
def test_the_twin_with_indistinguishable_agents_certifies_nothing(
    tmp_path_factory: pytest.TempPathFactory,
):
    reports = _reports_of_a_variant(tmp_path_factory, "planted_twin", PLANTED_TWIN_CONFIG)
    for report in reports.values():
        assert report["certified"] is False, report["reasons"]
        assert any(reason.startswith("not certified") for reason in report["reasons"])


@pytest.mark.slow
def test_agents_that_may_mimic_humans_fully_leave_the_planted_defence_nothing_to_certify(
    tmp_path_factory: pytest.TempPathFactory,
):
    # The planted world certifies with the declared band 0.25 (agents adapting a quarter of the
    # way are still flagged); with band 1 the gate's worst case is at θ = 1, where every agent
    # session scores like a human's: measured 2026-12-06, detector value −152 [−2,675, 2,371]
    # (hotel) and 440 [−1,008, 1,888] (airline).
    reports = _reports_of_a_variant(tmp_path_factory, "planted_mimic", PLANTED_MIMIC_CONFIG)
    for report in reports.values():
        gate = report["gate"]
        assert report["certified"] is False, report["reasons"]
        assert gate["evasion_thetas"] == [0.0, 0.25, 0.5, 1.0]
        _, value, _ = gate["comparisons"]
        assert value["p_value"] > gate["level"], value
        assert {cell["theta"] for cell in value["compared_at"]} == {1.0}, value
