"""A readable certificate (markdown) from a `CertificationReport` (DESIGN §8)."""

from __future__ import annotations

from phantom_assets.audit.records import ArtifactRecord, CertificationReport

SHORT_VERSION = 12


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
    return f"{value:.6g}" if isinstance(value, float) else _cell(value)


def _gate_lines(gate: dict[str, object]) -> list[str]:
    if not gate:
        return ["_no gate numbers recorded_"]
    keys = ("candidate", "baseline", "static", "metric", "n_pairs", "unit", "p_value", "method")
    lines = ["| quantity | value |", "|---|---|"]
    lines += [f"| {key} | {_number(gate[key])} |" for key in keys if key in gate]
    for key in ("selection_seeds", "test_seeds"):
        if key in gate:
            lines.append(f"| {key} | {_cell(gate[key])} |")
    comparisons = gate.get("comparisons") or []
    if isinstance(comparisons, list) and comparisons:
        lines += ["", "| vs | role | held-out pairs | mean diff | CI | one-sided p |",
                  "|---|---|---:|---:|---|---:|"]  # fmt: skip
        lines += [f"| {_cell(c.get('reference'))} | {_cell(c.get('role'))} | {_cell(c.get('n'))} "
                  f"| {_number(c.get('mean_diff'))} | [{_number(c.get('ci_low'))}, "
                  f"{_number(c.get('ci_high'))}] | {_number(c.get('p_value'))} |"
                  for c in comparisons]  # fmt: skip
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
        "## Reasons",
        "",
        *[f"- {reason}" for reason in report.reasons],
        "",
        "## Promotion gate (held-out episode seeds, paired)",
        "",
        *_gate_lines(report.gate),
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
