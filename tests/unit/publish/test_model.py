"""The detectors staged as a Hub model repo: each store's bundle, the scorer, a card; written
atomically, a broken bundle named, never half a folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from phantom_assets.detector import DetectorBundle
from phantom_assets.detector import runtime as runtime_module
from phantom_assets.publish import detector_repo_id, publish, stage_detector_model
from tests.unit.detector.test_runtime import LOG_RATIO, STATES


def _bundle(store: str, threshold: float) -> DetectorBundle:
    return DetectorBundle(
        states=STATES,
        log_ratio=LOG_RATIO,
        f_intercept=0.0,
        f_slope=1.0,
        threshold=threshold,
        false_positive_rate=0.02,
        quote_event="view",
        lock_event="cart",
        provenance={
            "store": store,
            "fitted_on_sessions": {"human": 780, "agent": 338},
            "out_of_fold_human_flag_rate": 0.019,
            "out_of_fold_agent_recall_at_quote": 0.849,
        },
    )


def _write(folder: Path, bundle: DetectorBundle) -> Path:
    folder.mkdir(parents=True)
    path = folder / "detector.json"
    path.write_text(json.dumps(bundle.to_dict()))
    return path


def test_the_model_folder_holds_each_bundle_the_scorer_and_a_card(tmp_path: Path):
    bundles = {
        "hotel": _write(tmp_path / "in" / "hotel", _bundle("hotel", 0.6)),
        "airline": _write(tmp_path / "in" / "airline", _bundle("airline", 0.7)),
    }
    staged = stage_detector_model(bundles, tmp_path / "out", "abc123")
    assert staged.files == (
        "README.md",
        "airline/detector.json",
        "hotel/detector.json",
        "runtime.py",
    )
    assert staged.stores == ("airline", "hotel")
    assert DetectorBundle.load(staged.path / "hotel/detector.json").threshold == 0.6
    assert (staged.path / "runtime.py").read_text() == Path(runtime_module.__file__).read_text()
    card = ModelCard((staged.path / "README.md").read_text())
    assert card.data.license == "cc-by-4.0" and "llm-agents" in card.data.tags
    assert "| hotel | 780 / 338 | ? | 0.6000 | 2.0% | 1.9% | 84.9% |" in card.text
    assert "abc123" in card.text and "## Limits" in card.text


def test_a_broken_bundle_is_named_and_leaves_the_previous_folder_whole(tmp_path: Path):
    good = {"hotel": _write(tmp_path / "in" / "hotel", _bundle("hotel", 0.6))}
    staged = stage_detector_model(good, tmp_path / "out", "abc")
    before = {p: p.read_bytes() for p in staged.path.rglob("*") if p.is_file()}
    broken = _write(tmp_path / "in" / "airline", _bundle("airline", 0.7))
    broken.write_text("{}")
    with pytest.raises(ValueError, match=str(broken)):
        stage_detector_model(good | {"airline": broken}, tmp_path / "out", "abc")
    assert {p: p.read_bytes() for p in staged.path.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]  # no staging left
    with pytest.raises(ValueError, match="materialize detector_bundle"):
        stage_detector_model({}, tmp_path / "out", "abc")


def test_the_model_repo_sits_next_to_the_dataset_repo_and_the_repo_type_is_checked(
    tmp_path: Path,
):
    assert detector_repo_id("lab/sessions") == "lab/sessions-detector"
    assert detector_repo_id(None) is None
    staged = stage_detector_model(
        {"hotel": _write(tmp_path / "in" / "hotel", _bundle("hotel", 0.6))}, tmp_path / "o", "a"
    )
    with pytest.raises(ValueError, match="repo_type must be one of"):
        publish(staged, "lab/x", None, repo_type="space")
    plan = publish(staged, None, None, repo_type="model")  # no token: a dry run
    assert plan.dry_run and sorted(plan.paths("add")) == list(staged.files)
