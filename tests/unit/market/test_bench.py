"""The env benchmark."""

from __future__ import annotations

from phantom_assets.market import bench_env


def test_bench_env_reports_both_throughputs_and_the_configuration():
    result = bench_env(steps=60, seed=0)
    assert result["nominal_steps_per_s"] > 0 and result["robust_steps_per_s"] > 0
    assert result["config"]["n_products"] == 10
    assert result["config"]["sessions_per_step"] == 100
    assert result["config"]["n_actions"] == 9
    assert result["config"]["robust_candidates"] == 5
