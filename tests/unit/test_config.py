"""Settings: profiles, file overrides and validation."""

import dataclasses
import json
import typing
from pathlib import Path

import pytest

from phantom_assets.config import EvaluationConfig, Settings, bounds_of, load_settings


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


def test_profiles_hold_out_at_least_the_seeds_the_gate_is_calibrated_for():
    from phantom_assets.audit.studentized import MIN_CALIBRATED_N

    study, demo = load_settings("study").evaluation, load_settings("demo").evaluation
    assert study.episodes == study.test_episodes == 32
    assert demo.test_episodes >= MIN_CALIBRATED_N <= study.test_episodes


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[fingerprint]\nkappa = "half"\n', "[fingerprint] kappa: expected a number, got 'half'"),
        ("[fingerprint]\nkappa = true\n", "[fingerprint] kappa: expected a number, got True"),
        ("[fingerprint]\nfolds = 2.5\n", "[fingerprint] folds: expected an integer, got 2.5"),
        ("[fingerprint]\ncalibration = 1\n", "[fingerprint] calibration: expected a string, got 1"),
        ("[market]\nbase_levels = 1.0\n", "[market] base_levels: expected a list, got 1.0"),
        ('[market]\nbase_levels = [1.0, "x"]\n', "base_levels: item 1: expected a number, got 'x'"),
        ("[agents]\nk_grid = [2, 8.5]\n", "item 1: expected an integer, got 8.5"),
        ("[training]\ntiers = [1]\n", "[training] tiers: item 0: expected a string, got 1"),
        ("accept_legacy_store = 1\n", "accept_legacy_store: expected true or false, got 1"),
    ],
)
def test_load_settings_names_the_file_section_key_and_expected_type_of_a_bad_value(
    tmp_path: Path, toml: str, message: str
):
    config = tmp_path / "phantom.toml"
    config.write_text(toml)
    with pytest.raises(ValueError) as raised:
        load_settings(config_file=config)
    assert str(config) in str(raised.value)
    assert message in str(raised.value)


def test_load_settings_accepts_an_integer_where_a_number_is_expected(tmp_path: Path):
    config = tmp_path / "phantom.toml"
    config.write_text("[fingerprint]\nkappa = 1\n[market]\nbase_levels = [1, 2]\n")
    settings = load_settings(config_file=config)
    assert settings.fingerprint.kappa == 1
    assert settings.market.base_levels == (1, 2)


def test_load_settings_names_the_file_of_unparsable_toml(tmp_path: Path):
    config = tmp_path / "phantom.toml"
    config.write_text("[fingerprint\n")
    with pytest.raises(ValueError, match=r"phantom\.toml"):
        load_settings(config_file=config)


@pytest.mark.parametrize(
    ("section", "key", "value", "bound"),
    [
        ("fingerprint", "kappa", -0.5, ">= 0"),
        ("fingerprint", "folds", -3, ">= 2"),
        ("market", "detector_fpr", -0.1, "> 0 and < 1"),
        ("market", "detector_fpr", 1.0, "> 0 and < 1"),
        ("agents", "k_grid", [2, 0], ">= 1"),
        ("evaluation", "max_human_harm", -0.02, ">= 0"),
    ],
)
def test_an_out_of_range_setting_fails_at_load_naming_the_key_and_its_bound(
    tmp_path: Path, section: str, key: str, value: object, bound: str
):
    config = tmp_path / "phantom.toml"
    config.write_text(f"[{section}]\n{key} = {json.dumps(value)}\n")
    with pytest.raises(ValueError, match=rf"\[{section}\] {key}: .* must be {bound}"):
        load_settings(config_file=config)


def test_every_default_lies_in_its_settings_range():
    """The shipped defaults pass the range check every loaded setting must pass."""
    for cls in typing.get_type_hints(Settings).values():
        if not dataclasses.is_dataclass(cls):
            continue
        for spec in dataclasses.fields(cls):
            default = spec.default
            values = default if isinstance(default, tuple) else (default,)
            numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            assert all(bounds_of(cls, spec.name).admits(v) for v in numbers), (cls, spec.name)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[agents]\nalpha_grid = [0.5]\n", r"alpha_grid needs at least two values"),
        ('[training]\ntiers = ["static", "tuned", "defended"]\n', r"ablation_tier 'dqn' must be"),
        ('[training]\ntiers = ["static", "tuned", "qtabel"]\n', r"tiers \['qtabel'\] are unknown"),
    ],
)
def test_a_config_the_pipeline_could_not_finish_fails_at_load_naming_the_setting(
    tmp_path: Path, toml: str, message: str
):
    """A one-point α grid (the benchmark regresses on α) or an ablation tier that is not trained
    used to load fine and fail at the end of a run; they fail before anything runs."""
    path = tmp_path / "phantom.toml"
    path.write_text(toml)
    with pytest.raises(ValueError, match=message) as raised:
        load_settings("demo", config_file=path)
    assert "phantom.toml" in str(raised.value)
