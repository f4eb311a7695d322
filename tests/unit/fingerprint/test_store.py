"""The fingerprint artifacts in the lake: kernel sets stored with their κ, sessions, calibration."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from phantom_assets.constants import DEFAULT_FOLDS, KERNEL_STATES
from phantom_assets.fingerprint import (
    SESSION_SCHEMA,
    KernelMeta,
    KernelSet,
    fit_class_kernels,
    load_kernel_meta,
    load_kernel_set,
    load_score_calibration,
    read_kernel_meta,
    read_kernel_set,
    read_labeled_sessions,
    score_calibration,
    write_kernel_set,
)
from phantom_assets.fingerprint.calibration import ScoreCalibration, fit_score_calibration
from phantom_assets.lake import (
    CALIBRATION_FILE,
    FOLD_KERNELS_FILE,
    KERNEL_FILE,
    KERNEL_META_FILE,
    Lake,
)


def _assert_same_kernels(read: KernelSet, written: KernelSet) -> None:
    assert read.k == written.k
    for got, want in zip((read.full, *read.folds), (written.full, *written.folds), strict=True):
        np.testing.assert_array_equal(got.counts, want.counts)
        np.testing.assert_array_equal(got.probs, want.probs)
        assert got.kappa == want.kappa
        assert got.states == want.states


@pytest.mark.parametrize("kappa", [0.0, 0.5, 2.0])
def test_a_written_kernel_set_reads_back_identical_with_its_kappa(
    separable_sessions: pl.DataFrame, tmp_path: Path, kappa: float
):
    kernels = fit_class_kernels(separable_sessions, "agent", kappa=kappa, k=DEFAULT_FOLDS)
    paths = write_kernel_set(kernels, tmp_path)
    assert [p.name for p in paths] == [KERNEL_FILE, FOLD_KERNELS_FILE, KERNEL_META_FILE]
    _assert_same_kernels(read_kernel_set(tmp_path), kernels)


def test_kernel_json_records_kappa_folds_and_states(
    separable_sessions: pl.DataFrame, tmp_path: Path
):
    write_kernel_set(fit_class_kernels(separable_sessions, "human", kappa=0.25, k=5), tmp_path)
    payload = json.loads((tmp_path / KERNEL_META_FILE).read_text())
    assert payload == {"kappa": 0.25, "folds": 5, "states": list(KERNEL_STATES)}
    assert read_kernel_meta(tmp_path) == KernelMeta(kappa=0.25, folds=5)


def test_a_kernels_folder_without_kernel_json_names_the_file_and_the_fix(
    separable_sessions: pl.DataFrame, tmp_path: Path
):
    write_kernel_set(fit_class_kernels(separable_sessions, "human"), tmp_path)
    (tmp_path / KERNEL_META_FILE).unlink()  # a lake written before κ was stored
    with pytest.raises(FileNotFoundError, match=r"kernel\.json.*re-materialize transition_kernels"):
        read_kernel_set(tmp_path)


def test_a_fold_count_that_disagrees_with_kernel_json_is_refused(
    separable_sessions: pl.DataFrame, tmp_path: Path
):
    write_kernel_set(fit_class_kernels(separable_sessions, "human", k=5), tmp_path)
    meta = json.loads((tmp_path / KERNEL_META_FILE).read_text())
    (tmp_path / KERNEL_META_FILE).write_text(json.dumps(meta | {"folds": 3}))
    with pytest.raises(ValueError, match="holds 5 folds"):
        read_kernel_set(tmp_path)


def test_kernels_stored_with_other_states_are_refused(
    separable_sessions: pl.DataFrame, tmp_path: Path
):
    write_kernel_set(fit_class_kernels(separable_sessions, "human"), tmp_path)
    meta = json.loads((tmp_path / KERNEL_META_FILE).read_text())
    (tmp_path / KERNEL_META_FILE).write_text(json.dumps(meta | {"states": ["a", "b"]}))
    with pytest.raises(ValueError, match="re-materialize transition_kernels"):
        read_kernel_meta(tmp_path)


def test_a_kernel_set_of_mixed_kappas_has_no_single_record(separable_sessions: pl.DataFrame):
    kernels = fit_class_kernels(separable_sessions, "human", kappa=1.0)
    mixed = KernelSet(full=dataclasses.replace(kernels.full, kappa=2.0), folds=kernels.folds)
    with pytest.raises(ValueError, match="one kappa"):
        KernelMeta.of(mixed)


def test_a_store_s_kernel_meta_requires_both_classes_to_agree(
    separable_sessions: pl.DataFrame, tmp_path: Path
):
    lake = Lake(tmp_path)
    for actor, kappa in (("human", 0.5), ("agent", 0.5)):
        kernels = fit_class_kernels(separable_sessions, actor, kappa=kappa)
        write_kernel_set(kernels, lake.kernels_dir("hotel", actor))
    assert load_kernel_meta(lake, "hotel") == KernelMeta(kappa=0.5, folds=DEFAULT_FOLDS)
    _assert_same_kernels(
        load_kernel_set(lake, "hotel", "agent"),
        fit_class_kernels(separable_sessions, "agent", kappa=0.5),
    )
    write_kernel_set(
        fit_class_kernels(separable_sessions, "agent", kappa=1.0),
        lake.kernels_dir("hotel", "agent"),
    )
    with pytest.raises(ValueError, match="store 'hotel'"):
        load_kernel_meta(lake, "hotel")


def test_read_labeled_sessions_concatenates_both_classes_in_the_scoring_schema(
    separable_sessions: pl.DataFrame, tmp_path: Path
):
    lake = Lake(tmp_path)
    for actor in ("human", "agent"):
        path = lake.labeled_sessions("hotel", actor)
        path.parent.mkdir(parents=True)
        separable_sessions.filter(pl.col("actor") == actor).write_parquet(path)
    frame = read_labeled_sessions(lake, "hotel", "experiment_id")
    assert frame.columns == [*SESSION_SCHEMA, "experiment_id"]
    assert frame.height == separable_sessions.height
    assert frame["actor"].unique(maintain_order=True).to_list() == ["human", "agent"]


def test_score_calibration_fits_on_labeled_rows_and_round_trips_through_the_lake(tmp_path: Path):
    rng = np.random.default_rng(3)
    actor = np.array(["human"] * 50 + ["agent"] * 50 + ["unknown"] * 10)
    gap = rng.normal(np.where(actor == "agent", 1.0, -1.0), 1.0)
    scores = pl.DataFrame({"actor": actor, "gap": gap})
    calibration = score_calibration(scores, "logistic", 1.5)
    labeled = actor != "unknown"
    assert calibration == fit_score_calibration(gap, actor == "agent", labeled, "logistic", 1.5)
    lake = Lake(tmp_path)
    path = lake.scores_dir("hotel") / CALIBRATION_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(calibration.to_dict()))
    assert load_score_calibration(lake, "hotel") == calibration
    assert isinstance(calibration, ScoreCalibration)
