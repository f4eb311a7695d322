"""End to end, as a user would: `phantom run` on a fresh data root (sample data simulated; the
session's shared build, `tests/built_pipeline.py`), then `phantom audit` on a copy of it --
verified, tampered (fails naming the asset and partition), restored, replayed."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from orchestration.certification import certificate_problems, load_report
from phantom_assets.audit import verify_records
from phantom_assets.audit.records import GATE_CONTRACT_KEYS
from phantom_assets.audit.signing import new_key_pair
from tests.built_pipeline import BuiltPipeline
from tests.pipeline_helpers import recomputed_comparison_means

pytestmark = pytest.mark.e2e

KERNEL = Path("lake/transition_kernels/store=hotel/actor=agent/kernel.parquet")


@pytest.fixture(scope="module")
def workspace(built_pipeline: BuiltPipeline, tmp_path_factory: pytest.TempPathFactory):
    """A private copy of the session's build: the audit tests tamper with its files."""
    return built_pipeline.copy_to(tmp_path_factory.mktemp("e2e"))


def test_main_job_completes_and_prints_the_summary(built_pipeline: BuiltPipeline):
    data = built_pipeline.data_dir
    assert built_pipeline.returncode == 0, built_pipeline.stderr[-4000:]
    assert "== PHANTOM summary ==" in built_pipeline.stdout
    assert "quarantined rows: 0" in built_pipeline.stdout
    curves = pl.read_parquet(data / "lake/benchmark_curves/store=hotel/curves.parquet")
    contract = {"policy", "tier", "mode", "alpha", "k", "metric", "mean", "ci_low", "ci_high", "n"}
    assert contract <= set(curves.columns)
    erosion = pl.read_parquet(data / "lake/coi_erosion/store=hotel/coi_erosion.parquet")
    assert {"alpha", "k", "class", "coi", "ci_low", "ci_high", "n"} <= set(erosion.columns)
    oracle = pl.read_parquet(data / "lake/market_oracle/store=hotel/oracle.parquet")
    assert {"alpha", "k", "action", "level", "markup", "delta", "profit"} <= set(oracle.columns)
    assert (data / "lake/certification_report/store=hotel/report.md").exists()


def test_certification_report_pairs_held_out_episode_seeds_only(built_pipeline: BuiltPipeline):
    data = built_pipeline.data_dir
    for store in ("hotel", "airline"):
        report = json.loads(
            (data / f"lake/certification_report/store={store}/report.json").read_text()
        )
        assert set(GATE_CONTRACT_KEYS) | {"certified", "reasons"} <= set(report)
        assert report["n_pairs"] == len(report["test_seeds"]) == 24  # TINY_CONFIG test_episodes
        assert set(report["selection_seeds"]).isdisjoint(report["test_seeds"])
        assert [c["n"] for c in report["gate"]["comparisons"]] == [24, 24, 24]
        # What is certified is detection: against the best undefended response, not the engine.
        assert report["baseline"].startswith("tuned-")
        assert report["gate"]["static"].startswith("static-")
        # As many held-out seeds as the gate's tests are calibrated for: what decides is the
        # evidence, never the seed count.
        assert not any("held-out seeds <" in reason for reason in report["reasons"])


def test_no_number_in_the_certificate_compares_two_policies_at_different_alphas(
    built_pipeline: BuiltPipeline,
):
    """Every comparison names the one band α of each α0 cell both arms were compared at, and its
    held-out mean is recomputed from both arms' stress rows at exactly those α."""
    for store in ("hotel", "airline"):
        report = json.loads(
            (
                built_pipeline.data_dir / f"lake/certification_report/store={store}/report.json"
            ).read_text()
        )
        profit, value, _ = report["gate"]["comparisons"]
        assert recomputed_comparison_means(built_pipeline.data_dir, report) == [
            pytest.approx(profit["mean"], rel=1e-9, abs=1e-6),
            pytest.approx(value["mean"], rel=1e-9, abs=1e-6),
        ]


@pytest.mark.parametrize(
    ("artifact", "asset", "partition"),
    [
        (KERNEL, "transition_kernels", "agent|hotel"),
        (Path("lake/market_simulators/store=hotel/spec.npz"), "market_simulators", "hotel"),
    ],
)
def test_audit_verifies_then_names_a_tampered_artifact_then_passes_once_restored(
    workspace: BuiltPipeline, artifact: Path, asset: str, partition: str
):
    data = workspace.data_dir  # the untouched copy passes: test_the_audit_re_derives_...
    target = data / artifact
    original = target.read_bytes()
    tampered = bytearray(original)
    tampered[len(tampered) // 2] ^= 0xFF  # one byte
    target.write_bytes(bytes(tampered))
    try:
        failed = workspace.phantom("audit", "--store", "hotel")
    finally:
        target.write_bytes(original)
    assert failed.returncode != 0
    assert asset in failed.stderr and partition in failed.stderr and artifact.name in failed.stderr
    assert workspace.phantom("audit", "--store", "hotel").returncode == 0


def test_audit_replays_a_training_partition_to_the_same_data_version(workspace: BuiltPipeline):
    replay = workspace.phantom("audit", "--store", "hotel", "--replay", "trained_policies")
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert "reproduces data version" in replay.stderr


def _edit_json(path: Path, change) -> None:
    report = json.loads(path.read_text())
    change(report)
    path.write_text(json.dumps(report, sort_keys=True, indent=2) + "\n")


def _flip_a_byte(path: Path) -> None:
    tampered = bytearray(path.read_bytes())
    tampered[len(tampered) // 2] ^= 0xFF
    path.write_bytes(bytes(tampered))


CERTIFICATE = Path("lake/certification_report/store=hotel")
FORGERIES = {
    # (what is changed, the file the audit must name, the field where it can tell)
    "verdict flipped in report.json": (
        lambda d: _edit_json(d / CERTIFICATE / "report.json", lambda r: r.update(certified=True)),
        "report.json",
        "certified",
    ),
    "a gate number in report.json": (
        lambda d: _edit_json(
            d / CERTIFICATE / "report.json", lambda r: r["gate"].update(ci_low=123.0)
        ),
        "report.json",
        "gate.ci_low",
    ),
    "a reason in report.json": (
        lambda d: _edit_json(
            d / CERTIFICATE / "report.json", lambda r: r.update(reasons=["certified: trust me"])
        ),
        "report.json",
        "reasons",
    ),
    "the verdict line of report.md": (
        lambda d: (d / CERTIFICATE / "report.md").write_text(
            (d / CERTIFICATE / "report.md").read_text().replace("NOT CERTIFIED", "CERTIFIED")
        ),
        "report.md",
        "line 3",
    ),
    "a byte of the sensitivity grid it cites": (
        lambda d: _flip_a_byte(d / "lake/market_sensitivity/store=hotel/sensitivity.parquet"),
        "sensitivity.parquet",
        "market_sensitivity",
    ),
    "a byte of the agent ledger it cites": (
        lambda d: _flip_a_byte(d / "lake/market_oracle/store=hotel/ledger.parquet"),
        "ledger.parquet",
        "market_oracle",
    ),
}


def _audit_problems(workspace: BuiltPipeline) -> list[str]:
    """What `phantom audit` reports, in process: byte mismatches, then the decision's problems."""
    settings = workspace.settings
    report = load_report(settings, "hotel")
    mismatches = verify_records(report.records, root=settings.data_dir).mismatches
    if mismatches:
        return [f"{m.message} ({m.file})" for m in mismatches]
    return certificate_problems(settings, report)


def test_the_audit_re_derives_the_decision_and_names_every_forged_file(workspace: BuiltPipeline):
    """Bytes and decision: each forgery fails the audit naming the file (and the field where the
    report disagrees with what its hashed lineage decides); the restored root passes. The
    command's exit code and message once, then the same checks in process."""
    data = workspace.data_dir
    files = [
        data / CERTIFICATE / "report.json",
        data / CERTIFICATE / "report.md",
        data / "lake/market_sensitivity/store=hotel/sensitivity.parquet",
        data / "lake/market_oracle/store=hotel/ledger.parquet",
    ]
    originals = {path: path.read_bytes() for path in files}
    report = json.loads(originals[files[0]])
    assert {r["asset"] for r in report["records"]} >= {"market_sensitivity", "market_oracle"}
    evaluated = {r["partition"] for r in report["records"] if r["asset"] == "policy_evaluations"}
    gate = report["gate"]  # every evaluated policy the selection ranked is recorded
    assert len(evaluated) == len(gate["candidate_set"]) + 2 - len(gate["missing_evaluations"])
    assert _audit_problems(workspace) == []
    for index, (name, (forge, file, field)) in enumerate(FORGERIES.items()):
        forge(data)
        try:
            if index == 0:
                failed = workspace.phantom("audit", "--store", "hotel")
                assert failed.returncode == 1, failed.stderr[-2000:]
                problems = [failed.stderr]
            else:
                problems = _audit_problems(workspace)
        finally:
            for path, content in originals.items():
                path.write_bytes(content)
        assert any(file in p and field in p for p in problems), (name, problems)
    passed = workspace.phantom("audit", "--store", "hotel")
    assert passed.returncode == 0, passed.stderr[-2000:]
    assert "what the lineage decides" in passed.stderr


def test_a_signed_certificate_verifies_with_its_key_only(workspace: BuiltPipeline, tmp_path: Path):
    key, other = tmp_path / "certifier.pem", tmp_path / "someone-else.pem"
    for path in (key, other):
        private, public = new_key_pair()
        path.write_bytes(private)
        Path(f"{path}.pub").write_bytes(public)
    signed = workspace.phantom("certify", "--store", "hotel", "--sign", str(key))
    assert signed.returncode == 0, signed.stderr[-2000:]
    assert key.read_text() not in signed.stderr + signed.stdout  # the key is never logged
    ok = workspace.phantom("audit", "--store", "hotel", "--verify", f"{key}.pub")
    assert ok.returncode == 0 and "signed by the holder" in ok.stderr, ok.stderr[-2000:]
    wrong = workspace.phantom("audit", "--store", "hotel", "--verify", f"{other}.pub")
    (workspace.data_dir / CERTIFICATE / "report.sig").unlink()
    assert wrong.returncode == 1 and "not made by this key" in wrong.stderr, wrong.stderr[-2000:]
    assert "report.sig" in wrong.stderr
