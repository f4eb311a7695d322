"""The market compiler: store kernels + detector + price model + session banks + settings ->
MarketSpec v3, every term with its source."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from phantom_assets.config import AgentsConfig, MarketConfig
from phantom_assets.market import (
    ChainBank,
    MarketSpec,
    PricingMarketEnv,
    anchor_prices,
    chain_banks,
    compile_market_spec,
    demo_kernels,
)
from phantom_assets.market.compile import BANK_STREAM, detector_threshold
from phantom_assets.market.prices import ANCHOR_SCHEMA, PriceModel

SMALL = MarketConfig(
    bank="kernel",
    shoppers_per_step=30,
    base_levels=(0.9, 1.1),
    markup_multiples=(0.0, 1.0, 2.0),
    detector_strengths=(0.0, 1.0),
    declared_quote_noise=0.1,
    declared_products=4,
    lam=0.5,
    episode_steps=7,
    chain_bank_size=300,
)
AGENTS = AgentsConfig(
    nominal_k=3, robust_k_set=(1, 5), robust_alpha_candidates=2, ambiguity_radius_w1=2.5
)


def price_model(markup: float = 0.2, s0: float | None = 4.0, s0_source: str = "fitted"):
    """A store priced from its logs: three products, quoted 10, 30 and 60 times."""
    anchors = pl.DataFrame(
        {
            "product_id": ["R03", "R01", "R02"],
            "anchor": [300.0, 100.0, 1200.0],
            "ci_low": [290.0, 95.0, 1150.0],
            "ci_high": [310.0, 105.0, 1250.0],
            "n_quotes": [10, 30, 60],
            "n_sessions": [9, 25, 40],
            "n_experiments": [8, 20, 30],
            "pooled": [True, False, False],
        },
        schema=ANCHOR_SCHEMA,
    )
    return PriceModel(
        store="hotel",
        source="logs",
        reason="",
        anchors=anchors,
        signal="product_views",
        cv_rmse={"product_views": 0.01},
        markup=markup,
        markup_ci=(0.15, 0.25),
        markup_source="fitted",
        s0=s0,
        s0_ci=(3.0, 5.0),
        s0_source=s0_source,
        noise_sd=0.01,
        noise_sd_ci=(0.009, 0.011),
        n_quotes=100,
        n_sessions=74,
        n_experiments=58,
    )


@pytest.fixture
def kernels() -> tuple[np.ndarray, np.ndarray]:
    return demo_kernels(3)


def test_compile_market_spec_takes_the_store_kernels_as_given(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    np.testing.assert_array_equal(spec.kernel_human, kernels[0])
    np.testing.assert_array_equal(spec.kernel_agent, kernels[1])


@pytest.mark.parametrize(
    "field",
    [
        "shoppers_per_step",
        "base_levels",
        "detector_strengths",
        "lam",
        "episode_steps",
    ],
)
def test_compile_market_spec_follows_the_market_settings(kernels, field):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, agents=AGENTS)
    assert getattr(spec, field) == getattr(SMALL, field)
    assert spec.banks[0].size == SMALL.chain_bank_size


def test_the_spec_receives_the_agent_settings_and_does_not_save_them(kernels, tmp_path: Path):
    """α and K live in `[agents]` only: the compiled spec holds that very section, its files
    carry none of it, and a spec loaded with other agent settings plays those."""
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, agents=AGENTS)
    assert spec.agents is AGENTS
    spec.save(tmp_path)
    saved = json.loads((tmp_path / "spec.json").read_text())
    assert not {f.name for f in dataclasses.fields(AgentsConfig)} & set(saved)
    other = AgentsConfig(nominal_k=5)
    loaded = MarketSpec.load(tmp_path, other)
    assert loaded.agents is other
    assert PricingMarketEnv(loaded).k == 5 and PricingMarketEnv(spec).k == AGENTS.nominal_k


def test_a_store_without_price_logs_gets_the_declared_terms_and_says_so(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    assert spec.n_products == SMALL.declared_products
    assert spec.product_ids == ("P01", "P02", "P03", "P04")
    assert spec.markups == (0.0, SMALL.declared_markup, 2 * SMALL.declared_markup)
    assert spec.quote_noise == SMALL.declared_quote_noise
    low, high = SMALL.declared_anchor_range
    assert np.all((spec.anchor >= low) & (spec.anchor <= high))
    assert {spec.sources[t] for t in ("anchor", "markup", "quote_noise", "valuation")} == {
        "declared"
    }


def test_a_store_with_price_logs_gets_its_products_anchors_markup_noise_and_scale(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, prices=price_model())
    assert spec.product_ids == ("R01", "R02", "R03")
    np.testing.assert_array_equal(spec.anchor, [100.0, 1200.0, 300.0])
    np.testing.assert_allclose(spec.product_weights, [0.3, 0.6, 0.1])
    assert spec.markups == (0.0, 0.2, 0.4)  # the store's own markup in the middle
    assert spec.markups[spec.action_parts(spec.undefended_action)[1]] == 0.2
    assert spec.quote_noise == pytest.approx(math.sqrt(3) * 0.01)
    assert spec.engagement_scale == 4.0 and spec.signal == "product_views"
    np.testing.assert_allclose(spec.p_low, SMALL.cost_share * spec.anchor)
    np.testing.assert_allclose(spec.p_high, SMALL.price_cap * spec.anchor)
    assert spec.sources["anchor"] == spec.sources["quote_noise"] == "logs"
    assert spec.sources["engagement_scale"] == "fitted" and spec.sources["valuation"] == "declared"


def test_a_store_without_markup_has_one_markup_action(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, prices=price_model(markup=0.0))
    assert spec.markups == (0.0,)


def test_without_a_fitted_scale_s0_and_s_ref_follow_the_store_human_engagement(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=1, prices=price_model(s0=None))
    mean = spec.human_engagement.mean()
    assert spec.engagement_scale == pytest.approx(SMALL.engagement_scale_share * mean)
    assert spec.reference_engagement == pytest.approx(SMALL.reference_engagement_share * mean)
    assert spec.sources["engagement_scale"] == "declared"


def test_banks_are_sampled_and_scored_with_the_store_detector(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0, f_coef=(-0.4, 3.0))
    assert (spec.f_intercept, spec.f_slope) == (-0.4, 3.0)
    human, _ = chain_banks(*kernels, 300, 0 + BANK_STREAM, (-0.4, 3.0))
    np.testing.assert_array_equal(spec.human_score, human.score)
    other = compile_market_spec(*kernels, SMALL, anchor_seed=0, f_coef=(0.0, 1.0))
    assert not np.array_equal(other.human_score, spec.human_score)


def test_the_empirical_bank_is_the_given_sessions_and_is_required(kernels):
    empirical = dataclasses.replace(SMALL, bank="empirical")
    with pytest.raises(ValueError, match="session banks"):
        compile_market_spec(*kernels, empirical, anchor_seed=0)
    human = ChainBank(np.array([1.0, 4.0]), np.array([0.1, 0.2]), np.array([5.0, 6.0]))
    agent = ChainBank(np.array([0.0]), np.array([0.9]), np.array([2.0]))
    spec = compile_market_spec(*kernels, empirical, anchor_seed=0, sessions=(human, agent))
    np.testing.assert_array_equal(spec.human_engagement, human.engagement)
    np.testing.assert_array_equal(spec.agent_score, agent.score)
    assert spec.bank == spec.sources["bank"] == "empirical"


def test_anchor_prices_depend_only_on_the_anchor_seed():
    price_range = (90.0, 110.0)
    np.testing.assert_array_equal(
        anchor_prices(6, 1, price_range), anchor_prices(6, 1, price_range)
    )
    assert not np.array_equal(anchor_prices(6, 0, price_range), anchor_prices(6, 1, price_range))
    drawn = anchor_prices(50, 2, price_range)
    assert np.all((drawn >= 90.0) & (drawn <= 110.0))


def test_compiling_twice_gives_identical_specs(kernels):
    a, b = (compile_market_spec(*kernels, SMALL, anchor_seed=0) for _ in range(2))
    assert a._scalars() == b._scalars()
    np.testing.assert_array_equal(a.agent_engagement, b.agent_engagement)


def test_both_classes_value_alike_by_default(kernels):
    spec = compile_market_spec(*kernels, SMALL, anchor_seed=0)
    assert (spec.mu_human, spec.sigma_human) == (spec.mu_agent, spec.sigma_agent)


@pytest.mark.parametrize("fpr", [0.01, 0.02, 0.05])
def test_tau_is_the_human_score_that_flags_the_configured_share_of_humans(fpr):
    human = np.random.default_rng(5).beta(2.0, 5.0, size=500)  # scores mostly below 0.5
    tau = detector_threshold(human, fpr)
    assert tau in human
    assert np.mean(human > tau) <= fpr < np.mean(human >= tau) + 1 / human.size
