"""What a finished tiny `phantom run` (the session's shared build, copied) leaves: a
self-contained data root (moved after the run, `phantom audit` verifies the moved root, a byte
flipped in a copy fails naming the file, `--replay` re-runs a training step there) and an
end-of-run summary with each store's results, also as JSON."""

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from orchestration.summary import collect_summary, render_summary
from phantom_assets.config import load_settings
from tests.built_pipeline import BuiltPipeline
from tests.pipeline_helpers import REPO_ROOT

pytestmark = pytest.mark.integration

PHANTOM = str(Path(sys.executable).parent / "phantom")
KERNEL = Path("lake/transition_kernels/store=hotel/actor=agent/kernel.parquet")
PHANTOM_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) ")
"""A line the `phantom` command logs itself (`cli.main`'s format)."""


@dataclass
class Built:
    root: Path
    moved: Path  # the data root after the run, moved away from where it was written
    env: dict[str, str]


def _phantom(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PHANTOM, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1500
    )


@pytest.fixture(scope="module")
def built(built_pipeline: BuiltPipeline, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A copy of the session's tiny `phantom run`, its data root then moved to another path."""
    copy = built_pipeline.copy_to(tmp_path_factory.mktemp("portable"))
    moved = copy.root / "moved" / "data"
    moved.parent.mkdir()
    copy.data_dir.rename(moved)  # nothing is left where the copy's reports were written
    return Built(copy.root, moved, {**copy.env, "PHANTOM_DATA_DIR": str(moved)})


def test_the_report_records_artifact_paths_relative_to_the_data_root(built: Built):
    report = json.loads(
        (built.moved / "lake/certification_report/store=hotel/report.json").read_text()
    )
    artifacts = [a for record in report["records"] for a in record["artifacts"]]
    assert artifacts and not [a for a in artifacts if Path(a).is_absolute()]
    assert all((built.moved / a).is_file() for a in artifacts)
    assert str(KERNEL) in artifacts


def test_audit_verifies_the_root_it_is_pointed_at_and_says_which(built: Built):
    audit = _phantom(built.env, "audit", "--store", "hotel")
    assert audit.returncode == 0, audit.stderr[-3000:]
    assert f"auditing the data root {built.moved}" in audit.stderr


def test_a_byte_flipped_in_a_copy_fails_the_audit_of_the_copy_naming_the_file(built: Built):
    copy = built.root / "copy" / "data"
    shutil.copytree(built.moved, copy)
    target = copy / KERNEL
    tampered = bytearray(target.read_bytes())
    tampered[len(tampered) // 2] ^= 0x01
    target.write_bytes(bytes(tampered))
    failed = _phantom(built.env, "audit", "--store", "hotel", "--data-dir", str(copy))
    assert failed.returncode == 1
    assert f"auditing the data root {copy}" in failed.stderr
    assert "transition_kernels [agent|hotel]: kernel.parquet changed" in failed.stderr
    assert str(copy / KERNEL) in failed.stderr
    assert _phantom(built.env, "audit", "--store", "hotel").returncode == 0  # the moved original


def test_replay_of_a_training_step_works_in_the_moved_root_and_prints_only_its_outcome(
    built: Built,
):
    # Why: the replay printed Dagster's debug events and every training line twice.
    replay = _phantom(built.env, "audit", "--store", "hotel", "--replay", "trained_policies")
    assert replay.returncode == 0, replay.stderr[-3000:]
    lines = replay.stderr.splitlines()
    assert "replay output and warnings: " in lines[-2] and "reproduces data version" in lines[-1]
    assert all(PHANTOM_LINE.match(line) for line in lines), replay.stderr
    assert "DEBUG" not in replay.stderr and "training" not in replay.stderr
    assert replay.stdout == ""
    log = Path(lines[-2].split("replay output and warnings: ")[1].split(" (--verbose")[0])
    assert "training" in log.read_text() and "STEP_SUCCESS" in log.read_text()


def test_a_failed_run_marks_the_results_it_did_not_rebuild_stale(
    built_pipeline: BuiltPipeline, tmp_path: Path
):
    # Why: after a failed run the summary re-read the previous run's files as if current.
    copy = built_pipeline.copy_to(tmp_path)
    (copy.settings.lake.market_dir("hotel") / "spec.json").unlink()  # coi_erosion cannot load it
    run = copy.phantom("run", "--select", "coi_erosion", "--store", "hotel", "--force")
    assert run.returncode == 1 and "FAILED: coi_erosion [hotel]" in run.stderr, run.stderr[-3000:]
    hotel, airline = (
        run.stdout.split(f"-- {store} --")[1].split("\n-- ")[0] for store in ("hotel", "airline")
    )
    assert re.search(
        r"\n  COI erosion    stale: from the run of \d{4}-\d\d-\d\d \d\d:\d\d UTC \(run "
        r"[0-9a-f]{8}\), not rebuilt\n  COI erosion    undefended engine",
        hotel,
    ), hotel
    assert hotel.count("stale:") == 1 and "stale:" not in airline  # the rest is current


def test_results_and_a_certificate_over_a_market_rebuilt_since_are_stale(
    built_pipeline: BuiltPipeline, tmp_path: Path
):
    copy = built_pipeline.copy_to(tmp_path)
    config = copy.config_file.read_text().replace(
        "shoppers_per_step = 40", "shoppers_per_step = 41"
    )
    copy.config_file.write_text(config)
    run = copy.phantom("run", "--select", "market_simulators", "--store", "hotel", "--json")
    assert run.returncode == 0, run.stderr[-3000:]
    stale = json.loads(run.stdout)["stores"]["hotel"]["stale"]
    # Rebuilt from a new market: what reads it is from the run before, not rebuilt.
    assert {"coi_erosion", "agent_ledger", "certification"} <= set(stale)
    assert all(origin.startswith("the run of ") for origin in stale.values())

    # A certificate built now, over policies trained on the old market, would mix versions: it
    # names the stale records and does not certify; the audit re-derives that verdict.
    certify = copy.phantom("run", "--select", "certification_report", "--store", "hotel", "--force")
    assert certify.returncode == 0, certify.stderr[-3000:]
    report = json.loads((copy.settings.lake.certification_dir("hotel") / "report.json").read_text())
    assert report["certified"] is False
    stale_records = [r for r in report["records"] if r["stale"]]
    assert {r["asset"] for r in stale_records} >= {"trained_policies", "policy_evaluations"}
    assert any("market_simulators [hotel]" in c for r in stale_records for c in r["stale"])
    assert any(
        "trained_policies" in reason and "is stale" in reason for reason in report["reasons"]
    )
    audit = copy.phantom("audit", "--store", "hotel")
    assert audit.returncode == 0, audit.stderr[-3000:]
    assert "NOT CERTIFIED (as the report says)" in audit.stderr


def test_the_json_summary_has_each_stores_headline_results_with_cis(built: Built):
    run = _phantom(built.env, "summary", "--json")  # what `phantom run --json` ends with
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert len(summary["batches"]) == 5 and all(b["demo"] for b in summary["batches"])
    for store in ("hotel", "airline"):
        results = summary["stores"][store]
        report = json.loads(
            (built.moved / f"lake/certification_report/store={store}/report.json").read_text()
        )
        sep = results["separability"]
        assert 0 < sep["p_value"] <= 1 and sep["auc_ci_low"] <= sep["auc"] <= sep["auc_ci_high"]
        erosion = results["coi_erosion"]
        k8 = next(row for row in erosion["by_k"] if row["k"] == erosion["nominal_k"])
        assert k8["coi_h"]["ci_low"] <= k8["coi_h"]["mean"] <= k8["coi_h"]["ci_high"]
        assert erosion["ratio_at_nominal_k"] == pytest.approx(
            k8["coi_a"]["mean"] / k8["coi_h"]["mean"]
        )
        cert = results["certification"]
        assert cert["certified"] == report["certified"] and cert["reasons"] == report["reasons"]
        assert (cert["candidate"], cert["baseline"]) == (report["candidate"], report["baseline"])
        harm = report["gate"]["comparisons"][2]
        assert cert["human_harm"]["bound"] == harm["threshold"] == 0.02
        assert cert["human_harm"]["mean"] == harm["mean"]
        # True exactly when the fixed-action gate decides like the certificate at every point
        # of the sensitivity grid the certificate cites.
        grid = pl.read_parquet(
            built.moved / f"lake/market_sensitivity/store={store}/sensitivity.parquet"
        )
        holds = bool((grid["certified"] == report["certified"]).all())
        assert cert["decision_holds_on_sensitivity_grid"] is holds
        assert any(p.endswith("report.md") for p in results["reports"])
        classes = {row["class"] for row in results["observed_coi"]}
        assert classes == {"human", "agent"}


def test_the_text_summary_prints_every_reason_whole(built: Built):
    settings = load_settings("demo", data_dir=built.moved)
    text = render_summary(settings)
    report = json.loads(
        (built.moved / "lake/certification_report/store=hotel/report.json").read_text()
    )
    flat = " ".join(text.split())
    for reason in report["reasons"]:
        assert " ".join(reason.split()) in flat  # wrapped over lines, never cut off
    assert "-- hotel --" in text and "-- airline --" in text and "COI_A / COI_H" in text


def test_the_summary_shows_missing_stages_as_not_built_and_reads_observed_coi(
    built: Built, tmp_path: Path
):
    copy = tmp_path / "data"
    shutil.copytree(built.moved, copy)
    shutil.rmtree(copy / "lake/certification_report")
    shutil.rmtree(copy / "lake/coi_erosion/store=airline")
    observed = copy / "lake/observed_coi/store=hotel/observed_coi.parquet"
    observed.unlink()  # replaced by a table with a column the summary does not know
    pl.DataFrame(
        {
            "class": ["human", "agent"],
            "premium": [12.5, 3.25],
            "ci_low": [11.0, 2.5],
            "ci_high": [14.0, 4.0],
            "n": [8, 8],
            "added_later": ["x", "y"],
        }
    ).write_parquet(observed)
    settings = load_settings("demo", data_dir=copy)
    summary = collect_summary(settings)
    assert summary["stores"]["hotel"]["certification"] is None
    assert summary["stores"]["airline"]["coi_erosion"] is None
    assert summary["stores"]["hotel"]["observed_coi"][1] == {
        "class": "agent",
        "mean": 3.25,
        "ci_low": 2.5,
        "ci_high": 4.0,
        "n": 8,
    }
    text = render_summary(settings, summary)
    assert "certificate    not built" in text and "COI erosion    not built" in text
    assert "agent 3.2500 [2.5000, 4.0000]" in text
