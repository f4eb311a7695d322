"""The fingerprint benchmark runs end to end on a small corpus."""

from __future__ import annotations

from phantom_assets.fingerprint import bench_fingerprint


def test_bench_fingerprint_reports_throughput_and_config() -> None:
    result = bench_fingerprint(n_events=5_000, seed=3)
    assert set(result) == {
        "fit_events_per_s",
        "score_sessions_per_s",
        "n_events",
        "n_sessions",
        "config",
    }
    assert result["fit_events_per_s"] > 0 and result["score_sessions_per_s"] > 0
    assert 4_000 < result["n_events"] < 6_000
    assert result["config"]["seed"] == 3
