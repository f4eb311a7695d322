"""Lineage audit and certification (DESIGN §8): records, offline verification, promotion gate.

Pure and Dagster-free; `orchestration.lineage.collect_lineage` fills the records from an instance.
Typical use::

    decision = promotion_gate(candidate, baseline, checks_passed=ok, rng=rng)
    report = CertificationReport(store, policy, decision.certified, decision.reasons, records,
                                 gate=decision.to_dict(), environment=environment_snapshot(root))
    result = verify_records(CertificationReport.from_json(text).records)
    assert result.ok, result.first_mismatch
"""

from phantom_assets.audit.candidates import choose_candidate, paired_metric
from phantom_assets.audit.environment import environment_snapshot, git_state, package_versions
from phantom_assets.audit.gate import GateDecision, paired_bootstrap_ci, promotion_gate
from phantom_assets.audit.records import (
    ArtifactRecord,
    CertificationReport,
    failed_blocking_checks,
)
from phantom_assets.audit.render import render_markdown
from phantom_assets.audit.verify import (
    Mismatch,
    VerificationResult,
    file_digests_of,
    verify_records,
)

__all__ = [
    "ArtifactRecord",
    "CertificationReport",
    "GateDecision",
    "Mismatch",
    "VerificationResult",
    "choose_candidate",
    "environment_snapshot",
    "failed_blocking_checks",
    "file_digests_of",
    "git_state",
    "package_versions",
    "paired_bootstrap_ci",
    "paired_metric",
    "promotion_gate",
    "render_markdown",
    "verify_records",
]
