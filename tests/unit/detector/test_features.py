"""Detector v2's quote-time features (`phantom_assets.detector.features`): the kernel statistic is
the market bank's, the timing is what the session showed up to its quote, prefixes of a given
length stop where they should, and bad timing is refused naming the session."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from phantom_assets.constants import KERNEL_STATES, VOCABULARY
from phantom_assets.detector.features import (
    QUOTE_FEATURES,
    length_moves,
    prefix_features,
    quote_features,
)
from phantom_assets.detector.fit import kernel_scores
from phantom_assets.market.bank import bank_tables, fold_log_ratios, session_bank

S = len(KERNEL_STATES)


def _kernel(rng: np.random.Generator) -> np.ndarray:
    return rng.dirichlet(np.ones(S), size=S)


def _frame(sessions: list[tuple[list[str], list[int]]]) -> tuple[pl.Series, pl.Series]:
    trajectories = pl.Series("trajectory", [t for t, _ in sessions], dtype=pl.List(pl.String))
    offsets = pl.Series("event_offsets_ms", [o for _, o in sessions], dtype=pl.List(pl.Int64))
    return trajectories, offsets


def _random_sessions(rng: np.random.Generator, n: int) -> list[tuple[list[str], list[int]]]:
    out = []
    for _ in range(n):
        length = int(rng.integers(0, 12))
        events = [str(e) for e in rng.choice(VOCABULARY, size=length)]
        times = np.cumsum(rng.integers(0, 20_000, size=length)) if length else []
        out.append((events, [int(t) - int(times[0]) for t in times] if length else []))
    return out


def test_the_kernel_statistic_at_the_quote_is_the_market_banks_out_of_fold_score():
    rng = np.random.default_rng(3)
    human, agent = ([_kernel(rng) for _ in range(3)] for _ in range(2))
    llr = fold_log_ratios(human, agent)
    trajectories, offsets = _frame(_random_sessions(rng, 300))
    folds = rng.integers(0, 3, size=300)
    f_coef = (-0.3, 1.7)
    tables = bank_tables(human[0], human[0], agent[0], KERNEL_STATES)
    bank = session_bank(trajectories, folds, llr, tables, f_coef)
    features = quote_features(trajectories, offsets, folds, llr)
    np.testing.assert_allclose(kernel_scores(features, f_coef), bank.score, atol=1e-12)


def test_timing_counts_the_events_up_to_the_quote_only():
    rng = np.random.default_rng(0)
    llr = fold_log_ratios([_kernel(rng)], [_kernel(rng)])
    # Quoted at the view (2nd event): one 2 s gap, 2 s elapsed; the later 10 s gap is unseen.
    # A lone add-to-cart is its own quote: no gap. An empty session: nothing at all.
    trajectories, offsets = _frame(
        [
            (
                ["search", "view_item_page", "add_item_to_cart", "hover_over_button"],
                [0, 2000, 2500, 12500],
            ),
            (["add_item_to_cart", "view_item_page"], [0, 400]),
            ([], []),
        ]
    )
    x = quote_features(trajectories, offsets, np.zeros(3, dtype=int), llr)
    col = {name: x[:, j] for j, name in enumerate(QUOTE_FEATURES)}
    np.testing.assert_allclose(col["mean_log_gap"], [math.log(2.0), 0.0, 0.0])
    np.testing.assert_allclose(col["sd_log_gap"], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(col["log_elapsed"], [math.log1p(2.0), 0.0, 0.0])
    np.testing.assert_allclose(col["no_timing"], [0.0, 1.0, 1.0])


def test_a_prefix_of_n_events_sees_n_events_and_equal_times_are_floored_at_a_millisecond():
    rng = np.random.default_rng(1)
    llr = fold_log_ratios([_kernel(rng)], [_kernel(rng)])
    trajectories, offsets = _frame(
        [(["search", "search", "search", "search"], [0, 1000, 1000, 5000])]
    )
    np.testing.assert_array_equal(length_moves(trajectories, 3), [3])
    np.testing.assert_array_equal(length_moves(trajectories, 9), [4])
    x = prefix_features(trajectories, offsets, np.zeros(1, dtype=int), llr, np.array([3]))
    gaps = np.log([1.0, 0.001])
    assert x[0, 1] == pytest.approx(gaps.mean()) and x[0, 2] == pytest.approx(gaps.std())
    assert x[0, 3] == pytest.approx(math.log1p(1.0))


@pytest.mark.parametrize(
    ("offsets", "problem"),
    [
        ([[0, 10], [0]], "session 1: 2 events but 1 event times"),
        ([[0, 10], [5, 4]], "non-decreasing"),
    ],
)
def test_bad_timing_is_refused_naming_the_problem(offsets, problem):
    rng = np.random.default_rng(2)
    llr = fold_log_ratios([_kernel(rng)], [_kernel(rng)])
    trajectories = pl.Series([["search", "search"], ["search", "search"]])
    with pytest.raises(ValueError, match=problem):
        quote_features(
            trajectories, pl.Series(offsets, dtype=pl.List(pl.Int64)), np.zeros(2, dtype=int), llr
        )
