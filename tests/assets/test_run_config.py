"""What the launchpad shows: every setting and run-time knob as a typed, described field with its
real default (generated from the settings dataclasses, never a JSON string), and every check of
the code location with a description."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from orchestration.definitions import build_definitions
from phantom_assets.assets.config_types import config_class, field_descriptions
from phantom_assets.assets.defense import RUN_TIME_HYPERPARAMETERS, TrainingOverrides
from phantom_assets.assets.publish import PublishConfig
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings, load_settings
from phantom_assets.policies import TrainingParams

SCALAR_TYPES = {bool: "Bool", int: "Int", float: "Float", str: "String", Path: "String"}


def _fields(config_type: Any) -> dict[str, Any]:
    return dict(config_type.fields)


def _type_key(field: Any) -> str:
    """`Float`, `Array.Int`, ... of a config field (Noneable: it has a default; `IntSourceType`
    in a resource: an int or an environment variable)."""
    config_type = getattr(field.config_type, "inner_type", field.config_type)
    return config_type.key.replace("SourceType", "")


def _expected_type(annotation: Any) -> str:
    if typing.get_origin(annotation) is tuple:
        return f"Array.{SCALAR_TYPES[typing.get_args(annotation)[0]]}"
    return SCALAR_TYPES[annotation]


def _walk(cls: type, config_type: Any, path: str = "") -> list[tuple[str, Any, Any, Any]]:
    """(dotted name, dataclass annotation, dataclass default, config field) of every leaf."""
    hints, fields, defaults = typing.get_type_hints(cls), _fields(config_type), cls()
    leaves = []
    for field in dataclasses.fields(cls):
        name, annotation = f"{path}{field.name}", hints[field.name]
        assert field.name in fields, f"{name} is not a config field"
        if dataclasses.is_dataclass(annotation):
            leaves += _walk(annotation, fields[field.name].config_type, f"{name}.")
        else:
            leaves.append((name, annotation, getattr(defaults, field.name), fields[field.name]))
    return leaves


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def test_every_setting_is_a_typed_described_config_field_with_its_dataclass_default():
    schema = StorageResource(data_dir="data").get_resource_definition().config_schema.config_type
    leaves = _walk(Settings, schema)
    assert len(leaves) >= 60  # every section's every field, not a JSON string
    for name, annotation, default, field in leaves:
        assert _type_key(field) == _expected_type(annotation), name
        assert field.description and len(field.description) > 10, name
        expected = str(default) if isinstance(default, Path) else _plain(default)
        assert field.default_value == expected, name


def test_the_storage_resource_holds_exactly_the_settings_it_is_given(tmp_path: Path):
    for profile in ("demo", "study"):
        settings = load_settings(profile, tmp_path)
        storage = StorageResource.of(settings)
        assert storage.settings() == settings
        schema = storage.get_resource_definition().config_schema.config_type
        alphas = _fields(_fields(schema)["agents"].config_type)["alpha_grid"]
        assert alphas.default_value == list(settings.agents.alpha_grid)  # the profile's, shown


def test_a_launchpad_edit_changes_the_settings_a_run_computes_with(tmp_path: Path):
    seen: list[Settings] = []

    @dg.asset
    def reads_kappa(storage: StorageResource) -> None:
        seen.append(storage.settings())

    storage = StorageResource.of(load_settings("demo", tmp_path))
    edited = {"fingerprint": {"kappa": 2.0}, "agents": {"k_grid": [1, 4]}}
    run_config = {"resources": {"storage": {"config": edited}}}
    assert dg.materialize([reads_kappa], resources={"storage": storage}, run_config=run_config)
    (settings,) = seen
    assert settings.fingerprint.kappa == 2.0 and settings.agents.k_grid == (1, 4)
    assert settings.fingerprint.folds == 5 and settings.data_dir == tmp_path.resolve()


def test_a_setting_without_a_description_is_refused_naming_it():
    @dataclasses.dataclass(frozen=True)
    class Section:
        """A section.

        Attributes:
            kappa, folds: described together.
        """

        kappa: float = 0.5
        folds: int = 5
        seed: int = 1

    assert field_descriptions(Section, ["kappa", "folds"]) == {
        "kappa": "described together.",
        "folds": "described together.",
    }
    with pytest.raises(ValueError, match=r"\['seed'\]"):
        config_class(Section)


def test_trained_policies_config_shows_the_real_hyperparameter_defaults_with_descriptions():
    fields = _fields(TrainingOverrides.to_config_schema().config_type)
    defaults = TrainingParams()
    assert set(fields) == set(RUN_TIME_HYPERPARAMETERS)
    for name, field in fields.items():
        assert field.default_value == _plain(getattr(defaults, name)), name  # was null
        assert field.description, name
    assert TrainingOverrides().params(load_settings().training) == TrainingParams()


def test_publish_config_fields_are_described():
    fields = _fields(PublishConfig.to_config_schema().config_type)
    assert all(field.description for field in fields.values()), sorted(fields)


def test_every_check_of_the_code_location_has_a_description(tmp_path: Path):
    graph = build_definitions(load_settings("demo", tmp_path)).resolve_asset_graph()
    specs = [graph.get_check_spec(key) for key in graph.asset_check_keys]
    assert len(specs) > 100  # the Python checks and every dbt data test
    undescribed = sorted(str(spec.key) for spec in specs if not spec.description)
    assert undescribed == []
    (store_check,) = (s for s in specs if s.name.startswith("accepted_values_sessions_store"))
    assert store_check.description == (
        "`store` is one of the values of the dbt var `phantom_stores`."
    )
