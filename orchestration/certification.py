"""Offline verification and replay of a certification report (`phantom audit`,
docs/architecture.md#audit-and-tamper-evidence).

Verification re-hashes every stored artifact the report lists and compares with the recorded
data versions (tamper evidence). Replay re-materializes one recorded asset partition from its
recorded inputs inside a scratch copy of the data root -- the real lake is never touched -- and
checks the result hashes to the recorded data version.
"""

import dataclasses
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from orchestration.definitions import build_definitions
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.audit import ArtifactRecord, CertificationReport
from phantom_assets.config import Settings
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
        r for r in report.records
        if r.asset == asset and (partition is None or r.partition == partition) and r.artifacts
    ]  # fmt: skip
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
        raise ValueError(f"{record.label}: {outside[0]} lies outside the data root the report "
                         "was written in; replay needs artifacts inside it")  # fmt: skip
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
