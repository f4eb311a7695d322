"""PricingMarketEnv: Gymnasium contract, determinism, observation, zero demand, CRN robustness."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from phantom_assets.market import (
    PricingMarketEnv,
    draw_step,
    evaluate_step,
    make_env,
)

MID = 4  # the middle of the 9 price levels (scale 1.0)


def rollout(env, seed: int, steps: int, action: int = MID) -> tuple[list, list, list]:
    obs, _ = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], []
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            break
    return observations, rewards, infos


@pytest.mark.parametrize("robust", [False, True])
def test_env_passes_the_gymnasium_checker(spec, robust):
    check_env(PricingMarketEnv(spec, 0.4, robust=robust), skip_render_check=True)


@pytest.mark.parametrize("robust", [False, True])
def test_env_same_seed_gives_identical_trajectories(spec, robust):
    runs = [rollout(PricingMarketEnv(spec, 0.5, robust=robust), 11, 20) for _ in range(2)]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][0], runs[1][0], strict=True))
    assert runs[0][1] == runs[1][1]


def test_observation_is_shares_prices_and_mean_score_without_alpha(spec):
    n = spec.n_products
    env = PricingMarketEnv(spec, 0.3)
    env.reset(seed=3)
    obs, _, _, _, info = env.step(MID)
    assert obs.shape == (2 * n + 1,) and obs.dtype == np.float32
    assert obs[:n].sum() == pytest.approx(1.0, abs=1e-5)
    prices = env.unwrapped._prices
    assert obs[n : 2 * n] == pytest.approx((prices - spec.p_low) / (spec.p_high - spec.p_low))
    assert obs[2 * n] == pytest.approx(info["f_mean"], abs=1e-6)


def test_envs_differing_only_in_alpha_expose_no_alpha(spec):
    """Regression for pitfall 3: the policy must never see the true α."""
    for alpha in (0.3, 0.7):
        env = PricingMarketEnv(spec, alpha)
        obs, _ = env.reset(seed=5)
        observations = [obs] + [env.step(MID)[0] for _ in range(5)]
        assert all(o.shape == (2 * spec.n_products + 1,) for o in observations)
        assert not np.any(np.isclose(np.concatenate(observations), alpha, rtol=0, atol=1e-7))


def test_prices_above_every_valuation_give_zero_demand_purchases_and_revenue(make_spec):
    """Regression for pitfall 2: zero surplus must never fall back to uniform demand."""
    spec = make_spec(mu_human=20.0, sigma_human=2.0, mu_agent=15.0, sigma_agent=2.0)
    env = PricingMarketEnv(spec, 0.5)
    obs, _ = env.reset(seed=0)
    _, infos = rollout(env, 0, 5, action=spec.n_actions - 1)[1:]
    assert np.all(obs[: spec.n_products] == 0.0)
    assert all(i["revenue"] == 0.0 and i["purchases"] == 0.0 for i in infos)
    draws = draw_step(np.random.default_rng(0), 100, spec.n_products)
    outcome = evaluate_step(spec, env.unwrapped._banks, np.full(spec.n_products, 60.0),
                            np.array([0.0, 1.0]), draws)  # fmt: skip
    assert np.all(outcome.demand == 0) and np.all(outcome.purchases == 0)
    assert np.all(outcome.n_choosing == 0)


def test_robust_step_executes_the_minimum_reward_candidate(spec):
    env = PricingMarketEnv(spec, 0.5, robust=True)
    env.reset(seed=7)
    for action in (0, 8, 4, 2):
        _, reward, _, _, info = env.step(action)
        rewards = info["candidate_rewards"]
        assert rewards.size == spec.robust_candidates
        assert reward == rewards.min()
        assert info["alpha_adv"] == info["candidate_alphas"][int(np.argmin(rewards))]


def test_robust_step_equals_the_nominal_step_at_the_selected_alpha(spec):
    """Common random numbers: the executed step is exactly the evaluated one, not a resample."""
    robust = PricingMarketEnv(spec, 0.5, robust=True)
    robust.reset(seed=9)
    _, reward, _, _, info = robust.step(6)
    nominal = PricingMarketEnv(spec, info["alpha_adv"])
    nominal.reset(seed=9)
    _, reward_nominal, _, _, info_nominal = nominal.step(6)
    assert reward_nominal == pytest.approx(reward, rel=1e-12)
    assert info_nominal["n_agents"] == info["n_agents"]


def test_identical_candidates_get_identical_outcomes_under_common_random_numbers(spec):
    env = PricingMarketEnv(spec, 0.5)
    env.reset(seed=1)
    draws = draw_step(np.random.default_rng(4), spec.sessions_per_step, spec.n_products)
    out = evaluate_step(spec, env._banks, spec.anchor.copy(), np.array([0.4, 0.4, 0.4]), draws)
    assert np.all(out.revenue == out.revenue[0]) and np.all(out.f_mean == out.f_mean[0])


def test_expected_revenue_falls_as_alpha_rises_when_agents_value_less(spec):
    def mean_revenue(alpha: float) -> float:
        env = PricingMarketEnv(spec, alpha)
        revenues = [i["revenue"] for seed in range(3) for i in rollout(env, seed, 40)[2]]
        return float(np.mean(revenues))

    revenue = [mean_revenue(alpha) for alpha in (0.0, 0.5, 1.0)]
    assert revenue[0] > revenue[1] * 1.03 and revenue[1] > revenue[2] * 1.03


def test_reset_options_override_alpha_for_one_episode(spec):
    env = PricingMarketEnv(spec, 0.2)
    env.reset(seed=0, options={"alpha": 0.9})
    assert env.step(MID)[4]["alpha_nominal"] == 0.9
    env.reset(seed=0)
    assert env.step(MID)[4]["alpha_nominal"] == 0.2


@pytest.mark.parametrize("alpha", [0.0, 0.29, 0.5, 1.0])
def test_exact_mode_draws_floor_n_alpha_agents(make_spec, alpha):
    env = PricingMarketEnv(make_spec(agent_count_mode="exact"), alpha)
    env.reset(seed=0)
    counts = {env.step(MID)[4]["n_agents"] for _ in range(5)}
    assert counts == {math.floor(100 * alpha + 1e-9)}


def test_bernoulli_mode_agent_share_matches_alpha(spec):
    env = PricingMarketEnv(spec, 0.3)
    env.reset(seed=2)
    agents = np.array([env.step(MID)[4]["n_agents"] for _ in range(200)])
    sd = math.sqrt(0.3 * 0.7 / (100 * 200))
    assert agents.mean() / 100 == pytest.approx(0.3, abs=4 * sd)


def test_mean_detector_score_tracks_alpha(spec):
    def mean_f(alpha: float) -> float:
        return float(
            np.mean([i["f_mean"] for i in rollout(PricingMarketEnv(spec, alpha), 0, 30)[2]])
        )

    assert mean_f(0.0) < mean_f(0.5) < mean_f(1.0)


def test_margin_floor_terminates_after_patience_steps(make_spec):
    spec = make_spec(mu_human=20.0, sigma_human=2.0, mu_agent=15.0, sigma_agent=2.0, patience=4)
    _, rewards, _ = rollout(PricingMarketEnv(spec, 0.5), 0, 20)
    assert len(rewards) == 4


def test_make_env_truncates_at_the_episode_length(make_spec):
    env = make_env(make_spec(episode_steps=6))
    env.reset(seed=0)
    flags = [env.step(MID)[3] for _ in range(6)]
    assert flags == [False] * 5 + [True]


def test_step_rejects_an_action_outside_the_space(spec):
    env = PricingMarketEnv(spec, 0.5)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(spec.n_actions)
