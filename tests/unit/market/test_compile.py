"""The market compiler: store kernels + detector + market settings -> MarketSpec v2."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.config import AgentsConfig, MarketConfig
from phantom_assets.market import anchor_prices, chain_banks, compile_market_spec, demo_kernels
from phantom_assets.market.compile import ENGAGEMENT_SCALE_SHARE, REFERENCE_ENGAGEMENT_SHARE

SMALL = MarketConfig(n_products=4, shoppers_per_step=30, base_levels=(0.9, 1.1),
                     markups=(0.0, 0.4), detector_strengths=(0.0, 1.0), quote_noise=0.1,
                     lam=0.5, episode_steps=7, chain_bank_size=300)  # fmt: skip
AGENTS = AgentsConfig(nominal_k=3, robust_k_set=(1, 5), robust_alpha_candidates=2,
                      ambiguity_radius_w1=2.5)  # fmt: skip


@pytest.fixture
def kernels() -> tuple[np.ndarray, np.ndarray]:
    return demo_kernels(3)


def test_compile_market_spec_takes_the_store_kernels_as_given(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    np.testing.assert_array_equal(spec.kernel_human, kernels[0])
    np.testing.assert_array_equal(spec.kernel_agent, kernels[1])


@pytest.mark.parametrize(
    "field",
    ["shoppers_per_step", "base_levels", "markups", "detector_strengths", "quote_noise",
     "nominal_k", "robust_k_set", "robust_alpha_candidates", "ambiguity_radius_w1",
     "lam", "episode_steps"],
)  # fmt: skip
def test_compile_market_spec_follows_the_market_and_agent_settings(kernels, field):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, agents=AGENTS)
    source = SMALL if hasattr(SMALL, field) else AGENTS
    assert getattr(spec, field) == getattr(source, field)
    assert spec.n_products == SMALL.n_products and spec.banks[0].size == SMALL.chain_bank_size


def test_banks_are_sampled_and_scored_with_the_store_detector(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, f_coef=(-0.4, 3.0))
    assert (spec.f_intercept, spec.f_slope) == (-0.4, 3.0)
    human, _ = chain_banks(*kernels, 300, 0 + 2, (-0.4, 3.0))
    np.testing.assert_array_equal(spec.human_score, human.score)
    other = compile_market_spec(*kernels, SMALL, anchor_seed=0, f_coef=(0.0, 1.0))
    assert not np.array_equal(other.human_score, spec.human_score)


def test_engagement_scales_follow_the_store_human_engagement(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=1)
    mean = spec.human_engagement.mean()
    assert spec.engagement_scale == pytest.approx(ENGAGEMENT_SCALE_SHARE * mean)
    assert spec.reference_engagement == pytest.approx(REFERENCE_ENGAGEMENT_SHARE * mean)


def test_anchor_prices_depend_only_on_the_anchor_seed():
    np.testing.assert_array_equal(anchor_prices(6, 1), anchor_prices(6, 1))
    assert not np.array_equal(anchor_prices(6, 0), anchor_prices(6, 1))
    assert np.all((anchor_prices(50, 2) >= 90.0) & (anchor_prices(50, 2) <= 110.0))


def test_compiling_twice_gives_identical_specs(kernels):
    a, b = (compile_market_spec(*kernels, SMALL, anchor_seed=0) for _ in range(2))
    assert a._scalars() == b._scalars()
    np.testing.assert_array_equal(a.agent_engagement, b.agent_engagement)


def test_both_classes_value_alike_by_default(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    assert (spec.mu_human, spec.sigma_human) == (spec.mu_agent, spec.sigma_agent)
