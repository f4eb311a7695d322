"""Lineage audit and certification (docs/method.md#certification): records, offline verification,
promotion gate.

Pure and Dagster-free; `phantom_assets.assets.lineage.collect_lineage` fills the records from
an instance.
Typical use::

    decision = promotion_gate(stress, baseline="tuned-a050", static="static-a050",
                              failed_checks={...}, rng=rng, max_human_harm=0.02)
    report = CertificationReport(store, decision.candidate, decision.certified, decision.reasons,
                                 records, gate=decision.to_dict(),
                                 environment=environment_snapshot(root))
    result = verify_records(CertificationReport.from_json(text).records)
    assert result.ok, result.first_mismatch
"""

from phantom_assets.audit.environment import environment_snapshot, git_state, package_versions
from phantom_assets.audit.gate import (
    GATE_METHOD,
    GateDecision,
    holm_adjust,
    promotion_gate,
)
from phantom_assets.audit.pairs import (
    FITTED,
    PERMUTED,
    PairedStress,
    StressCube,
    paired_stress,
    seed_means,
    stress_cube,
)
from phantom_assets.audit.records import (
    ArtifactRecord,
    CertificationReport,
    failed_blocking_checks,
    stale_records,
)
from phantom_assets.audit.render import render_markdown
from phantom_assets.audit.selection import select_candidates
from phantom_assets.audit.sign_flip import SignFlipResult, sign_flip_test
from phantom_assets.audit.studentized import MeanTestResult, mean_test, mean_tests
from phantom_assets.audit.verify import (
    Mismatch,
    VerificationResult,
    file_digests_of,
    report_differences,
    verify_records,
)

__all__ = [
    "FITTED",
    "GATE_METHOD",
    "PERMUTED",
    "ArtifactRecord",
    "CertificationReport",
    "GateDecision",
    "MeanTestResult",
    "Mismatch",
    "PairedStress",
    "SignFlipResult",
    "StressCube",
    "VerificationResult",
    "environment_snapshot",
    "failed_blocking_checks",
    "file_digests_of",
    "git_state",
    "holm_adjust",
    "mean_test",
    "mean_tests",
    "package_versions",
    "paired_stress",
    "promotion_gate",
    "render_markdown",
    "report_differences",
    "seed_means",
    "select_candidates",
    "sign_flip_test",
    "stale_records",
    "stress_cube",
    "verify_records",
]
