"""Offline tamper evidence: re-hash every stored artifact of a lineage and compare
(docs/architecture.md#audit-and-tamper-evidence).

Every file-backed asset's data version is `combined_digest` of the files it wrote, so recomputing
that digest from the files on disk proves (or disproves) that they are the bytes the pipeline
produced. Per-file digests recorded at collection time let a mismatch name the exact file.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phantom_assets.audit.records import ArtifactRecord
from phantom_assets.storage import combined_digest, file_digest

logger = logging.getLogger(__name__)

SHORT_DIGEST = 8


def _short(digest: str | None) -> str:
    return "none" if digest is None else f"{digest[:SHORT_DIGEST]}..."


@dataclass(frozen=True)
class Mismatch:
    """One artifact whose bytes no longer match the recorded version.

    Attributes:
        asset: Asset key of the record.
        partition: Partition key of the record (None if unpartitioned).
        file: Path of the offending file, or several names joined by ", " when the recorded
            version cannot tell which of the record's files changed.
        reason: `changed` or `missing`.
        recorded: Digest recorded in the lineage (the file's, or the record's data version).
        found: Digest recomputed now (None for a missing file).
    """

    asset: str
    partition: str | None
    file: str
    reason: str
    recorded: str | None
    found: str | None

    @property
    def message(self) -> str:
        """`transition_kernels [agent|airline]: kernel.parquet changed (recorded 1a2b..., ...)`."""
        label = self.asset if self.partition is None else f"{self.asset} [{self.partition}]"
        names = ", ".join(Path(part).name for part in self.file.split(", "))
        if self.reason == "missing":
            return f"{label}: {names} is missing (expected at {self.file})"
        recorded, found = _short(self.recorded), _short(self.found)
        return f"{label}: {names} changed (recorded {recorded}, found {found})"


@dataclass(frozen=True)
class VerificationResult:
    """Outcome of `verify_records`.

    Attributes:
        ok: True iff no artifact mismatched.
        mismatches: Every mismatch, in lineage order (records' order, then file order).
        n_records: Records that had files to verify.
        n_files: Files re-hashed or found missing.
    """

    ok: bool
    mismatches: list[Mismatch]
    n_records: int
    n_files: int

    @property
    def first_mismatch(self) -> str | None:
        """Message of the first mismatch in lineage order, or None when everything verified."""
        return self.mismatches[0].message if self.mismatches else None


def _resolve(artifact: str, root: Path | None) -> Path:
    path = Path(artifact)
    return path if path.is_absolute() or root is None else root / path


def _verify_record(record: ArtifactRecord, root: Path | None) -> list[Mismatch]:
    paths = {artifact: _resolve(artifact, root) for artifact in sorted(record.artifacts)}
    missing = [a for a, p in paths.items() if not p.is_file()]
    if not missing:
        found = combined_digest(paths.values())
        if found == record.data_version:
            return []
    mismatches = [
        Mismatch(record.asset, record.partition, a, "missing", record.file_digests.get(a), None)
        for a in missing
    ]
    for artifact, path in paths.items():
        recorded = record.file_digests.get(artifact)
        if artifact in missing or recorded is None:
            continue
        current = file_digest(path)
        if current != recorded:
            mismatches.append(
                Mismatch(record.asset, record.partition, artifact, "changed", recorded, current)
            )
    if not mismatches:
        # The per-file digests cannot tell which file changed (or were not recorded).
        mismatches.append(
            Mismatch(
                record.asset,
                record.partition,
                ", ".join(paths),
                "changed",
                record.data_version,
                found,
            )
        )
    order = {artifact: i for i, artifact in enumerate(paths)}
    return sorted(mismatches, key=lambda m: order.get(m.file, len(order)))


def verify_records(
    records: Iterable[ArtifactRecord], root: Path | None = None
) -> VerificationResult:
    """Recompute `combined_digest` of each record's artifacts and compare with its data version.

    Records without artifacts (warehouse tables, sources) have nothing to re-hash and are
    skipped. A missing file is a mismatch.

    Args:
        records: Lineage records, in lineage order.
        root: Folder that relative artifact paths are resolved against (default: the CWD).

    Returns:
        The verification result; `first_mismatch` names asset, partition and file.
    """
    mismatches: list[Mismatch] = []
    n_records = n_files = 0
    for record in records:
        if not record.artifacts:
            continue
        n_records += 1
        n_files += len(record.artifacts)
        mismatches.extend(_verify_record(record, root))
    for mismatch in mismatches:
        logger.warning("artifact mismatch: %s", mismatch.message)
    return VerificationResult(not mismatches, mismatches, n_records, n_files)


def file_digests_of(artifacts: Iterable[str], root: Path | None = None) -> dict[str, str]:
    """SHA-256 of each existing artifact (missing files are left out), keyed by the given path."""
    digests = {}
    for artifact in artifacts:
        path = _resolve(artifact, root)
        if path.is_file():
            digests[artifact] = file_digest(path)
    return digests


DECIDED_FIELDS = ("policy", "certified", "reasons", "gate", "seeds")
"""The report's fields that `phantom audit` re-derives from the hashed lineage."""


def _differences(recorded: Any, derived: Any, path: str) -> list[str]:
    if isinstance(recorded, dict) and isinstance(derived, dict):
        return [
            diff
            for key in sorted(set(recorded) | set(derived), key=str)
            for diff in _differences(recorded.get(key), derived.get(key), f"{path}.{key}")
        ]
    if isinstance(recorded, list) and isinstance(derived, list) and len(recorded) == len(derived):
        return [
            diff
            for i, (a, b) in enumerate(zip(recorded, derived, strict=True))
            for diff in _differences(a, b, f"{path}[{i}]")
        ]
    return [] if recorded == derived else [path]


def report_differences(recorded: dict[str, Any], derived: dict[str, Any]) -> list[str]:
    """The fields (`gate.ci_low`, `reasons[0]`, `certified`) where a report's JSON disagrees with
    the one re-derived from its lineage, among `DECIDED_FIELDS`; empty when it agrees."""
    return [
        diff
        for name in DECIDED_FIELDS
        for diff in _differences(recorded.get(name), derived.get(name), name)
    ]
