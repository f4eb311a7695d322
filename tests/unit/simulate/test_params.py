"""SimulationParams validation, params_from and the behaviour blend."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from phantom_assets.config import Settings, SimulationConfig
from phantom_assets.simulate import AGENT, HUMAN, SimulationParams, blend, params_from


@pytest.mark.parametrize(
    "changes",
    [
        {"seed": -1},
        {"humans_per_store": -2},
        {"agents_per_store": 1.5},
        {"humans_per_store": 0, "agents_per_store": 0},
        {"separability": 1.2},
        {"separability": -0.1},
        {"stores": ("shop",)},
        {"stores": ()},
        {"stores": ("hotel", "hotel")},
        {"start": datetime(2025, 6, 2)},
        {"start": datetime(2025, 6, 2, tzinfo=timezone(timedelta(hours=2)))},
    ],
)
def test_simulation_params_reject_bad_values_with_value_error(changes: dict) -> None:
    base = {"seed": 1, "humans_per_store": 2, "agents_per_store": 1}
    with pytest.raises(ValueError):
        SimulationParams(**{**base, **changes})


def test_params_from_reads_settings_and_simulation_config_alike() -> None:
    settings = Settings()
    from_settings = params_from(settings)
    from_config = params_from(SimulationConfig())
    assert from_settings == from_config
    assert from_settings.seed == settings.simulation.seed
    assert from_settings.humans_per_store == settings.simulation.humans_per_store
    assert params_from(from_settings) is from_settings


def test_params_from_rejects_objects_without_simulation_settings() -> None:
    with pytest.raises(ValueError, match="carries no simulation settings"):
        params_from(object())


def test_blend_is_human_at_zero_agent_at_one_and_between_in_the_middle() -> None:
    assert blend(0.0) == HUMAN
    middle = blend(0.5)
    for field in dataclasses.fields(HUMAN):
        h, a = getattr(HUMAN, field.name), getattr(AGENT, field.name)
        assert getattr(blend(1.0), field.name) == pytest.approx(a)
        assert min(h, a) - 1e-12 <= getattr(middle, field.name) <= max(h, a) + 1e-12


@pytest.mark.parametrize("bad", [-0.01, 1.01])
def test_blend_rejects_separability_outside_unit_interval(bad: float) -> None:
    with pytest.raises(ValueError, match="separability"):
        blend(bad)


def test_phantom_simulate_uses_every_simulation_setting_and_its_command_line_overrides():
    # Why: the command once built its parameters from four fields, so the price test, the slope
    # and the planted worlds of `[simulation]` were silently the demo world's.
    import argparse

    from orchestration.cli import _simulate_params

    config = SimulationConfig(
        seed=5, price_test_arms=(1.0,), engagement_slope=0.0, agents_search_before_buying=True
    )
    args = argparse.Namespace(seed=9, humans=None, agents=None, separability=None)
    params = _simulate_params(Settings(simulation=config), args)
    assert (params.seed, params.humans_per_store) == (9, config.humans_per_store)
    assert params.demand.arms == (1.0,) and params.demand.beta == 0.0
    assert params.agents_search_before_buying
