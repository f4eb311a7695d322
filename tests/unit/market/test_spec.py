"""MarketSpec: validation, serialisation, W1 and the α ambiguity interval."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from phantom_assets.config import MarketConfig
from phantom_assets.market import (
    MarketSpec,
    alpha_half_width,
    alpha_interval,
    candidate_alphas,
    valuation_w1,
)


@pytest.mark.parametrize(("mu_h", "mu_a", "sigma"), [(120, 100, 20), (80, 95, 5), (50, 50, 10)])
def test_valuation_w1_equals_the_mean_gap_for_equal_sigmas(mu_h, mu_a, sigma):
    assert valuation_w1(mu_h, sigma, mu_a, sigma) == pytest.approx(abs(mu_h - mu_a), abs=1e-9)


@pytest.mark.parametrize(("mu_h", "s_h", "mu_a", "s_a"), [(120, 25, 100, 20), (100, 30, 100, 10)])
def test_valuation_w1_matches_the_cdf_integral(mu_h, s_h, mu_a, s_a):
    oracle, _ = integrate.quad(
        lambda x: abs(stats.norm.cdf(x, mu_h, s_h) - stats.norm.cdf(x, mu_a, s_a)),
        -500, 700, limit=400,
    )  # fmt: skip
    assert valuation_w1(mu_h, s_h, mu_a, s_a) == pytest.approx(oracle, rel=1e-4)


def test_alpha_half_width_is_the_radius_over_w1(make_spec):
    spec = make_spec(mu_human=120.0, mu_agent=100.0, sigma_human=20.0, sigma_agent=20.0,
                      ambiguity_radius_w1=5.0)  # fmt: skip
    assert alpha_half_width(spec) == pytest.approx(0.25, abs=1e-8)


def test_alpha_half_width_is_clipped_to_one_when_the_laws_coincide(make_spec):
    spec = make_spec(mu_human=100.0, mu_agent=100.0, sigma_human=20.0, sigma_agent=20.0)
    assert alpha_half_width(spec) == 1.0
    assert alpha_interval(spec, 0.3) == (0.0, 1.0)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_candidate_alphas_stay_in_the_unit_interval_around_alpha(alpha, spec):
    candidates = candidate_alphas(spec, alpha)
    low, high = alpha_interval(spec, alpha)
    assert candidates.size == spec.robust_candidates
    assert candidates.min() == pytest.approx(low) and candidates.max() == pytest.approx(high)
    assert 0.0 <= low <= alpha <= high <= 1.0


def test_default_price_levels_come_from_market_config(spec):
    config = MarketConfig()
    assert spec.n_actions == config.n_actions == 9
    assert spec.price_levels[0] == pytest.approx(0.8) and spec.price_levels[-1] == pytest.approx(
        1.2
    )
    assert spec.n_products == config.n_products


def test_market_spec_roundtrips_through_json(spec):
    back = MarketSpec.from_json(spec.to_json())
    assert back.to_json() == spec.to_json()
    assert np.array_equal(back.kernel_agent, spec.kernel_agent)


def test_market_spec_save_and_load_roundtrip_without_temp_files(spec, tmp_path: Path):
    spec.save(tmp_path / "spec")
    assert sorted(p.name for p in (tmp_path / "spec").iterdir()) == ["spec.json", "spec.npz"]
    assert MarketSpec.load(tmp_path / "spec").to_json() == spec.to_json()


def test_market_spec_arrays_are_read_only(spec):
    with pytest.raises(ValueError):
        spec.kernel_human[0, 0] = 1.0


@pytest.mark.parametrize(
    ("field", "value"),
    [("agent_count_mode", "poisson"), ("sigma_agent", 0.0), ("p_low", 200.0), ("smoothing", 1.0)],
)
def test_market_spec_rejects_invalid_fields(field, value, make_spec):
    with pytest.raises(ValueError, match=field):
        make_spec(**{field: value})


def test_market_spec_rejects_a_kernel_whose_rows_do_not_sum_to_one(spec, make_spec):
    bad = spec.kernel_human.copy()
    bad[3] *= 2
    with pytest.raises(ValueError, match="row 3"):
        make_spec(kernel_human=bad)
