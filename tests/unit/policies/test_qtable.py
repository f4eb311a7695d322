"""Tabular Q-learning: the (α̂, low-engagement, level) state, save/load, and that it learns."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from phantom_assets.market import make_env
from phantom_assets.policies import QTablePolicy
from phantom_assets.policies.base import level_prices
from phantom_assets.policies.qtable import epsilon_schedule, train_qtable
from tests.unit.policies.conftest import market_obs

LEVELS = np.array([0.1, 0.2, 0.3, 0.4, 0.5])


def table(q: np.ndarray, bins=(2, 3), visits: np.ndarray | None = None) -> QTablePolicy:
    states = bins[0] * bins[1] * LEVELS.size
    return QTablePolicy(q, bins, LEVELS, np.ones(states) if visits is None else visits)


def test_qtable_state_bins_the_shopper_alpha_hat_low_engagement_and_the_level_in_ravel_order():
    policy = table(np.zeros((30, 45)))
    obs = market_obs(
        [0.5, 0.5], prices=[0.28, 0.32], shopper_alpha_hat=0.9, low_engagement_share=0.4
    )
    assert policy.state(obs) == np.ravel_multi_index((1, 1, 2), (2, 3, 5))
    # The session-share α̂ (which K inflates) is not the state's α coordinate.
    assert policy.state(
        market_obs([0.5, 0.5], prices=[0.28, 0.32], alpha_hat=0.9, low_engagement_share=0.4)
    ) == np.ravel_multi_index((0, 1, 2), (2, 3, 5))


def test_level_prices_are_what_the_observation_shows_at_each_level(spec):
    market = make_env(spec, 0.5)
    market.reset(seed=0)
    positions = level_prices(spec)
    for level in range(len(spec.base_levels)):
        obs, *_ = market.step(spec.action_index(level, 0, 0))
        n = spec.n_products
        assert obs[n : 2 * n].mean() == pytest.approx(positions[level], abs=1e-6)


def test_qtable_acts_greedily_and_round_trips(tmp_path):
    q = np.zeros((30, 45))
    q[:, 7] = 1.0
    policy = table(q, visits=np.arange(30))
    assert policy.act(market_obs([0.5, 0.5], shopper_alpha_hat=0.9)) == 7
    loaded = QTablePolicy.load(policy.save(tmp_path / "policy.npz"))
    assert np.array_equal(loaded.q, q) and loaded.bins == (2, 3)
    assert np.array_equal(loaded.levels, LEVELS) and np.array_equal(loaded.visits, np.arange(30))


def test_an_unvisited_state_acts_on_the_visit_weighted_mean_of_the_visited_rows():
    q = np.zeros((30, 45))
    q[0, 3], q[1, 5], q[2, 9] = 1.0, 0.6, 5.0  # state 2 has the largest value but no visits
    visits = np.zeros(30)
    visits[:2] = (1, 4)  # mean row: action 3 -> 0.2, action 5 -> 0.48
    policy = table(q, visits=visits)
    unvisited = market_obs([0.5, 0.5], prices=0.5, shopper_alpha_hat=0.9, low_engagement_share=0.9)
    assert visits[policy.state(unvisited)] == 0
    assert policy.act(unvisited) == 5


def test_qtable_rejects_a_table_that_does_not_match_its_state_shape():
    with pytest.raises(ValueError, match="state shape"):
        table(np.zeros((29, 45)))


def test_epsilon_decays_linearly_over_the_exploration_fraction_then_stays(tiny):
    params = dataclasses.replace(
        tiny, q_epsilon_start=1.0, q_epsilon_end=0.1, q_exploration_fraction=0.5
    )
    eps = epsilon_schedule(params, 100)
    assert eps[0] == 1.0 and eps[25] == pytest.approx(0.55) and (eps[50:] == 0.1).all()
    assert (np.diff(eps) <= 0).all()


class Bandit(gym.Env):
    """A deterministic 45-armed bandit that shows a constant market observation."""

    def __init__(self, obs: np.ndarray, payoff: np.ndarray) -> None:
        self.observation_space = spaces.Box(0.0, 1.0, obs.shape, np.float32)
        self.action_space = spaces.Discrete(payoff.size)
        self.obs, self.payoff = obs, payoff

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.obs, {}

    def step(self, action):
        return self.obs, float(self.payoff[action]), False, False, {}


def test_qtable_learns_the_best_arm_of_a_deterministic_bandit(spec, tiny):
    payoff = np.random.default_rng(3).uniform(0.5, 1.0, spec.n_actions) / spec.reward_scale
    payoff[31] = 1.05 / spec.reward_scale
    obs = market_obs(
        np.full(spec.n_products, 0.1), prices=level_prices(spec)[2], shopper_alpha_hat=0.5
    )
    env = gym.wrappers.TimeLimit(Bandit(obs, payoff), max_episode_steps=10)
    params = dataclasses.replace(tiny, timesteps=3_000, gamma=0.5)
    policy, curve = train_qtable(env, spec, params, seed=0)
    assert policy.act(obs) == 31
    assert curve["reward"][-1] > curve["reward"][0]
    # Learned on rewards scaled to O(1): the best arm's value is 1.05 / (1 − γ).
    assert policy.q[policy.state(obs), 31] == pytest.approx(1.05 / (1 - 0.5), rel=0.02)
