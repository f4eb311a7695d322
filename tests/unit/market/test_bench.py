"""The env benchmark."""

from __future__ import annotations

from phantom_assets.market import bench_env


def test_bench_env_reports_both_throughputs_and_the_configuration():
    result = bench_env(steps=60, seed=0)
    assert result["nominal_steps_per_s"] > 0 and result["robust_steps_per_s"] > 0
    config = result["config"]
    assert (config["n_products"], config["shoppers_per_step"], config["n_actions"]) == (10, 100, 45)
    assert config["robust_candidates"] == 9
    assert config["robust_agent_sessions"] == [2, 8, 16]
