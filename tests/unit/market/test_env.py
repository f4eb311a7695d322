"""PricingMarketEnv v2: Gymnasium contract, determinism, observation without α or K, robust mode
on common random numbers, the permuted-f ablation, the reward."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from phantom_assets.market import (
    OBS_EXTRA,
    EpisodeLaw,
    PricingMarketEnv,
    agent_session_share,
    alpha_interval,
    make_env,
)


def rollout(env, seed: int, steps: int, action: int) -> tuple[list, list, list]:
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


def totals(infos: list[dict], key: str) -> float:
    return float(sum(i[key] for i in infos))


@pytest.mark.parametrize(
    ("robust", "detector"), [(False, "fitted"), (True, "fitted"), (False, "permuted")]
)
def test_env_passes_the_gymnasium_checker(spec, robust, detector):
    check_env(PricingMarketEnv(spec, 0.4, robust=robust, detector=detector), skip_render_check=True)


@pytest.mark.parametrize("robust", [False, True])
def test_env_same_seed_gives_identical_trajectories(spec, robust):
    runs = [rollout(PricingMarketEnv(spec, 0.5, robust=robust), 11, 20, 7) for _ in range(2)]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][0], runs[1][0], strict=True))
    assert runs[0][1] == runs[1][1]


def test_observation_layout_shares_prices_and_the_extras(spec):
    n = spec.n_products
    env = PricingMarketEnv(spec, 0.3)
    env.reset(seed=3)
    action = spec.action_index(3, 2, 1)
    obs, _, _, _, info = env.step(action)
    assert obs.shape == (2 * n + len(OBS_EXTRA),) and obs.dtype == np.float32
    assert obs[:n].sum() == pytest.approx(1.0, abs=1e-5)
    base = spec.anchor * spec.base_levels[3]
    assert obs[n : 2 * n] == pytest.approx((base - spec.p_low) / (spec.p_high - spec.p_low))
    extra = dict(zip(OBS_EXTRA, obs[2 * n :], strict=True))
    assert extra["score_mean"] == pytest.approx(info["score_sum"] / info["sessions"], abs=1e-6)
    human_sessions = info["sessions"] * (1 - extra["alpha_hat"])  # α̂ in (0, 1) at α = 0.3
    assert extra["shopper_alpha_hat"] == pytest.approx(
        1 - human_sessions / spec.shoppers_per_step, abs=1e-5
    )
    purchases = info["human_purchases"] + info["agent_purchases"]
    assert extra["low_engagement_share"] == pytest.approx(
        info["low_engagement_purchases"] / purchases, abs=1e-6
    )
    assert extra["markup"] == pytest.approx(spec.markups[2] / max(spec.markups))
    assert extra["detector"] == pytest.approx(spec.detector_strengths[1] / 1.0)


def test_alpha_hat_is_the_debiased_session_share(spec):
    """α̂ from the step's mean score estimates the agent *session* share αK/(αK + 1 − α)."""
    human, agent = spec.banks
    env = PricingMarketEnv(spec, 0.3, 4)
    obs = rollout(env, 0, 300, spec.undefended_action)[0]
    alpha_hat = np.mean([o[2 * spec.n_products + OBS_EXTRA.index("alpha_hat")] for o in obs[1:]])
    assert alpha_hat == pytest.approx(agent_session_share(0.3, 4), abs=0.03)
    assert human.score.mean() < agent.score.mean()


def test_the_shopper_alpha_hat_tells_alpha_apart_where_k_confounds_the_session_share(spec):
    """(α, K) = (0.2, 8) and (0.5, 2) have almost one session share (0.67): α̂ cannot tell them
    apart, the shopper-share estimate recovers each α."""
    n, hats = spec.n_products, [OBS_EXTRA.index(n) for n in ("alpha_hat", "shopper_alpha_hat")]
    means = {}
    for alpha, k in ((0.2, 8), (0.5, 2)):
        obs = np.array(
            rollout(PricingMarketEnv(spec, alpha, k), 0, 200, spec.undefended_action)[0][1:]
        )
        means[alpha] = obs[:, [2 * n + i for i in hats]].mean(axis=0)
        assert means[alpha][1] == pytest.approx(alpha, abs=0.03)
    assert abs(means[0.2][0] - means[0.5][0]) < 0.05


def test_a_law_draws_each_episodes_alpha_and_k_and_the_adversary_centres_on_it(spec):
    law = EpisodeLaw((0.2, 0.6), (2, 8))
    env = PricingMarketEnv(spec, 0.9, robust=True, law=law)
    drawn = [env.reset(seed=seed)[1] for seed in range(30)]
    alphas, ks = [i["alpha"] for i in drawn], {i["k"] for i in drawn}
    assert all(0.2 <= a <= 0.6 for a in alphas) and len(set(alphas)) == 30 and ks == {2, 8}
    for info in drawn:  # the ambiguity set around the drawn α, not around 0.9
        low, high = alpha_interval(spec, info["alpha"])
        assert info["candidate_alphas"].min() == pytest.approx(low)
        assert info["candidate_alphas"].max() == pytest.approx(high)
    assert [env.reset(seed=seed)[1]["alpha"] for seed in range(30)] == alphas
    assert env.reset(seed=0, options={"alpha": 0.1, "k": 4})[1]["alpha"] == 0.1


def test_a_law_env_reset_at_an_alpha_and_k_plays_the_plain_envs_episode(spec):
    """Evaluation resets at its cell's (α, K): a law must not shift the episode's draws."""
    plain = PricingMarketEnv(spec, 0.4, 2)
    drawn = PricingMarketEnv(spec, law=EpisodeLaw((0.0, 1.0), (8,)))
    plain.reset(seed=5)
    drawn.reset(seed=5, options={"alpha": 0.4, "k": 2})
    assert [plain.step(7)[1] for _ in range(4)] == [drawn.step(7)[1] for _ in range(4)]


def test_envs_differing_only_in_alpha_or_k_expose_neither(spec):
    """Pitfall 3: the policy never sees the true α (nor K: the layout has no slot for either)."""
    for alpha, k in ((0.3, 2), (0.7, 8)):
        env = PricingMarketEnv(spec, alpha, k)
        observations = rollout(env, 5, 5, spec.undefended_action)[0]
        values = np.concatenate(observations)
        assert not np.any(np.isclose(values, alpha, rtol=0, atol=1e-7))
        assert env.observation_space.shape == (2 * spec.n_products + len(OBS_EXTRA),)


def test_reward_is_profit_minus_volatility_without_a_leak_charge_by_default(spec):
    env = PricingMarketEnv(spec, 0.6)
    env.reset(seed=1)
    _, reward, _, _, info = env.step(spec.action_index(4, 1, 0))
    assert spec.lam == 0.0 and info["leak"] > 0
    assert info["volatility"] == pytest.approx(spec.base_levels[4] - spec.base_levels[2])
    assert reward == pytest.approx(info["profit"] - spec.eta_ux * info["volatility"])


def test_a_leak_charge_lowers_the_reward_by_lambda_times_the_leak(spec):
    _, charged, infos = rollout(PricingMarketEnv(spec, 0.6, lam=2.0), 4, 5, 3)
    _, plain, _ = rollout(PricingMarketEnv(spec, 0.6), 4, 5, 3)
    expected = [r - 2.0 * i["leak"] for r, i in zip(plain, infos, strict=True)]
    assert charged == pytest.approx(expected)


def test_robust_step_executes_the_minimum_reward_candidate_over_alpha_and_k(spec):
    env = PricingMarketEnv(spec, 0.5, robust=True)
    env.reset(seed=7)
    for action in (0, 44, 22, 5):
        _, reward, _, _, info = env.step(action)
        rewards = info["candidate_rewards"]
        assert rewards.size == info["candidate_alphas"].size == info["candidate_ks"].size
        assert set(info["candidate_ks"]) == set(spec.agents.robust_k_set)
        assert reward == rewards.min()
        chosen = int(np.argmin(rewards))
        assert (info["alpha"], info["k"]) == (
            info["candidate_alphas"][chosen],
            info["candidate_ks"][chosen],
        )


@pytest.mark.parametrize("action", [0, 9, 18])  # δ = 0 at every level
def test_the_permuted_ablation_is_identical_when_the_detector_is_off(spec, action):
    assert spec.action_values(action)[2] == 0.0
    fitted = rollout(PricingMarketEnv(spec, 0.5), 3, 10, action)
    permuted = rollout(PricingMarketEnv(spec, 0.5, detector="permuted"), 3, 10, action)
    for key in ("profit", "human_purchases", "agent_purchases", "leak"):
        assert totals(fitted[2], key) == totals(permuted[2], key)


def test_the_permuted_ablation_shares_every_draw_but_the_scores(spec):
    """Same shoppers, chains and noise: only quotes of flagged sessions can differ."""
    action = spec.action_index(2, 1, 2)
    fitted = rollout(PricingMarketEnv(spec, 0.5), 3, 30, action)[2]
    permuted = rollout(PricingMarketEnv(spec, 0.5, detector="permuted"), 3, 30, action)[2]
    assert [i["agents"] for i in fitted] == [i["agents"] for i in permuted]
    assert totals(fitted, "agent_flagged") != totals(permuted, "agent_flagged")


def test_the_detector_raises_agents_quotes_more_than_humans(spec):
    """With the fitted f, δ = 1 flags a larger share of agent sessions than of human sessions."""
    infos = rollout(PricingMarketEnv(spec, 0.5, 4), 0, 100, spec.action_index(2, 1, 2))[2]
    human_rate = totals(infos, "human_flagged") / (100 * 100 - totals(infos, "agents"))
    agent_rate = totals(infos, "agent_flagged") / (4 * totals(infos, "agents"))
    assert agent_rate > human_rate + 0.1


def test_human_harm_is_zero_without_the_detector_and_positive_with_it(make_spec):
    # A loose threshold flags many humans, so a defended action harms them.
    spec = make_spec(detector_threshold=0.3)
    off = rollout(PricingMarketEnv(spec, 0.0), 2, 50, spec.action_index(2, 1, 0))[2]
    on = rollout(PricingMarketEnv(spec, 0.0), 2, 50, spec.action_index(2, 1, 2))[2]
    assert totals(off, "human_overpay") == totals(off, "human_lost") == 0.0
    assert totals(off, "human_quoted_up") == 0.0
    assert totals(on, "human_overpay") > 0 and totals(on, "human_flagged") > 0
    assert totals(on, "human_quoted_up") == totals(on, "human_flagged")
    assert totals(on, "human_surplus") < totals(on, "human_surplus_reference")
    assert totals(on, "human_spend_reference") == pytest.approx(
        totals(off, "human_spend_reference")
    )


def test_human_harm_is_measured_against_the_reference_response(spec):
    # The reference is the dearest undefended level: a cheaper action overpays negatively.
    cheap = spec.action_index(0, 1, 0)
    reference = spec.action_index(len(spec.base_levels) - 1, 1, 0)
    env = PricingMarketEnv(spec, 0.0, reference_action=reference)
    infos = rollout(env, 2, 20, cheap)[2]
    assert totals(infos, "human_overpay") < 0 and totals(infos, "human_lost") == 0.0
    assert totals(infos, "human_surplus") > totals(infos, "human_surplus_reference")


def test_agents_pay_less_as_k_grows(spec):
    def coi_agents(k: int) -> float:
        infos = rollout(PricingMarketEnv(spec, 1.0, k), 0, 200, spec.undefended_action)[2]
        return totals(infos, "agent_premium") / totals(infos, "agent_purchases")

    coi = [coi_agents(k) for k in (1, 4, 16)]
    assert coi[0] > coi[1] > coi[2] > 0


def test_quotes_above_every_valuation_sell_nothing(make_spec):
    """Pitfall 2: zero surplus must never fall back to uniform demand."""
    spec = make_spec(mu_human=0.2, sigma_human=0.02, mu_agent=0.15, sigma_agent=0.02)  # × anchor
    infos = rollout(PricingMarketEnv(spec, 0.5), 0, 5, spec.n_actions - 1)[2]
    assert all(i["revenue"] == 0.0 and i["profit"] == 0.0 for i in infos)


def test_reset_options_override_alpha_and_k_for_one_episode(spec):
    env = PricingMarketEnv(spec, 0.2, 2)
    env.reset(seed=0, options={"alpha": 0.9, "k": 5})
    info = env.step(0)[4]
    assert (info["nominal_alpha"], info["nominal_k"]) == (0.9, 5)
    env.reset(seed=0)
    info = env.step(0)[4]
    assert (info["nominal_alpha"], info["nominal_k"]) == (0.2, 2)


def test_make_env_truncates_at_the_episode_length(make_spec):
    env = make_env(make_spec(episode_steps=6))
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(6)]
    assert flags == [False] * 5 + [True]


def test_invalid_arguments_and_actions_are_rejected(spec):
    env = PricingMarketEnv(spec, 0.5)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(spec.n_actions)
    with pytest.raises(ValueError, match="nominal"):
        PricingMarketEnv(spec, 0.5, robust=True, detector="permuted")
    with pytest.raises(ValueError, match="k"):
        PricingMarketEnv(spec, 0.5, 0)
    with pytest.raises(ValueError, match="alpha"):
        PricingMarketEnv(spec, 1.5)
