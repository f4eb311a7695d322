"""`phantom bench scale-out` refuses a slice outside the settings' grid before it starts anything
(the measurement itself runs on a real deployment in tests/integration/test_scale_out.py)."""

import pytest

from orchestration.bench import bench_scale_out
from orchestration.cli import main
from phantom_assets.config import Settings, load_settings


def test_refuses_a_policy_the_profile_does_not_configure(settings: Settings):
    # a030 exists only in the study grid: the demo trains at α = 0.5 alone
    with pytest.raises(ValueError, match=r"\['a2c-baseline-a030'\] are not in the demo profile"):
        bench_scale_out(settings, None, ["static-a050", "a2c-baseline-a030"], "hotel", 2)
    study = load_settings("study")
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        bench_scale_out(study, None, ["a2c-baseline-a030"], "hotel", 0)


def test_refuses_an_unknown_store(settings: Settings):
    with pytest.raises(ValueError, match="store 'shoes' is not one of"):
        bench_scale_out(settings, None, ["static-a050"], "shoes", 2)


def test_cli_names_the_unknown_policy_and_exits_1(monkeypatch, caplog):
    monkeypatch.delenv("PHANTOM_CONFIG", raising=False)
    monkeypatch.setenv("PHANTOM_PROFILE", "demo")
    assert main(["bench", "scale-out", "--policies", "ppo-robust-a070"]) == 1
    assert "['ppo-robust-a070'] are not in the demo profile's grid" in caplog.text
