"""The market compiler: store kernels + market settings -> MarketSpec, and the demo market."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from phantom_assets.config import MarketConfig
from phantom_assets.market import (
    MarketSpec,
    anchor_prices,
    compile_market_spec,
    demo_kernels,
    demo_spec,
    price_levels,
)

SMALL = MarketConfig(n_products=4, sessions_per_step=30, n_actions=5, episode_steps=7,
                     ambiguity_radius_w1=2.5, robust_candidates=3, chain_bank_size=300)  # fmt: skip
REWARD_FIELDS = ("lam", "eta_ux", "cost_floor", "supra_penalty")


@pytest.fixture
def kernels() -> tuple[np.ndarray, np.ndarray]:
    return demo_kernels(3)


def test_compile_market_spec_takes_the_store_kernels_as_given(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    np.testing.assert_array_equal(spec.kernel_human, kernels[0])
    np.testing.assert_array_equal(spec.kernel_agent, kernels[1])


@pytest.mark.parametrize(
    ("spec_field", "config_field"),
    [("sessions_per_step", "sessions_per_step"), ("episode_steps", "episode_steps"),
     ("ambiguity_radius_w1", "ambiguity_radius_w1"), ("robust_candidates", "robust_candidates"),
     ("chain_bank_size", "chain_bank_size"), ("n_products", "n_products"),
     ("n_actions", "n_actions")],
)  # fmt: skip
def test_compile_market_spec_follows_the_market_settings(kernels, spec_field, config_field):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    assert getattr(spec, spec_field) == getattr(SMALL, config_field)


def test_price_levels_span_the_configured_scales_evenly():
    levels = np.array(price_levels(SMALL))
    assert levels[0] == pytest.approx(SMALL.price_scale_low)
    assert levels[-1] == pytest.approx(SMALL.price_scale_high)
    np.testing.assert_allclose(np.diff(levels), np.diff(levels)[0])


def test_anchor_prices_depend_only_on_the_anchor_seed():
    np.testing.assert_array_equal(anchor_prices(6, 1), anchor_prices(6, 1))
    assert not np.array_equal(anchor_prices(6, 0), anchor_prices(6, 1))
    assert np.all((anchor_prices(50, 2) >= 90.0) & (anchor_prices(50, 2) <= 110.0))


def test_compiled_reward_coefficients_are_the_market_spec_defaults(kernels):
    # One definition: the compiler must not restate the coefficients.
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    defaults = {f.name: f.default for f in dataclasses.fields(MarketSpec)}
    assert {name: getattr(spec, name) for name in REWARD_FIELDS} == {
        name: defaults[name] for name in REWARD_FIELDS
    }


def test_info_value_defaults_to_the_forgone_premium_of_a_full_step(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    assert spec.info_value == pytest.approx(
        SMALL.sessions_per_step * (spec.anchor.mean() - spec.p_low)
    )


def test_an_explicit_info_value_survives_a_save_and_load(kernels, tmp_path):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, info_value=7.0)
    spec.save(tmp_path)
    assert MarketSpec.load(tmp_path).info_value == 7.0


def test_compile_market_spec_passes_the_detector_calibration_through(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, f_intercept=-0.4, f_slope=3.0)
    assert (spec.f_intercept, spec.f_slope) == (-0.4, 3.0)


def test_demo_spec_agents_value_less_than_humans():
    spec = demo_spec(0)
    assert spec.mu_agent < spec.mu_human
    assert spec.kernel_human.shape == spec.kernel_agent.shape == (19, 19)
