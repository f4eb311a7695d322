"""Records of a certification: one `ArtifactRecord` per lineage partition, and the report.

`CertificationReport` bundles the records with the gate decision (docs/method.md#lineage-audit).

Both are plain frozen dataclasses with a lossless JSON form, so a report written by the
`certification_report` asset can be re-read and re-verified offline without Dagster.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REPORT_FORMAT_VERSION = 2
GATE_CONTRACT_KEYS: tuple[str, ...] = (
    "candidate",
    "baseline",
    "n_pairs",
    "selection_seeds",
    "test_seeds",
    "ci_low",
    "ci_high",
    "p_value",
    "method",
)
"""Gate numbers repeated at the top of `report.json` (docs/architecture.md#column-contracts)."""


@dataclass(frozen=True)
class ArtifactRecord:
    """The latest materialization of one asset partition, as found in the Dagster instance.

    Attributes:
        asset: Asset key as a user string (`transition_kernels`).
        partition: Partition key (`hotel`, `agent|hotel`, a batch key) or None if unpartitioned.
        data_version: Recorded data version (`combined_digest` of `artifacts` for file assets);
            None when the partition was never materialized.
        code_version: Code version the materialization ran with, if any.
        run_id: Dagster run that produced it.
        materialized_at: ISO-8601 UTC timestamp of the materialization event.
        artifacts: Paths of the files it wrote (empty for warehouse tables and sources).
        checks: Latest asset-check outcome per check name (True = passed).
        metadata: Small JSON-able extras (row counts, seeds, config values, ...).
        file_digests: SHA-256 per artifact path when the lineage was collected, so an offline
            verification can name the exact file that changed.
        stale: Why Dagster found it stale when the lineage was collected (its code or an
            input changed since it was built, as the UI's "stale" badge says); empty: current.
    """

    asset: str
    partition: str | None
    data_version: str | None
    code_version: str | None
    run_id: str | None
    materialized_at: str | None
    artifacts: tuple[str, ...] = ()
    checks: dict[str, bool] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    file_digests: dict[str, str] = field(default_factory=dict)
    stale: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """`asset [partition]` (or just `asset` when unpartitioned), for messages and tables."""
        return self.asset if self.partition is None else f"{self.asset} [{self.partition}]"

    def relative_to(self, root: Path | str) -> ArtifactRecord:
        """This record with the artifact paths below `root` made relative to it (others kept).

        Reports store artifacts relative to the data root, so a copied or moved data root is
        verified against its own files; older reports (absolute paths) are rebased the same way.
        """
        base = Path(root)

        def rebase(artifact: str) -> str:
            path = Path(artifact)
            return path.relative_to(base).as_posix() if path.is_relative_to(base) else artifact

        return replace(
            self,
            artifacts=tuple(rebase(a) for a in self.artifacts),
            file_digests={rebase(a): d for a, d in self.file_digests.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (artifacts as a list)."""
        payload = asdict(self)
        payload["artifacts"] = list(self.artifacts)
        payload["stale"] = list(self.stale)
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> ArtifactRecord:
        """Inverse of `to_dict`.

        Raises:
            ValueError: If a required key is missing.
        """
        missing = {"asset", "partition", "data_version"} - set(payload)
        if missing:
            raise ValueError(f"artifact record lacks {sorted(missing)}: {payload!r}")
        return cls(
            asset=payload["asset"],
            partition=payload["partition"],
            data_version=payload["data_version"],
            code_version=payload.get("code_version"),
            run_id=payload.get("run_id"),
            materialized_at=payload.get("materialized_at"),
            artifacts=tuple(payload.get("artifacts", ())),
            checks={str(k): bool(v) for k, v in payload.get("checks", {}).items()},
            metadata=dict(payload.get("metadata", {})),
            file_digests={str(k): str(v) for k, v in payload.get("file_digests", {}).items()},
            stale=tuple(payload.get("stale", ())),
        )


@dataclass(frozen=True)
class CertificationReport:
    """The certificate of one store's promoted policy: verdict, gate numbers and full lineage.

    Attributes:
        store: Store the policy prices (`hotel`, `airline`).
        policy: Policy key of the candidate (`ppo-robust-a030`).
        certified: True iff every blocking check passed and the promotion gate was met.
        reasons: Human-readable sentences explaining the verdict.
        records: Lineage, in topological order, from the raw batches to the policy.
        gate: Gate numbers (`GateDecision.to_dict()`).
        config: Configuration the lineage was built with.
        seeds: Every seed used, by name.
        environment: `environment_snapshot()` at certification time.
    """

    store: str
    policy: str
    certified: bool
    reasons: tuple[str, ...]
    records: tuple[ArtifactRecord, ...]
    gate: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    seeds: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def data_root(self) -> Path | None:
        """The data root the report was written in (`config.data_dir`), if recorded."""
        root = self.config.get("data_dir")
        return Path(root) if root else None

    def relative_to(self, root: Path | str | None) -> CertificationReport:
        """The report with every record's artifacts below `root` relative to it (None: as is)."""
        if root is None:
            return self
        return replace(self, records=tuple(r.relative_to(root) for r in self.records))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict with a format version."""
        return {
            "format_version": REPORT_FORMAT_VERSION,
            "store": self.store,
            "policy": self.policy,
            **{key: self.gate[key] for key in GATE_CONTRACT_KEYS if key in self.gate},
            "certified": self.certified,
            "reasons": list(self.reasons),
            "records": [record.to_dict() for record in self.records],
            "gate": self.gate,
            "config": self.config,
            "seeds": self.seeds,
            "environment": self.environment,
        }

    def to_json(self) -> str:
        """Canonical JSON text (sorted keys, indented, trailing newline).

        Raises:
            ValueError: If a value (e.g. in `metadata` or `config`) is not JSON-serializable.
        """
        try:
            return json.dumps(self.to_dict(), sort_keys=True, indent=2, allow_nan=False) + "\n"
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"certification report for {self.store}/{self.policy} is not JSON-serializable: "
                f"{error}; convert the offending value to str/int/float/list/dict first"
            ) from error

    @classmethod
    def from_json(cls, text: str) -> CertificationReport:
        """Parse a report written by `to_json`.

        Raises:
            ValueError: If the text is not a report of a known format version.
        """
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"certification report is not valid JSON: {error}") from error
        version = payload.get("format_version") if isinstance(payload, dict) else None
        if version != REPORT_FORMAT_VERSION:
            raise ValueError(
                f"unsupported certification report format_version {version!r} "
                f"(expected {REPORT_FORMAT_VERSION})"
            )
        return cls(
            store=payload["store"],
            policy=payload["policy"],
            certified=bool(payload["certified"]),
            reasons=tuple(payload["reasons"]),
            records=tuple(ArtifactRecord.from_dict(r) for r in payload["records"]),
            gate=dict(payload.get("gate", {})),
            config=dict(payload.get("config", {})),
            seeds=dict(payload.get("seeds", {})),
            environment=dict(payload.get("environment", {})),
        )


def stale_records(records: Iterable[ArtifactRecord]) -> list[str]:
    """`asset [partition] is stale (why)` for every record built before its code or an input
    changed: a result computed from it mixes versions."""
    return [f"{r.label} is stale ({'; '.join(r.stale)})" for r in records if r.stale]


def failed_blocking_checks(records: Iterable[ArtifactRecord]) -> list[str]:
    """`asset [partition]: check` for every failed check listed under `blocking_checks` metadata.

    A record that was never materialized counts as a failure too (the lineage has a hole).
    """
    failed = []
    for record in records:
        if record.data_version is None:
            failed.append(f"{record.label}: never materialized")
        blocking = set(record.metadata.get("blocking_checks", ()))
        failed.extend(
            f"{record.label}: {name}"
            for name, passed in sorted(record.checks.items())
            if name in blocking and not passed
        )
    return failed
