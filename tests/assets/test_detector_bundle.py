"""`detector_bundle` of the session's built pipeline: a self-contained file (detector v2: the
kernel statistic and the session's timing) that scores every labelled session of its store
exactly as the pipeline does, carries the market's τ, and serves `phantom score` and
`phantom bench detector` from the data root."""

import json
import subprocess

import dagster as dg
import numpy as np
import polars as pl
import pytest

from phantom_assets.assets.detector import PARITY_CHECK
from phantom_assets.constants import ACTORS, STORES
from phantom_assets.detector import (
    BUNDLE_FILE,
    DetectorBundle,
    bundle_quote_scores,
    pipeline_quote_scores,
)
from phantom_assets.detector.classifier import classifiers_from_dict
from phantom_assets.fingerprint import load_kernel_set, load_score_calibration
from phantom_assets.lake import CLASSIFIER_FILE
from phantom_assets.market import MarketSpec
from tests.built_pipeline import PHANTOM, BuiltPipeline
from tests.pipeline_helpers import REPO_ROOT

PARITY = 1e-9


def _sessions(built: BuiltPipeline, store: str) -> pl.DataFrame:
    lake = built.settings.lake
    return pl.concat(
        pl.read_parquet(
            lake.labeled_sessions(store, actor),
            columns=["session_id", "trajectory", "event_offsets_ms"],
        )
        for actor in ACTORS
    )


@pytest.mark.parametrize("store", STORES)
def test_the_bundle_scores_every_session_as_the_pipeline_does_and_carries_its_tau(
    built_pipeline: BuiltPipeline, store: str
):
    settings = built_pipeline.settings
    lake = settings.lake
    bundle = DetectorBundle.load(lake.detector_dir(store) / BUNDLE_FILE)
    human, agent = (load_kernel_set(lake, store, actor).full.probs for actor in ACTORS)
    f_coef = load_score_calibration(lake, store).linear_coef
    sessions = _sessions(built_pipeline, store)
    trajectories, times = sessions["trajectory"], sessions["event_offsets_ms"]
    classifier = classifiers_from_dict(
        json.loads((lake.quote_detector_dir(store) / CLASSIFIER_FILE).read_text())
    )[0]
    spec = MarketSpec.load(lake.market_dir(store), settings.agents)
    assert spec.detector == bundle.provenance["detector"] == "v2" and bundle.needs_time
    expected = pipeline_quote_scores(trajectories, times, human, agent, f_coef, classifier)
    scored = bundle_quote_scores(bundle, trajectories, times)
    np.testing.assert_allclose(scored, expected, atol=PARITY)
    # It is the classifier's score, not the kernel-only f.
    kernel_only = pipeline_quote_scores(trajectories, times, human, agent, f_coef)
    assert np.abs(scored - kernel_only).max() > 0.01
    assert bundle.threshold == spec.detector_threshold
    assert bundle.false_positive_rate == settings.market.detector_fpr
    assert bundle.provenance["store"] == store
    # τ is the human score quantile of the configured FPR: out of fold, it flags at most it.
    assert bundle.provenance["out_of_fold_human_flag_rate"] <= settings.market.detector_fpr


def test_the_parity_check_runs_with_every_materialization(built_pipeline: BuiltPipeline):
    evaluations = {}
    with built_pipeline.instance() as instance:
        for run in instance.get_runs():
            for record in instance.all_logs(
                run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
            ):
                evaluation = record.dagster_event.event_specific_data
                if evaluation.check_name == PARITY_CHECK:
                    evaluations[run.tags.get("dagster/partition")] = evaluation
    assert set(evaluations) == set(STORES)
    for evaluation in evaluations.values():
        assert evaluation.passed and evaluation.metadata["max_abs_error"].value <= PARITY
        assert evaluation.metadata["sessions"].value > 0


def test_phantom_score_streams_interleaved_sessions_as_the_python_api_scores_them(
    built_pipeline: BuiltPipeline,
):
    store = STORES[0]
    sessions = _sessions(built_pipeline, store).head(6)
    records = [
        {"session_id": sid, "event": event, "event_id": f"{sid}:{i}", "ts_ms": ts_ms}
        for sid, events, times in sessions.iter_rows()
        for i, (event, ts_ms) in enumerate(zip(events, times, strict=True))
    ]
    records.sort(key=lambda r: int(r["event_id"].rsplit(":", 1)[1]))  # round-robin interleaving
    lines = [json.dumps(r) for r in records]
    lines.insert(3, "{not json")
    run = subprocess.run(
        [PHANTOM, "score", "--store", store],
        cwd=REPO_ROOT,
        input="\n".join(lines) + "\n",
        env=built_pipeline.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "stdin line 4 rejected" in run.stderr, run.stderr[-2000:]
    out = [json.loads(line) for line in run.stdout.splitlines()]
    bundle = DetectorBundle.load(built_pipeline.settings.lake.detector_dir(store) / BUNDLE_FILE)
    expected = [
        {
            "session_id": sid,
            "index": q.index,
            "event_id": f"{sid}:{q.index}",
            "score": q.score,
            "flagged": q.flagged,
        }
        for sid, events, times in sessions.iter_rows()
        for q in bundle.quotes(events, times)
    ]
    assert sorted(out, key=_quote_key) == sorted(expected, key=_quote_key) and out


def _quote_key(row: dict) -> tuple[str, int]:
    return row["session_id"], row["index"]


def test_phantom_bench_detector_times_the_data_roots_bundle(built_pipeline: BuiltPipeline):
    run = built_pipeline.phantom("bench", "detector", "--store", "airline", "--repeats", "1")
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["store"] == "airline" and result["events"] > 0
    assert 0 < result["event_us_p50"] <= result["event_us_p99"] <= result["event_us_max"]
    assert result["sessions"] == _sessions(built_pipeline, "airline").height
