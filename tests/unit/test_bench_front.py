"""`phantom bench front` refuses what it cannot measure before it simulates anything."""

from pathlib import Path

import pytest

from orchestration.bench import bench_front
from phantom_assets.config import Settings


def test_bench_front_refuses_a_scale_below_one(settings: Settings, tmp_path: Path):
    with pytest.raises(ValueError, match="scale must be >= 1, got 0"):
        bench_front(settings, 0, 1, tmp_path / "bench")
    assert not (tmp_path / "bench").exists()


def test_bench_front_refuses_a_root_that_holds_files(settings: Settings, tmp_path: Path):
    (tmp_path / "kept.txt").write_text("a user's file")
    with pytest.raises(ValueError, match="not empty: the benchmark needs a fresh data root"):
        bench_front(settings, 1, 1, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]
