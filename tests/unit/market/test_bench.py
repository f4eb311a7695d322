"""The env benchmark."""

from __future__ import annotations

import pytest

from phantom_assets.market import bench_env


def test_bench_env_reports_both_throughputs_and_the_configuration():
    result = bench_env(steps=60, seed=0, repeats=3)
    for mode in ("nominal", "robust"):
        runs = result[f"{mode}_steps_per_s_runs"]
        assert len(runs) == 3 and min(runs) > 0
        assert result[f"{mode}_steps_per_s"] == sorted(runs)[1]
        assert result[f"{mode}_steps_per_s_best"] == max(runs)
    config = result["config"]
    assert (config["n_products"], config["shoppers_per_step"], config["n_actions"]) == (10, 100, 45)
    assert config["robust_candidates"] == 9
    assert config["robust_k_set"] == [2, 8, 16]


def test_bench_env_rejects_an_empty_measurement():
    with pytest.raises(ValueError, match="repeats"):
        bench_env(steps=10, repeats=0)
