"""Chain banks: statistics agree with the sampled chains and with the divergence definition."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import rel_entr

from phantom_assets.constants import CART_EVENTS, DEMAND_WEIGHTS, KERNEL_STATES
from phantom_assets.contamination import sample_chains
from phantom_assets.market import bank_tables, build_chain_bank, detector_gaps, detector_scores


def kl_gap_oracle(events: list[int], human: np.ndarray, agent: np.ndarray) -> float:
    """Δ_H − Δ_A from the definition: visit-weighted KL of the session's own empirical kernel."""
    path = [0, *events, len(KERNEL_STATES) - 1]
    counts = np.zeros_like(human)
    for a, b in itertools.pairwise(path):
        counts[a, b] += 1
    visits = counts.sum(axis=1)
    rows = visits > 0
    own = counts[rows] / visits[rows, None]

    def delta(kernel: np.ndarray) -> float:
        kl = rel_entr(own, kernel[rows]).sum(axis=1)
        return float((visits[rows] * kl).sum() / visits.sum())

    return delta(human) - delta(agent)


def test_detector_gap_equals_the_kl_difference_definition(spec):
    codes, lengths = sample_chains(spec.kernel_agent, 40, np.random.default_rng(0))
    gaps = detector_gaps(codes, lengths, spec.kernel_human, spec.kernel_agent)
    oracle = [
        kl_gap_oracle(codes[i, : lengths[i]].tolist(), spec.kernel_human, spec.kernel_agent)
        for i in range(40)
    ]
    assert gaps == pytest.approx(oracle, abs=1e-9)


def test_chain_bank_statistics_match_the_sampled_chains(spec):
    tables = bank_tables(spec.kernel_human, spec.kernel_human, spec.kernel_agent, spec.states)
    bank = build_chain_bank(tables, 3_000, np.random.default_rng(1), max_len=20)
    codes, lengths = sample_chains(spec.kernel_human, 3_000, np.random.default_rng(1), 20)
    assert np.array_equal(bank.lengths, lengths)
    scores = detector_scores(codes, lengths, spec.kernel_human, spec.kernel_agent)
    assert bank.f == pytest.approx(scores, abs=1e-12)
    for i in range(200):  # oracle from the event names
        events = [KERNEL_STATES[c] for c in codes[i, : lengths[i]]]
        assert bank.weight[i] == sum(DEMAND_WEIGHTS[e] for e in events)
        assert bank.n_cart[i] == sum(e in CART_EVENTS for e in events)
        assert bank.reaches_cart[i] == ("add_item_to_cart" in events)
        first_add = events.index("add_item_to_cart") if "add_item_to_cart" in events else None
        after_add = first_add is not None and "checkout_start" in events[first_add:]
        assert bank.buys[i] == ("purchase_complete" in events or after_add)


@pytest.mark.parametrize("f_coef", [(0.0, 0.5), (-1.3, 2.4)])
def test_chain_bank_scores_chains_with_the_selected_calibration(spec, f_coef):
    # temperature T = 2 is (0, 1/2); a logistic fit is any (a, b): f = sigmoid(a + b * gap).
    tables = bank_tables(spec.kernel_human, spec.kernel_human, spec.kernel_agent, spec.states)
    bank = build_chain_bank(tables, 2_000, np.random.default_rng(3), max_len=20, f_coef=f_coef)
    codes, lengths = sample_chains(spec.kernel_human, 2_000, np.random.default_rng(3), 20)
    gaps = detector_gaps(codes, lengths, spec.kernel_human, spec.kernel_agent)
    assert bank.f == pytest.approx(1 / (1 + np.exp(-(f_coef[0] + f_coef[1] * gaps))), abs=1e-12)


def test_agent_chains_score_higher_than_human_chains(spec):
    fitted = (spec.kernel_human, spec.kernel_agent)
    rng = np.random.default_rng(2)
    f_human = build_chain_bank(bank_tables(fitted[0], *fitted, spec.states), 2_000, rng).f
    f_agent = build_chain_bank(bank_tables(fitted[1], *fitted, spec.states), 2_000, rng).f
    assert f_agent.mean() > f_human.mean() + 0.2


def test_build_chain_bank_rejects_chains_longer_than_its_counters(spec):
    tables = bank_tables(spec.kernel_human, spec.kernel_human, spec.kernel_agent, spec.states)
    with pytest.raises(ValueError, match="max_len"):
        build_chain_bank(tables, 10, np.random.default_rng(0), max_len=10_000)
