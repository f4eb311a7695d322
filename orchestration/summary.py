"""The end-of-run summary: batches used (and warnings about the others), sessions, quarantine,
then one block per store with the headline results and their CIs, read back from the files the
assets wrote.

`collect_summary` returns one JSON-ready dict (`phantom run --json`, `phantom summary --json`);
`render_summary` prints the same for people. Every store section is read defensively: a stage
that did not run leaves its section `None` ("not built"), a field added later is ignored, a field
removed later shows as missing rather than failing the summary. After `phantom run` the results
it did not rebuild (its task failed or was skipped, or an upstream changed since: `stale`) are
marked "stale: from the run of <time>, not rebuilt" rather than shown as current.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from orchestration.batches import BatchInfo, batch_infos
from phantom_assets.audit.gate import COMPARISON_ROLES
from phantom_assets.audit.numbers import readable
from phantom_assets.audit.studentized import NO_SPREAD
from phantom_assets.config import Settings
from phantom_assets.constants import STORES
from phantom_assets.lake import (
    DEMAND_MODEL_FILE,
    EROSION_FILE,
    EROSION_METRICS_FILE,
    EROSION_PLOT_FILE,
    LEDGER_FILE,
    PRICE_MODEL_FILE,
    REPORT_FILE,
    REPORT_MD_FILE,
    SUMMARY_FILE,
)
from phantom_assets.market.ledger import ledger_sentences

# Unreadable or half-written optional files make a section unavailable, never the summary fail.
_READ_ERRORS = (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError)
_CLASS_OF_METRIC = {"coi_h": "human", "coi_a": "agent", "coi": "all"}
DECLARED_PRICES = (
    "declared_anchor_range",
    "declared_products",
    "declared_markup",
    "declared_quote_noise",
)
"""The `[market]` settings a store's prices come from when its price logs cannot identify them."""
Stale = Mapping[tuple[str, str | None], str]
"""(asset, partition) -> where a result not rebuilt by this run is from ("the run of <time>")."""


def session_counts(settings: Settings) -> pl.DataFrame:
    """Sessions per store and label (empty frame if the warehouse is not built yet)."""
    if not settings.warehouse_path.exists():
        return pl.DataFrame()
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as conn:
        tables = {
            row[0]
            for row in conn.execute("select table_name from information_schema.tables").fetchall()
        }
        if not {"sessions", "session_labels"} <= tables:
            return pl.DataFrame()
        return conn.execute(
            "select s.store, l.actor, count(*) as n_sessions, sum(s.n_events)::bigint as n_events "
            "from sessions s join session_labels l using (session_id) "
            "group by all order by all"
        ).pl()


def quarantine_counts(settings: Settings) -> pl.DataFrame:
    """Quarantined rows per reason over every batch."""
    files = settings.lake.all_quarantine()
    if not files:
        return pl.DataFrame(
            {"reason": [], "n_rows": []}, schema={"reason": pl.Utf8, "n_rows": pl.UInt32}
        )
    return (
        pl.scan_parquet(files)
        .group_by("reason")
        .agg(n_rows=pl.len())
        .sort("n_rows", descending=True)
        .collect()
    )


def _number(value: Any) -> float | None:
    """A finite float, or None (missing, null, NaN, not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def separability(settings: Settings, store: str) -> dict[str, Any] | None:
    """p-value and AUC with its CI from `separability_report`'s report.json."""
    report = _json(settings.lake.separability_dir(store) / REPORT_FILE)
    if report is None:
        return None
    keys = (
        "p_value",
        "p_method",
        "auc",
        "auc_ci_low",
        "auc_ci_high",
        "n_human",
        "n_agent",
        "kernel_divergence",
        "kernel_divergence_p",
    )
    return {k: report.get(k) for k in keys}


def _erosion_rows(folder: Path) -> pl.DataFrame | None:
    """COI rows as `class, alpha, k, coi, ci_low, ci_high, n, detector` (contract file first,
    the full metrics table as a fallback)."""
    if (folder / EROSION_FILE).is_file():
        return pl.read_parquet(folder / EROSION_FILE)
    if (folder / EROSION_METRICS_FILE).is_file():
        table = pl.read_parquet(folder / EROSION_METRICS_FILE)
        return table.filter(pl.col("metric").is_in(list(_CLASS_OF_METRIC))).select(
            pl.col("metric").replace_strict(_CLASS_OF_METRIC).alias("class"),
            "alpha",
            "k",
            pl.col("mean").alias("coi"),
            "ci_low",
            "ci_high",
            "n",
            "detector",
        )
    return None


def coi_erosion(settings: Settings, store: str) -> dict[str, Any] | None:
    """COI_H (humans only, smallest α) and COI_A (agents only, largest α) per K with 95% CIs at
    the undefended engine (smallest δ), and COI_A / COI_H at the nominal K."""
    rows = _erosion_rows(settings.lake.erosion_dir(store))
    if rows is None or rows.is_empty():
        return None
    if "detector" in rows.columns:
        rows = rows.filter(pl.col("detector") == rows["detector"].min())

    def by_k(cls: str, pick: str) -> dict[int, dict[str, Any]]:
        part = rows.filter(pl.col("class") == cls)
        if part.is_empty():
            return {}
        alpha = part["alpha"].min() if pick == "min" else part["alpha"].max()
        part = part.filter(pl.col("alpha") == alpha).sort("k")
        return {
            int(r["k"]): {
                "alpha": alpha,
                "mean": _number(r["coi"]),
                "ci_low": _number(r["ci_low"]),
                "ci_high": _number(r["ci_high"]),
                "n": r.get("n"),
            }
            for r in part.iter_rows(named=True)
        }

    human, agent = by_k("human", "min"), by_k("agent", "max")
    nominal = settings.agents.nominal_k
    h = human.get(nominal, {}).get("mean")
    a = agent.get(nominal, {}).get("mean")
    return {
        "nominal_k": nominal,
        "ratio_at_nominal_k": a / h if a is not None and h else None,
        "by_k": [
            {"k": k, "coi_h": human.get(k), "coi_a": agent.get(k)}
            for k in sorted(set(human) | set(agent))
        ],
    }


def observed_coi(settings: Settings, store: str) -> list[dict[str, Any]] | None:
    """Per-class observed premium with its CI from `observed_coi.parquet`, if that asset ran.

    The file's columns are matched loosely (`class`/`actor`; `premium`/`coi`/`mean`), so a later
    schema with more columns still shows.
    """
    path = settings.lake.observed_coi_file(store)
    if not path.is_file():
        return None
    table = pl.read_parquet(path)
    cls = next((c for c in ("class", "actor") if c in table.columns), None)
    value = next(
        (c for c in ("premium", "coi", "observed_coi", "mean") if c in table.columns), None
    )
    if cls is None or value is None:
        return [{"columns": table.columns}]
    return [
        {
            "class": r[cls],
            "mean": _number(r[value]),
            "ci_low": _number(r.get("ci_low")),
            "ci_high": _number(r.get("ci_high")),
            "n": r.get("n_quotes", r.get("n")),
        }
        for r in table.iter_rows(named=True)
    ]


def _setting_text(value: Any) -> str:
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_setting_text(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def prices(settings: Settings, store: str) -> dict[str, Any] | None:
    """Where the store's prices come from (`store_prices`' price_model.json): its logs, or the
    declared `[market]` settings (with why the logs could not identify them)."""
    payload = _json(settings.lake.store_prices_dir(store) / PRICE_MODEL_FILE)
    if payload is None:
        return None
    out = {"source": payload.get("source"), "reason": payload.get("reason") or None}
    if out["source"] == "declared":
        values = ", ".join(
            f"{name} = {_setting_text(getattr(settings.market, name))}" for name in DECLARED_PRICES
        )
        out["declared"] = f"[market] {values}"
    return out


HARM_ROLE = COMPARISON_ROLES[2]


def demand(settings: Settings, store: str) -> dict[str, Any] | None:
    """The store's demand: its source (and why declared) and the humans' parameters with CIs."""
    payload = _json(settings.lake.demand_dir(store) / DEMAND_MODEL_FILE)
    if payload is None:
        return None
    human = (payload.get("classes") or {}).get("human") or {}
    return {
        "source": payload.get("source"),
        "reason": payload.get("reason"),
        "human": {
            name: {
                "mean": human.get(name),
                "ci_low": human.get(f"{name}_ci_low"),
                "ci_high": human.get(f"{name}_ci_high"),
            }
            for name in ("mu", "beta", "sigma", "in_market")
        },
    }


def agent_ledger(settings: Settings, store: str) -> dict[str, Any] | None:
    """The agent ledger at the nominal K: its rows and its reading in sentences."""
    path = settings.lake.oracle_dir(store) / LEDGER_FILE
    if not path.is_file():
        return None
    k = settings.agents.nominal_k
    rows = (
        pl.read_parquet(path)
        .filter(pl.col("k") == k)
        .with_columns(pl.selectors.float().fill_nan(None))
        .to_dicts()
    )
    reading = ledger_sentences(rows, k, settings.agents.evasion_band)
    return {"k": k, "rows": rows, "reading": reading}


def certification(settings: Settings, store: str) -> dict[str, Any] | None:
    """The certificate's verdict, candidate, baseline, reasons, p and CI, the total human harm
    test, the detector's false-positive rate at α = 0 and whether the decision holds on the
    market's sensitivity grid."""
    report = _json(settings.lake.certification_report(store))
    if report is None:
        return None
    gate = report.get("gate") or {}
    harm = next((c for c in gate.get("comparisons") or [] if c.get("role") == HARM_ROLE), None)
    assumptions = gate.get("assumptions") or {}
    return {
        "certified": report.get("certified"),
        "candidate": report.get("candidate", report.get("policy")),
        "baseline": report.get("baseline"),
        "reasons": list(report.get("reasons") or []),
        "p_value": report.get("p_value"),
        "ci_low": report.get("ci_low"),
        "ci_high": report.get("ci_high"),
        "n_pairs": report.get("n_pairs"),
        "method": report.get("method"),
        "human_harm": {
            "mean": harm.get("mean"),
            "upper": harm.get("ci_high"),
            "bound": harm.get("threshold"),
            "n": harm.get("n"),
            "within": harm.get("ci_high") is not None
            and harm["ci_high"] < harm.get("threshold", float("inf")),
            "no_spread": str(harm.get("method") or "").startswith(NO_SPREAD),
        }
        if harm
        else None,
        "false_positive_rate_at_alpha_0": (gate.get("reported") or {}).get(
            "false_positive_rate_at_alpha_0"
        ),
        "decision_holds_on_sensitivity_grid": assumptions.get("decision_holds_on_whole_grid"),
    }


def report_paths(settings: Settings, store: str) -> list[str]:
    """The readable reports of a store that exist: certificate, separability, erosion, benchmark."""
    lake = settings.lake
    candidates = [
        lake.certification_dir(store) / REPORT_MD_FILE,
        lake.separability_dir(store) / REPORT_FILE,
        lake.erosion_dir(store) / EROSION_PLOT_FILE,
        lake.benchmark_dir(store) / SUMMARY_FILE,
    ]
    return [str(p) for p in candidates if p.is_file()]


_SECTIONS = {
    "demand": demand,
    "agent_ledger": agent_ledger,
    "separability": separability,
    "coi_erosion": coi_erosion,
    "prices": prices,
    "observed_coi": observed_coi,
    "certification": certification,
}
SECTION_ASSETS = {
    "demand": "store_demand",
    "agent_ledger": "market_oracle",
    "separability": "separability_report",
    "coi_erosion": "coi_erosion",
    "prices": "store_prices",
    "observed_coi": "observed_coi",
    "certification": "certification_report",
}
"""The asset (partitioned by store) that writes each store section's files."""
SESSIONS_ASSET = "sessions"


def store_summary(settings: Settings, store: str, stale: Stale | None = None) -> dict[str, Any]:
    """One store's headline results; a section that cannot be read is None with its error, one
    in `stale` (by its asset) is listed under "stale" with where it is from."""
    summary: dict[str, Any] = {}
    for name, read in _SECTIONS.items():
        try:
            summary[name] = read(settings, store)
        except _READ_ERRORS as error:
            summary[name] = None
            summary.setdefault("unreadable", {})[name] = f"{type(error).__name__}: {error}"
        origin = (stale or {}).get((SECTION_ASSETS[name], store))
        if origin is not None and summary[name] is not None:
            summary.setdefault("stale", {})[name] = origin
    summary["reports"] = report_paths(settings, store)
    return summary


def batch_warnings(infos: list[BatchInfo]) -> list[str]:
    """One line per batch that adds nothing to the results: not loaded (its ingest failed, e.g.
    an unreadable file, or has not run) or loaded with every row quarantined."""
    warnings = []
    for info in infos:
        key, name = info.record.key, info.record.source.name
        if not info.ingested:
            warnings.append(
                f"{key} {name}: not loaded (its ingest failed or has not run), so not in the "
                f"results; fix the file or `phantom batches drop {key}`"
            )
        elif info.rows == 0:
            quarantined = info.quarantined or 0
            rows = "its one row" if quarantined == 1 else f"all {quarantined:,} rows"
            warnings.append(f"{key} {name}: 0 events, {rows} quarantined")
    return warnings


def collect_summary(settings: Settings, stale: Stale | None = None) -> dict[str, Any]:
    """Everything the summary shows, as one JSON-ready dict; the results in `stale` (by asset and
    partition: where they are from) are marked as not rebuilt by this run."""
    sessions = session_counts(settings)
    quarantine = quarantine_counts(settings)
    infos = batch_infos(settings)
    sessions_stale = (stale or {}).get((SESSIONS_ASSET, None))
    return {
        "data_dir": str(settings.data_dir),
        "profile": settings.profile,
        "batches": [info.to_json() for info in infos if info.ingested],
        "batch_warnings": batch_warnings(infos),
        "sessions": sessions.to_dicts(),
        **(
            {"sessions_stale": sessions_stale} if sessions_stale and not sessions.is_empty() else {}
        ),
        "quarantined": {r["reason"]: int(r["n_rows"]) for r in quarantine.iter_rows(named=True)},
        "stores": {store: store_summary(settings, store, stale) for store in STORES},
        "paths": {
            "lake": str(settings.lake_dir),
            "warehouse": str(settings.warehouse_path),
            "reports": str(settings.reports_dir),
        },
    }


# --- text ------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    number = _number(value)
    if number is None:
        return "n/a" if value is None or isinstance(value, float) else str(value)
    return f"{number:,.{digits}f}" if abs(number) < 1e6 else f"{number:,.0f}"


def _ci(cell: dict[str, Any] | None, digits: int = 2) -> str:
    if not cell:
        return "-"
    return (
        f"{_fmt(cell.get('mean'), digits)} [{_fmt(cell.get('ci_low'), digits)}, "
        f"{_fmt(cell.get('ci_high'), digits)}]"
    )


def _separability_lines(sep: dict[str, Any]) -> list[str]:
    return [
        f"  separability   p = {_fmt(sep.get('p_value'), 4)} ({sep.get('p_method') or 'n/a'})",
        f"                 AUC {_fmt(sep.get('auc'))} [{_fmt(sep.get('auc_ci_low'))}, "
        f"{_fmt(sep.get('auc_ci_high'))}] (95% CI), {sep.get('n_human')} human / "
        f"{sep.get('n_agent')} agent sessions",
    ]


def _erosion_lines(erosion: dict[str, Any]) -> list[str]:
    lines = [
        "  COI erosion    undefended engine, mean [95% CI] over episode seeds:",
        f"    {'K':>3}  {'COI_H (humans, α min)':<28}COI_A (agents, α max)",
    ]
    for row in erosion["by_k"]:
        lines.append(f"    {row['k']:>3}  {_ci(row['coi_h']):<28}{_ci(row['coi_a'])}")
    ratio = erosion.get("ratio_at_nominal_k")
    lines.append(f"    COI_A / COI_H at nominal K = {erosion['nominal_k']}: {_fmt(ratio)}")
    return lines


def _wrapped(text: str, width: int, first: str, rest: str) -> list[str]:
    """`text` wrapped whole at spaces only (never inside "-0.007" or "[-inf, inf]")."""
    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


def _certification_lines(cert: dict[str, Any], width: int = 96) -> list[str]:
    verdict = "CERTIFIED" if cert.get("certified") else "NOT CERTIFIED"
    lines = [
        f"  certificate    {verdict}: candidate {cert.get('candidate')} vs baseline "
        f"{cert.get('baseline')} (p = {_fmt(cert.get('p_value'), 4)}, "
        f"{cert.get('n_pairs')} held-out seeds)"
    ]
    for reason in cert.get("reasons", []):  # whole, wrapped: never cut off
        lines += _wrapped(reason, width, "    - ", "      ")
    harm = cert.get("human_harm")
    if harm:
        lines += _wrapped(_harm_text(harm), width, "  human harm     ", " " * 17)
    if cert.get("false_positive_rate_at_alpha_0") is not None:
        rate = _fmt(cert["false_positive_rate_at_alpha_0"], 4)
        lines.append(f"  detector FPR   {rate} of humans quoted up at α = 0")
    holds = cert.get("decision_holds_on_sensitivity_grid")
    if holds is not None:
        lines.append(
            f"  assumptions    the decision {'holds' if holds else 'does NOT hold'} on "
            f"the whole sensitivity grid"
        )
    return lines


def _harm_text(harm: dict[str, Any]) -> str:
    """The held-out human harm against the gate's bound, in words: identical values on every
    seed are within (or above) the bound on each seed but give no confidence bound; too few
    seeds give no finite one."""
    mean, n, bound = _number(harm.get("mean")), harm.get("n"), _number(harm.get("bound"))
    bound_text = readable(bound) if bound is not None else "n/a"
    if mean is None:
        return f"not measured on the held-out seeds (bound {bound_text})"
    if harm.get("no_spread"):
        side = "within" if bound is None or mean <= bound else "above"
        return (
            f"{readable(mean)} on each of the {n} held-out seeds: {side} the bound "
            f"{bound_text} on every seed (identical values give the test no spread: no upper "
            "confidence bound)"
        )
    upper = _number(harm.get("upper"))
    if upper is None:
        return (
            f"mean {readable(mean)} over {n} held-out seeds, no finite upper bound: not shown "
            f"within the bound {bound_text}"
        )
    within = "within" if harm.get("within") else "NOT within"
    return (
        f"mean {readable(mean)}, one-sided upper bound {readable(upper)}: {within} the bound "
        f"{bound_text}"
    )


def _ledger_lines(summary: dict[str, Any], width: int = 96) -> list[str]:
    """The demand's source and the agent ledger's reading, first in a store's block."""
    lines = []
    demand_ = summary.get("demand")
    if demand_:
        human = demand_["human"]
        params = ", ".join(
            f"{name} {_ci(human[name], 3)}" for name in ("mu", "beta", "sigma", "in_market")
        )
        source = demand_["source"] + (f" ({demand_['reason']})" if demand_.get("reason") else "")
        text = f"demand from {source}: humans {params}"
        lines += _wrapped(text, width, "  demand         ", " " * 17)
    ledger = summary.get("agent_ledger")
    if ledger:
        lines.append(
            f"  agent ledger   K = {ledger['k']}, per episode (% of the best undefended "
            f"profit at α = 0) [95% store-sample CI]:"
        )
        for sentence in ledger["reading"]:
            lines += _wrapped(sentence, width, "    - ", "      ")
    return lines


def _observed_lines(summary: dict[str, Any], width: int = 96) -> list[str]:
    """The observed premium per class, or where the prices are declared when the store's price
    logs could not identify them (nothing to measure the premium against)."""
    prices_ = summary.get("prices") or {}
    if prices_.get("source") == "declared":
        why = f" ({prices_['reason']})" if prices_.get("reason") else ""
        text = (
            f"not measured: the store's price logs cannot identify its prices{why}; its "
            f"prices are declared in the settings: {prices_.get('declared')}"
        )
        return _wrapped(text, width, "  observed COI   ", " " * 17)
    if not summary.get("observed_coi"):
        return []

    def cell(r: dict[str, Any]) -> str:
        if "class" not in r:
            return f"columns {r['columns']}"
        if r.get("mean") is None and r.get("n") == 0:
            return f"{r['class']}: no quotes"
        quotes = f" ({r['n']:,} quotes)" if isinstance(r.get("n"), int) else ""
        return f"{r['class']} {_ci(r, 4)}{quotes}"

    text = "; ".join(cell(r) for r in summary["observed_coi"])
    return _wrapped(text, width, "  observed COI   ", " " * 17)


_LABELS = {
    "demand": "demand",
    "agent_ledger": "agent ledger",
    "separability": "separability",
    "coi_erosion": "COI erosion",
    "prices": "prices",
    "observed_coi": "observed COI",
    "certification": "certificate",
}


def _stale_lines(summary: dict[str, Any], *names: str) -> list[str]:
    """`stale: from the run of <time>, not rebuilt` for each of `names` this run did not rebuild."""
    stale = summary.get("stale") or {}
    return [f"  {_LABELS[n]:<15}stale: from {stale[n]}, not rebuilt" for n in names if n in stale]


def _store_lines(store: str, summary: dict[str, Any]) -> list[str]:
    lines = [f"-- {store} --", *_stale_lines(summary, "demand", "agent_ledger")]
    lines += _ledger_lines(summary)
    sep, erosion = summary.get("separability"), summary.get("coi_erosion")
    lines += _stale_lines(summary, "separability")
    lines += _separability_lines(sep) if sep else ["  separability   not built"]
    lines += _stale_lines(summary, "coi_erosion")
    lines += _erosion_lines(erosion) if erosion else ["  COI erosion    not built"]
    lines += _stale_lines(summary, "prices", "observed_coi") + _observed_lines(summary)
    cert = summary.get("certification")
    lines += _stale_lines(summary, "certification")
    lines += _certification_lines(cert) if cert else ["  certificate    not built"]
    for name, error in summary.get("unreadable", {}).items():
        lines.append(f"  {name}: unreadable ({error})")
    lines += [f"  report         {path}" for path in summary.get("reports", [])]
    return lines


def render_summary(settings: Settings, summary: dict[str, Any] | None = None) -> str:
    """Plain-text summary for the terminal (of `summary`, collected now if not given)."""
    summary = collect_summary(settings) if summary is None else summary
    lines = ["", "== PHANTOM summary ==", f"batches used: {len(summary['batches'])}"]
    for batch in summary["batches"]:
        kind = "demo" if batch["demo"] else "own "
        counts = f"{batch['rows']:,} rows, {batch['quarantined'] or 0:,} quarantined"
        lines.append(f"  {batch['key']}  {kind}  {Path(batch['source']).name}  {counts}")
    for warning in summary["batch_warnings"]:
        lines += _wrapped(warning, 96, "WARNING: batch ", "    ")
    stale = summary.get("sessions_stale")
    lines.append(
        "sessions per store and class" + (f" (stale: from {stale}, not rebuilt):" if stale else ":")
    )
    if not summary["sessions"]:
        lines.append("  (warehouse not built)")
    for row in summary["sessions"]:
        lines.append(
            f"  {row['store']:<8} {row['actor']:<8} {row['n_sessions']:>6} sessions "
            f"{row['n_events']:>8} events"
        )
    quarantined = summary["quarantined"]
    lines.append(f"quarantined rows: {sum(quarantined.values())}")
    lines.extend(f"  {reason:<24} {n:>6}" for reason, n in quarantined.items())
    for store, store_summary_ in summary["stores"].items():
        lines += _store_lines(store, store_summary_)
    paths = summary["paths"]
    lines.append(f"lake:      {paths['lake']}")
    lines.append(f"warehouse: {paths['warehouse']}")
    lines.append(f"reports:   {paths['reports']}")
    return "\n".join(lines)
