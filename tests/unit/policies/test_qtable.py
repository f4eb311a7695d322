"""Tabular Q-learning: state discretisation and save/load."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.policies import QTablePolicy


def test_qtable_state_bins_breadth_score_and_price_in_ravel_order():
    policy = QTablePolicy(np.zeros((2 * 3 * 4, 9)), (2, 3, 4))
    shares = np.array([0.25, 0.25, 0.25, 0.25])  # breadth 1 -> last bin
    prices = np.array([0.6, 0.6, 0.6, 0.6])  # mean 0.6 -> bin 2 of 4
    obs = np.concatenate([shares, prices, [0.1]])  # f̄ 0.1 -> bin 0 of 3
    assert policy.state(obs) == np.ravel_multi_index((1, 0, 2), (2, 3, 4))


def test_qtable_acts_greedily_and_round_trips(tmp_path):
    q = np.zeros((8, 5))
    q[:, 3] = 1.0
    policy = QTablePolicy(q, (2, 2, 2))
    obs = np.concatenate([[0.5, 0.5], [0.2, 0.2], [0.9]])
    assert policy.act(obs) == 3
    loaded = QTablePolicy.load(policy.save(tmp_path / "policy.npz"))
    assert np.array_equal(loaded.q, q) and loaded.bins == (2, 2, 2)


def test_qtable_rejects_a_table_that_does_not_match_its_bins():
    with pytest.raises(ValueError, match="bins"):
        QTablePolicy(np.zeros((7, 5)), (2, 2, 2))
