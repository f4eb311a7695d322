"""A readable certificate (markdown) from a `CertificationReport` (docs/method.md#certification)."""

from __future__ import annotations

from typing import Any

from phantom_assets.audit.numbers import readable
from phantom_assets.audit.records import ArtifactRecord, CertificationReport

SHORT_VERSION = 12
HOLM_COLUMNS = (
    "policy",
    "profit_advantage",
    "detector_value",
    "score",
    "human_harm",
    "p_profit",
    "p_detector",
    "p_harm",
    "p_value",
    "p_holm",
)
"""The candidate table's columns (`GateDecision.candidates`), failed checks after them."""


def _cell(value: object) -> str:
    """Markdown-table-safe text of a value (`—` for None)."""
    if value is None:
        return "—"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _short(version: str | None) -> str:
    return "—" if version is None else f"`{version[:SHORT_VERSION]}`"


def _checks(record: ArtifactRecord) -> str:
    if not record.checks:
        return "—"
    failed = sorted(name for name, passed in record.checks.items() if not passed)
    passed = len(record.checks) - len(failed)
    summary = f"{passed}/{len(record.checks)} passed"
    return summary if not failed else f"{summary}; FAILED: {', '.join(failed)}"


def _number(value: object) -> str:
    return readable(value, 6) if isinstance(value, float) else _cell(value)


def _row(*cells: object) -> str:
    return "| " + " | ".join(_number(cell) for cell in cells) + " |"


def _compared_at(comparison: dict[str, Any]) -> str | None:
    """Where both arms met: `α0 → band α (θ)` per cell (never two different α or θ)."""
    cells = comparison.get("compared_at") or []
    return ", ".join(f"{c['alpha0']} → {c['alpha']} (θ {c['theta']})" for c in cells) or None


def _comparison_lines(gate: dict[str, Any]) -> list[str]:
    rows = list(gate.get("comparisons") or [])
    versus = (gate.get("reported") or {}).get("profit_vs_static")
    if versus:
        rows.append(
            {
                **versus,
                "role": f"profit vs the static engine {versus['reference']} "
                "(reported, not decided)",
            }
        )
    if not rows:
        return []
    return [
        "",
        "| comparison (held-out) | seeds | mean | CI | H0 | one-sided p | α0 → α (θ) |",
        "|---|---:|---:|---|---|---:|---|",
        *[
            _row(
                c.get("role"),
                c.get("n"),
                c.get("mean"),
                f"[{_number(c.get('ci_low'))}, {_number(c.get('ci_high'))}]",
                f"mean {'<=' if c.get('alternative') == 'greater' else '>='} "
                f"{_number(c.get('threshold'))}",
                c.get("p_value"),
                _compared_at(c),
            )
            for c in rows
        ],
    ]


def _reported_lines(gate: dict[str, Any]) -> list[str]:
    reported = {k: v for k, v in (gate.get("reported") or {}).items() if k != "profit_vs_static"}
    if not reported:
        return []
    return [
        "",
        "Reported, not decided on (the candidate, fitted detector, held-out seeds):",
        "",
        "| quantity | value |",
        "|---|---:|",
        *[_row(k, v) for k, v in reported.items()],
    ]


def _holm_lines(gate: dict[str, Any]) -> list[str]:
    candidates = gate.get("candidates") or []
    if not candidates:
        return []
    rows = [
        _row(*(c.get(k) for k in HOLM_COLUMNS), ", ".join(c.get("failed_checks") or []) or None)
        for c in candidates
    ]
    return [
        "",
        "Candidates (selection scores on the selection seeds, p-values held-out):",
        "",
        _row(*HOLM_COLUMNS, "failed checks"),
        "|---" * (len(HOLM_COLUMNS) + 1) + "|",
        *rows,
    ]


def _gate_lines(gate: dict[str, Any]) -> list[str]:
    if not gate:
        return ["_no gate numbers recorded_"]
    keys = (
        "candidate",
        "baseline",
        "static",
        "metric",
        "n_pairs",
        "unit",
        "confidence",
        "level",
        "p_value",
        "method",
        "evasion_thetas",
        "selection_seeds",
        "test_seeds",
    )
    return [
        "| quantity | value |",
        "|---|---|",
        *[_row(k, gate[k]) for k in keys if k in gate],
        *_comparison_lines(gate),
        *_reported_lines(gate),
        *_holm_lines(gate),
    ]


def _assumption_lines(gate: dict[str, Any]) -> list[str]:
    assumptions = gate.get("assumptions")
    if not assumptions:
        return []
    holds = assumptions.get("decision_holds_on_whole_grid")
    lines = [
        "",
        "## Assumptions",
        "",
        f"- declared (not identified by the logs): {', '.join(assumptions['declared'])}",
        f"- the intervals cover {assumptions['interval_covers']}",
    ]
    if holds is None:
        return [*lines, f"- sensitivity: {assumptions.get('sensitivity')}"]
    return [
        *lines,
        f"- this decision {'holds' if holds else 'does NOT hold'} on the whole sensitivity grid: "
        f"the fixed-action gate certifies at {assumptions['fixed_action_gate_certified_at']} of "
        f"{assumptions['grid_points']} points",
        *[
            f"- {verdict}: {c}"
            for verdict, key in (
                ("robust", "robust"),
                ("never", "never"),
                ("depends on the assumptions", "depends"),
            )
            for c in assumptions.get(key, [])
        ],
    ]


def _ledger_lines(gate: dict[str, Any]) -> list[str]:
    """The agent ledger at the nominal K: what engagement pricing is worth, what agents take and
    what detection wins back -- the numbers the decision is read against."""
    ledger = gate.get("ledger") or {}
    rows = ledger.get("rows") or []
    if not rows:
        return []
    lines = [
        "",
        f"## The agent ledger (K = {ledger['k']}; held-out seeds, store-sample 95% "
        "intervals; % of the best undefended profit at α = 0)",
        "",
        *[f"- {sentence}" for sentence in ledger.get("reading") or []],
        "",
        "| α | quantity | value | CI | % of α = 0 profit | action |",
        "|---:|---|---:|---|---:|---|",
    ]
    for r in rows:
        share = r.get("share_of_profit")
        lines.append(
            _row(
                r["alpha"],
                r["quantity"],
                r["value"],
                f"[{_number(r['ci_low'])}, {_number(r['ci_high'])}]",
                None if share is None else f"{100 * share:.1f}%",
                r["action"],
            )
        )
    return lines


def _lineage_lines(records: tuple[ArtifactRecord, ...]) -> list[str]:
    lines = [
        "| asset | partition | data version | code version | run | time | checks |",
        "|---|---|---|---|---|---|---|",
    ]
    for record in records:
        run = "—" if record.run_id is None else f"`{record.run_id[:8]}`"
        lines.append(
            f"| {_cell(record.asset)} | {_cell(record.partition)} | "
            f"{_short(record.data_version)} | {_short(record.code_version)} | {run} | "
            f"{_cell(record.materialized_at)} | {_cell(_checks(record))} |"
        )
    return lines


def _mapping_lines(title: str, mapping: dict[str, object]) -> list[str]:
    if not mapping:
        return []
    rows = [f"- `{key}`: {_cell(value)}" for key, value in sorted(mapping.items())]
    return ["", f"## {title}", "", *rows]


def render_markdown(report: CertificationReport) -> str:
    """Render the certificate: verdict, reasons, gate numbers, lineage table, seeds, environment.

    Args:
        report: The certification report.

    Returns:
        Markdown text ending in a newline.
    """
    verdict = "CERTIFIED" if report.certified else "NOT CERTIFIED"
    environment = dict(report.environment)
    packages = environment.pop("packages", {}) or {}
    lines = [
        f"# Certification: `{report.policy}` for store `{report.store}`",
        "",
        f"**Verdict: {verdict}**",
        "",
        *_ledger_lines(report.gate),
        "",
        "## Reasons",
        "",
        *[f"- {reason}" for reason in report.reasons],
        "",
        "## Promotion gate (held-out episode seeds, paired)",
        "",
        *_gate_lines(report.gate),
        *_assumption_lines(report.gate),
        "",
        f"## Lineage ({len(report.records)} asset partitions)",
        "",
        *_lineage_lines(report.records),
        *_mapping_lines("Seeds", report.seeds),
        *_mapping_lines("Configuration", report.config),
        *_mapping_lines("Environment", environment),
        *_mapping_lines("Packages", packages),
    ]
    return "\n".join(lines) + "\n"
