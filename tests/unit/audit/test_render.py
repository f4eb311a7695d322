"""The markdown certificate."""

from __future__ import annotations

from phantom_assets.audit import CertificationReport, render_markdown
from tests.unit.audit.conftest import defence, gate_table, run_gate


def test_render_markdown_states_the_verdict_and_reasons(report):
    text = render_markdown(report)
    assert "**Verdict: CERTIFIED**" in text
    assert "- certified: because" in text
    refused = CertificationReport(
        **{**report.__dict__, "certified": False, "reasons": ("not certified: x",)}
    )
    assert "**Verdict: NOT CERTIFIED**" in render_markdown(refused)


def test_render_markdown_has_one_lineage_row_per_record(report):
    lines = render_markdown(report).splitlines()
    header = lines.index(
        "| asset | partition | data version | code version | run | time | checks |"
    )
    rows = lines[header + 2 : header + 2 + len(report.records)]
    for record, row in zip(report.records, rows, strict=True):
        assert row.startswith(f"| {record.asset} | ")
        assert f"`{record.data_version[:12]}`" in row
        assert (record.materialized_at or "—") in row
    assert "agent\\|airline" in rows[2]  # partition pipes are escaped, not new columns
    assert "1/1 passed" in rows[2]


def test_render_markdown_shows_gate_numbers_seeds_and_environment(report):
    text = render_markdown(report)
    assert "| n_pairs | 24 |" in text and "| p_value | 0.0039 |" in text
    assert "| baseline | tuned-a050 |" in text and "| static | static-a050 |" in text
    assert f"| test_seeds | {list(range(100, 124))} |" in text
    assert "| evasion_thetas | [0.0, 0.25] |" in text
    assert "- `train`: 7" in text
    assert "- `numpy`: 2.4.0" in text
    assert "- `git_revision`: —" in text


def test_render_markdown_shows_the_three_comparisons_where_they_were_made_and_the_holm_table(
    report,
):
    lines = render_markdown(report).splitlines()
    assert (
        "| profit vs the best undefended response | 24 | 1.5 | [0.5, 2.5] | mean <= 0 | "
        "0.0039 | 0.5 → 0.3 (θ 0.0), 1.0 → 0.8 (θ 0.25) |"
    ) in lines
    assert (
        "| detector value beyond engagement | 24 | 0.25 | [0.125, 0.5] | mean <= 0 | 0.0039 "
        "| 0.5 → 0.7 (θ 0.25), 1.0 → 1.0 (θ 0.25) |"
    ) in lines
    assert (
        "| total human harm | 24 | 0.005 | [0.003, 0.007] | mean >= 0.02 | 0.001 | "
        "0.5 → 0.5 (θ 0.0), 1.0 → 1.0 (θ 0.0) |"
    ) in lines
    assert (  # reported beside the decision; an infinite bound is stored as None
        "| profit vs the static engine static-a050 (reported, not decided) | 24 | 2 | [—, 3] | "
        "mean <= 0 | 0.0078 | 0.5 → 0.3 (θ 0.0) |" in lines
    )
    assert "| false_positive_rate_at_alpha_0 | 0.021 |" in lines
    header = lines.index(
        "| policy | profit_advantage | detector_value | score | human_harm | p_profit | "
        "p_detector | p_harm | p_value | p_holm | failed checks |"
    )
    assert lines[header + 2] == (
        "| ppo-robust-a050 | 1.25 | 0.5 | 0.5 | 0.004 | 0.0039 | 0.0039 "
        "| 0.001 | 0.0039 | 0.0039 | — |"
    )


def test_render_markdown_of_a_real_gate_decision(report):
    decision = run_gate(defence(gate_table()))
    gated = CertificationReport(**{**report.__dict__, "gate": decision.to_dict()})
    text = render_markdown(gated)
    assert f"| candidate | {decision.candidate} |" in text
    assert "| detector value beyond engagement | 24 | " in text
    assert "| total human harm | 24 | " in text


def test_render_markdown_names_failed_checks(report):
    record = report.records[2]
    failing = type(record)(**{**record.__dict__, "checks": {"rows_sum_to_one": False}})
    text = render_markdown(CertificationReport(**{**report.__dict__, "records": (failing,)}))
    assert "0/1 passed; FAILED: rows_sum_to_one" in text
