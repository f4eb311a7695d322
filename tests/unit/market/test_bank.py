"""Chain banks: quote-time statistics agree with the sampled chains and the definitions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import expit, rel_entr

from phantom_assets.constants import DEMAND_WEIGHTS, KERNEL_STATES
from phantom_assets.contamination import sample_chains
from phantom_assets.market import bank_tables, build_chain_bank
from tests.unit.market.oracles import detector_gaps, detector_scores


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


def quote_oracle(events: list[str]) -> int:
    """Index (into events, len = quoted at the end) of the quoted view: the last view_item_page
    before the first add_item_to_cart, else that add, else the end."""
    lock = events.index("add_item_to_cart") if "add_item_to_cart" in events else len(events)
    views = [i for i, e in enumerate(events[:lock]) if e == "view_item_page"]
    return views[-1] if views else lock


def test_detector_gap_equals_the_kl_difference_definition(spec):
    codes, lengths = sample_chains(spec.kernel_agent, 40, np.random.default_rng(0))
    gaps = detector_gaps(codes, lengths, spec.kernel_human, spec.kernel_agent)
    oracle = [
        kl_gap_oracle(codes[i, : lengths[i]].tolist(), spec.kernel_human, spec.kernel_agent)
        for i in range(40)
    ]
    assert gaps == pytest.approx(oracle, abs=1e-9)


@pytest.mark.parametrize("f_coef", [(0.0, 1.0), (-1.3, 2.4)])
def test_chain_bank_statistics_match_the_sampled_chains(spec, f_coef):
    """Engagement before the quoted view, prefix score up to it, whole-chain demand weight."""
    tables = bank_tables(spec.kernel_human, spec.kernel_human, spec.kernel_agent, spec.states)
    bank = build_chain_bank(tables, 3_000, np.random.default_rng(1), 20, f_coef)
    codes, lengths = sample_chains(spec.kernel_human, 3_000, np.random.default_rng(1), 20)
    floor = 1e-12  # the bank floors kernel probabilities before the log, as here
    llr = np.log(np.maximum(spec.kernel_agent, floor)) - np.log(
        np.maximum(spec.kernel_human, floor)
    )
    end = len(KERNEL_STATES) - 1
    for i in range(300):  # oracle from the event names
        path = codes[i, : lengths[i]].tolist()
        events = [KERNEL_STATES[c] for c in path]
        quoted = quote_oracle(events)
        assert bank.weight[i] == sum(DEMAND_WEIGHTS[e] for e in events)
        assert bank.engagement[i] == sum(DEMAND_WEIGHTS[e] for e in events[:quoted])
        moves = list(itertools.pairwise([0, *path, end]))[: quoted + 1]
        gap = np.mean([llr[a, b] for a, b in moves])
        assert bank.score[i] == pytest.approx(expit(f_coef[0] + f_coef[1] * gap), abs=1e-9)


def test_a_chain_never_quoted_in_session_scores_like_the_whole_chain(spec):
    tables = bank_tables(spec.kernel_human, spec.kernel_human, spec.kernel_agent, spec.states)
    bank = build_chain_bank(tables, 2_000, np.random.default_rng(3), 20)
    codes, lengths = sample_chains(spec.kernel_human, 2_000, np.random.default_rng(3), 20)
    never = [
        i
        for i in range(2_000)
        if not {"view_item_page", "add_item_to_cart"}
        & {KERNEL_STATES[c] for c in codes[i, : lengths[i]]}
    ]
    assert never
    whole = detector_scores(codes[never], lengths[never], spec.kernel_human, spec.kernel_agent)
    assert bank.score[never] == pytest.approx(whole, abs=1e-9)
    assert np.array_equal(bank.engagement[never], bank.weight[never])


def test_agent_chains_score_higher_and_engage_less_than_human_chains(spec):
    human, agent = spec.banks
    assert agent.score.mean() > human.score.mean() + 0.2
    assert agent.engagement.mean() < human.engagement.mean()


def test_chain_bank_rejects_bad_arrays():
    from phantom_assets.market import ChainBank

    with pytest.raises(ValueError, match="scores"):
        ChainBank(np.ones(3), np.array([0.1, 1.2, 0.3]), np.ones(3))
    with pytest.raises(ValueError, match="one length"):
        ChainBank(np.ones(3), np.ones(2) * 0.5, np.ones(3))
