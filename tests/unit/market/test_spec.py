"""MarketSpec v2: validation, the action grid, save/load, the (α, K) ambiguity set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phantom_assets.config import AgentsConfig
from phantom_assets.market import (
    ChainBank,
    MarketSpec,
    alpha_half_width,
    alpha_interval,
    engagement_w1,
    robust_candidates,
)


def test_action_grid_indices_roundtrip(spec):
    assert spec.n_actions == 45 and spec.action_shape == (5, 3, 3)
    for action in range(spec.n_actions):
        assert spec.action_index(*spec.action_parts(action)) == action
    level, markup, detector = spec.action_values(spec.undefended_action)
    assert (level, markup, detector) == (1.0, spec.markups[1], 0.0)


def test_engagement_w1_is_the_mean_quantile_gap():
    human = ChainBank(np.arange(100.0), np.full(100, 0.2), np.ones(100))
    agent = ChainBank(np.arange(100.0) + 7.0, np.full(100, 0.8), np.ones(100))
    assert engagement_w1(human, agent) == pytest.approx(7.0, abs=1e-9)
    assert engagement_w1(human, human) == 0.0


def test_alpha_half_width_is_the_radius_over_w1(spec, make_spec):
    w1 = engagement_w1(*spec.banks)
    for radius, half_width in ((w1 / 4, 0.25), (0.0, 0.0), (10 * w1, 1.0)):
        agents = AgentsConfig(ambiguity_radius_w1=radius)
        assert alpha_half_width(make_spec(agents=agents)) == pytest.approx(half_width)


def test_alpha_half_width_is_one_when_both_classes_engage_alike(spec, make_spec):
    same = make_spec(
        agent_engagement=spec.human_engagement,
        agent_score=spec.human_score,
        agent_weight=spec.human_weight,
    )
    assert alpha_half_width(same) == 1.0
    assert alpha_interval(same, 0.3) == (0.0, 1.0)


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_robust_candidates_cover_the_alpha_interval_times_the_k_set(alpha, spec):
    alphas, ks = robust_candidates(spec, alpha)
    low, high = alpha_interval(spec, alpha)
    assert alphas.size == ks.size
    assert set(ks.tolist()) == set(spec.agents.robust_k_set)
    assert alphas.min() == pytest.approx(low) and alphas.max() == pytest.approx(high)
    assert 0.0 <= low <= alpha <= high <= 1.0


def test_market_spec_save_and_load_roundtrip_without_temp_files(spec, tmp_path: Path):
    spec.save(tmp_path / "spec")
    assert sorted(p.name for p in (tmp_path / "spec").iterdir()) == ["spec.json", "spec.npz"]
    back = MarketSpec.load(tmp_path / "spec", spec.agents)
    assert back._scalars() == spec._scalars()
    for name in ("anchor", "human_engagement", "agent_score", "kernel_agent"):
        np.testing.assert_array_equal(getattr(back, name), getattr(spec, name))


def test_loading_a_market_v1_spec_names_the_file_and_the_fix(spec, tmp_path: Path):
    spec.save(tmp_path)
    with np.load(tmp_path / "spec.npz") as data:
        v1 = {k: data[k] for k in ("kernel_human", "kernel_agent", "anchor")}
    np.savez(tmp_path / "spec.npz", **v1)
    with pytest.raises(ValueError, match=r"older market spec layout.*market_simulators"):
        MarketSpec.load(tmp_path, spec.agents)


def test_market_spec_arrays_are_read_only(spec):
    with pytest.raises(ValueError):
        spec.kernel_human[0, 0] = 1.0
    with pytest.raises(ValueError):
        spec.human_engagement[0] = 1.0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sigma_agent", 0.0),
        ("cost_share", 1.0),
        ("quote_noise", 1.0),
        ("detector_strengths", (0.5,)),
        ("markups", (-0.1, 0.5)),
    ],
)
def test_market_spec_rejects_invalid_fields(field, value, make_spec):
    with pytest.raises(ValueError, match=field):
        make_spec(**{field: value})


def test_market_spec_rejects_a_kernel_whose_rows_do_not_sum_to_one(spec, make_spec):
    bad = spec.kernel_human.copy()
    bad[3] *= 2
    with pytest.raises(ValueError, match="row 3"):
        make_spec(kernel_human=bad)


def test_reward_scale_normalises_a_step_of_profit(spec):
    assert spec.reward_scale == pytest.approx(1 / (spec.shoppers_per_step * spec.anchor.mean()))
