"""Offline verification and replay of a certification report (`phantom audit`,
docs/architecture.md#audit-and-tamper-evidence).

Verification re-hashes every stored artifact the report lists and compares with the recorded
data versions (tamper evidence), then re-derives the decision -- verdict, reasons, every number
of the gate, the assumptions and the ledger -- from those hashed files and the report's recorded
checks, and checks report.md is the rendering of report.json. Replay re-materializes one
recorded asset partition from its recorded inputs inside a scratch copy of the data root -- the
real lake is never touched -- and checks the result hashes to the recorded data version.
"""

import dataclasses
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from orchestration.definitions import build_definitions
from phantom_assets.assets.audit import derive_certificate
from phantom_assets.assets.lineage import upstream_partitions
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.audit import (
    ArtifactRecord,
    CertificationReport,
    render_markdown,
    report_differences,
)
from phantom_assets.config import Settings, settings_from_dict
from phantom_assets.lake import REPORT_FILE, REPORT_MD_FILE
from phantom_assets.storage import combined_digest

# Derived outputs that replay never needs: leave them out of the scratch copy.
_NOT_COPIED = ("reports", "publish", "models")


def load_report(settings: Settings, store: str) -> CertificationReport:
    """The store's report in `settings.data_dir`, its artifacts relative to the data root.

    Reports written before paths were stored relative hold absolute paths below the root they
    were written in (`config.data_dir`); they are rebased onto it, so they verify in a copy too.

    Raises:
        FileNotFoundError: there is no report in this data root (the message says how to make one).
    """
    path = settings.lake.certification_report(store)
    if not path.exists():
        raise FileNotFoundError(
            f"no certification report at {path}: run `phantom run` (or materialize "
            f"certification_report[{store}]) in this data root first"
        )
    report = CertificationReport.from_json(path.read_text())
    return report.relative_to(report.data_root)


@dataclass(frozen=True)
class Replay:
    """Outcome of re-running one recorded step."""

    record: ArtifactRecord
    reproduced_version: str
    run_success: bool

    @property
    def reproduces(self) -> bool:
        return self.run_success and self.reproduced_version == self.record.data_version


def _pick(report: CertificationReport, asset: str, partition: str | None) -> ArtifactRecord:
    matches = [
        r
        for r in report.records
        if r.asset == asset and (partition is None or r.partition == partition) and r.artifacts
    ]
    if not matches:
        raise ValueError(f"the report records no stored artifact of {asset} [{partition or '*'}]")
    return matches[0]


def replay_step(
    settings: Settings,
    report: CertificationReport,
    asset: str,
    partition: str | None = None,
) -> Replay:
    """Re-materialize `asset[partition]` (default: its first recorded one) in a scratch copy of
    `settings.data_dir` (the data root being audited, wherever it was written).

    Raises:
        ValueError: no stored artifact of `asset [partition]` is recorded, or one lies outside
            the data root the report was written in (it cannot be found in a copy).
    """
    record = _pick(report, asset, partition)
    outside = [p for p in record.artifacts if Path(p).is_absolute()]
    if outside:
        raise ValueError(
            f"{record.label}: {outside[0]} lies outside the data root the report "
            "was written in; replay needs artifacts inside it"
        )
    with tempfile.TemporaryDirectory(prefix="phantom-replay-") as scratch:
        root = Path(scratch) / "data"
        shutil.copytree(settings.data_dir, root, ignore=shutil.ignore_patterns(*_NOT_COPIED))
        replica = dataclasses.replace(settings, data_dir=root)
        with dg.instance_for_test() as instance:
            if asset == "raw_events":
                instance.add_dynamic_partitions(BATCH_PARTITIONS_NAME, [record.partition])
            defs = build_definitions(replica)
            result = dg.materialize(
                list(defs.assets or []),
                selection=dg.AssetSelection.assets(asset).required_multi_asset_neighbors(),
                partition_key=record.partition,
                instance=instance,
                resources=defs.resources,
                raise_on_error=False,
            )
        written = [root / p for p in record.artifacts]  # relative to the data root
        version = combined_digest(written) if all(p.exists() for p in written) else "missing"
    return Replay(record, version, result.success)


class NotInLineage(ValueError):
    """The re-derivation needs a record the report does not hold."""


@dataclass(frozen=True)
class ReportLineage:
    """`LineageSource` of a report's own records: the lineage of an asset partition is walked
    with the code location's graph and every node must have its record in the report (a batch
    that never loaded and an unobserved source are left out of a lineage, as when it was
    collected)."""

    records: dict[tuple[str, str | None], ArtifactRecord]
    instance: dg.DagsterInstance
    graph: Any

    def record(self, asset: str, partition: str) -> ArtifactRecord | None:
        found = self.records.get((asset, partition))
        if found is None:
            raise NotInLineage(
                f"{asset} [{partition}] is in the data root but not in the report's lineage"
            )
        return found

    def lineage(self, asset: str, partition: str) -> list[ArtifactRecord]:
        nodes = upstream_partitions(self.instance, self.graph, dg.AssetKey(asset), partition)
        found, absent = [], []
        for key, part in nodes:
            record = self.records.get((key.to_user_string(), part))
            if record is not None:
                found.append(record)
            elif self.graph.get(key).is_materializable and key.to_user_string() != "raw_events":
                absent.append(f"{key.to_user_string()} [{part}]")
        if absent:
            raise NotInLineage(
                f"the report's lineage of {asset} [{partition}] lacks {', '.join(sorted(absent))}"
            )
        return found


def rederive_report(settings: Settings, report: CertificationReport) -> CertificationReport:
    """The certificate `derive_certificate` makes from the files in `settings.data_dir` with the
    report's configuration, recorded checks and environment (run after `verify_records`, so the
    files are the recorded bytes).

    Raises:
        NotInLineage: a file the decision reads has no record in the report.
    """
    configured = settings_from_dict({**report.config, "data_dir": str(settings.data_dir)})
    graph = build_definitions(configured).resolve_asset_graph()
    records = {(r.asset, r.partition): r for r in report.records}
    batches = sorted(p for a, p in records if a == "raw_events" and p is not None)
    instance = dg.DagsterInstance.ephemeral()  # holds only the recorded batches
    instance.add_dynamic_partitions(BATCH_PARTITIONS_NAME, batches)
    source = ReportLineage(records, instance, graph)
    derived, _ = derive_certificate(configured, report.store, source, report.environment)
    return derived


def certificate_problems(settings: Settings, report: CertificationReport) -> list[str]:
    """Where the certificate files disagree with what their hashed lineage decides: each
    problem names the file and the field (empty: the decision is the lineage's)."""
    folder = settings.lake.certification_dir(report.store)
    try:
        derived = rederive_report(settings, report)
    except NotInLineage as error:
        return [f"{folder / REPORT_FILE}: {error}"]
    recorded = CertificationReport.from_json((folder / REPORT_FILE).read_text()).to_dict()
    problems = [
        f"{folder / REPORT_FILE}: {field} is not what the lineage decides"
        for field in report_differences(recorded, derived.to_dict())
    ]
    markdown = folder / REPORT_MD_FILE
    if not markdown.is_file():
        problems.append(f"{markdown}: missing")
    elif (written := markdown.read_text()) != (rendered := render_markdown(report)):
        lines = zip(written.splitlines(), rendered.splitlines(), strict=False)
        line = next((i for i, (a, b) in enumerate(lines, 1) if a != b), "end")
        problems.append(f"{markdown}: differs from the rendering of report.json (line {line})")
    return problems
