"""Settings: profiles, file overrides and validation."""

from pathlib import Path

import pytest

from phantom_assets.config import EvaluationConfig, load_settings


def test_load_settings_demo_is_the_default_profile():
    settings = load_settings()
    assert settings.profile == "demo"
    assert settings.warehouse_path.name == "warehouse.duckdb"


def test_load_settings_study_profile_uses_the_research_alpha_grid():
    study = load_settings("study")
    assert study.agents.alpha_grid == tuple(round(0.1 * i, 1) for i in range(11))
    assert len(study.training.seeds) > 1


def test_load_settings_rejects_an_unknown_profile():
    with pytest.raises(ValueError, match="unknown profile 'prod'"):
        load_settings("prod")


def test_load_settings_applies_a_toml_file_and_names_unknown_keys(tmp_path: Path):
    good = tmp_path / "phantom.toml"
    good.write_text("[fingerprint]\nkappa = 0.0\n[agents]\nalpha_grid = [0.0, 1.0]\n")
    settings = load_settings(config_file=good)
    assert settings.fingerprint.kappa == 0.0
    assert settings.agents.alpha_grid == (0.0, 1.0)
    bad = tmp_path / "bad.toml"
    bad.write_text("[fingerprint]\nkapa = 0.0\n")
    with pytest.raises(ValueError, match="kapa"):
        load_settings(config_file=bad)


def test_config_hash_ignores_the_storage_root_but_not_the_semantics(tmp_path: Path):
    a = load_settings(data_dir=tmp_path / "a")
    b = load_settings(data_dir=tmp_path / "b")
    assert a.config_hash == b.config_hash
    assert load_settings("study").config_hash != a.config_hash
    assert a.lake_dir == tmp_path / "a" / "lake"


def test_settings_from_dict_inverts_as_dict(tmp_path: Path):
    from phantom_assets.config import settings_from_dict

    study = load_settings("study", data_dir=tmp_path)
    assert settings_from_dict(study.as_dict()) == study


def test_evaluation_config_keeps_selection_and_held_out_test_seeds_disjoint():
    cfg = EvaluationConfig(episodes=8, seed=17, test_episodes=8, test_seed=100_017)
    assert cfg.selection_seeds == tuple(range(17, 25))
    assert cfg.test_seeds == tuple(range(100_017, 100_025))
    with pytest.raises(ValueError, match="overlap"):
        EvaluationConfig(episodes=8, seed=17, test_seed=20)
    with pytest.raises(ValueError, match=">= 1"):
        EvaluationConfig(test_episodes=0)


def test_study_profile_holds_out_as_many_test_seeds_as_selection_seeds():
    study = load_settings("study").evaluation
    assert study.episodes == study.test_episodes == 30
