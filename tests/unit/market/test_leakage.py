"""Leakage is priced on the sessions that buy, and valuations are correlated within a session."""

import itertools

import numpy as np
import pytest

from phantom_assets.market import PricingMarketEnv, draw_step, evaluate_step
from phantom_assets.market.outcome import session_valuations


def _outcome(spec, prices, alpha=1.0, seed=4):
    env = PricingMarketEnv(spec, alpha)
    env.reset(seed=1)
    draws = draw_step(np.random.default_rng(seed), spec.sessions_per_step, spec.n_products)
    return evaluate_step(spec, env._banks, prices, np.array([alpha]), draws)


def test_no_purchase_means_no_leakage_even_though_agents_browse(spec):
    out = _outcome(spec, np.full(spec.n_products, 10_000.0))
    assert out.purchases.sum() == 0
    assert out.f_leak[0] == 0.0 and out.f_mean[0] > 0.0


def test_leakage_falls_as_prices_rise_above_agent_valuations(spec):
    leaks = [_outcome(spec, spec.anchor * scale).f_leak[0] for scale in (0.8, 1.0, 1.2, 1.4)]
    assert all(a >= b for a, b in itertools.pairwise(leaks))
    assert leaks[0] > leaks[-1]


def test_the_observed_f_mean_does_not_depend_on_prices(spec):
    low, high = (_outcome(spec, spec.anchor * s) for s in (0.8, 1.2))
    assert low.f_mean[0] == high.f_mean[0]


@pytest.mark.parametrize("rho", [0.0, 0.8])
def test_correlated_valuations_keep_the_per_product_marginal_law(make_spec, rho):
    spec = make_spec(valuation_correlation=rho, sessions_per_step=20_000)
    draws = draw_step(np.random.default_rng(0), spec.sessions_per_step, spec.n_products)
    values = session_valuations(spec.mu_human, spec.sigma_human, rho, draws)
    assert values.shape == (spec.sessions_per_step, spec.n_products)
    assert values.mean() == pytest.approx(spec.mu_human, abs=0.02 * spec.sigma_human)
    assert values.std() == pytest.approx(spec.sigma_human, rel=0.02)
    between_products = np.corrcoef(values[:, 0], values[:, 1])[0, 1]
    assert between_products == pytest.approx(rho**2, abs=0.03)


def test_correlated_valuations_make_demand_respond_to_price(make_spec):
    # Through evaluate_step: with rho = 0.8 one session's products are affordable together or
    # not at all, so raising every price loses more buyers than with independent valuations.
    def buyers(rho: float, scale: float) -> float:
        spec = make_spec(valuation_correlation=rho, sessions_per_step=5_000)
        return _outcome(spec, spec.anchor * scale, alpha=0.0).purchases.sum()

    drop = {rho: 1 - buyers(rho, 1.3) / buyers(rho, 0.9) for rho in (0.0, 0.8)}
    assert drop[0.8] > drop[0.0] + 0.05
