"""`phantom bench calibration` and the study registry: JSON lines, exit code, bad names."""

from __future__ import annotations

import json

import pytest

from orchestration.cli import main
from phantom_assets.calibration import CalibrationResult, run_studies


def test_bench_calibration_prints_one_json_line_per_procedure_and_layout(capsys):
    code = main(["bench", "calibration", "--studies", "gate", "--reps", "20", "--seed", "3"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert len(lines) >= 8
    assert {line["procedure"] for line in lines} == {"certification_gate"}
    for line in lines:
        assert set(line) == {"procedure", "layout", "level", "rejection_rate", "n_reps", "holds"}
        assert line["level"] == 0.025 and line["n_reps"] == 20


def test_run_studies_is_reproducible_for_a_seed():
    first = [r.to_dict() for r in run_studies(10, seed=5, modules=["gate"])]
    assert first == [r.to_dict() for r in run_studies(10, seed=5, modules=["gate"])]


def test_run_studies_rejects_unknown_modules_and_reps():
    with pytest.raises(ValueError, match="unknown calibration studies"):
        list(run_studies(10, seed=0, modules=["nope"]))
    with pytest.raises(ValueError, match="n_reps"):
        list(run_studies(0, seed=0))


@pytest.mark.parametrize(
    ("result", "holds"),
    [
        (CalibrationResult("t", "l", 0.05, 500, rejection_rate=0.05 + 3 * 0.00974), True),
        (CalibrationResult("t", "l", 0.05, 500, rejection_rate=0.08), False),
        (CalibrationResult("i", "l", 0.95, 500, coverage=0.95 - 3 * 0.00974), True),
        (CalibrationResult("i", "l", 0.95, 500, coverage=0.91), False),
    ],
)
def test_calibration_result_holds_within_three_binomial_standard_errors(result, holds):
    assert result.holds is holds


def test_calibration_result_needs_exactly_one_of_rate_and_coverage():
    with pytest.raises(ValueError, match="exactly one"):
        CalibrationResult("t", "l", 0.05, 10)


def test_the_mean_test_study_is_registered_and_reproducible_for_a_seed():
    first = [r.to_dict() for r in run_studies(5, seed=1, modules=["mean_test"])]
    assert first == [r.to_dict() for r in run_studies(5, seed=1, modules=["mean_test"])]
    assert {r["procedure"] for r in first} == {"mean_test_difference", "mean_test_harm"}
