"""Fixed actions on the env's own episode draws (common random numbers), and the oracle: the best
fixed action per (α, K), refined on the continuous action space."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from phantom_assets.market import (
    ORACLE_SCHEMA,
    fixed_action_profits,
    make_env,
    market_oracle,
    oracle_markdown,
    seed_t_interval,
)

SEEDS = (3, 4, 5)
STEPS = 4


@pytest.mark.parametrize(("alpha", "k"), [(0.0, 1), (0.5, 2), (1.0, 8)])
def test_fixed_action_profit_equals_the_env_episode_profit_of_that_constant_action(spec, alpha, k):
    profits = fixed_action_profits(spec, alpha, k, SEEDS, steps=STEPS)
    assert profits.shape == (len(SEEDS), spec.n_actions)
    for action in (0, spec.undefended_action, spec.n_actions - 1):
        for row, seed in enumerate(SEEDS):
            env = make_env(spec, alpha, k, max_episode_steps=STEPS)
            env.reset(seed=seed)
            episode = sum(env.step(action)[4]["profit"] for _ in range(STEPS))
            assert profits[row, action] == pytest.approx(episode, rel=1e-12)


def test_oracle_finds_the_planted_best_action_when_everybody_buys(make_spec):
    # Valuations far above every quote: profit rises with the quote, so the oracle runs to the
    # top of the action box (the quote cap) -- and says so: the optimum is on the box's edge.
    spec = make_spec(mu_human=1_000.0, in_market=1.0)
    table = market_oracle(spec, [0.0, 1.0], [2], SEEDS, steps=STEPS)
    assert table["level"].to_list() == pytest.approx([spec.price_cap] * 2)
    assert table["on_edge"].to_list() == [True, True]
    assert (table["profit"] > table["undefended_profit"]).all()


def test_the_oracle_is_at_least_the_best_grid_action_on_the_same_draws(spec):
    table = market_oracle(spec, [0.5], [2], SEEDS, steps=STEPS)
    profits = fixed_action_profits(spec, 0.5, 2, SEEDS, steps=STEPS)
    row = table.row(0, named=True)
    assert row["profit"] >= profits.mean(axis=0).max() - 1e-9
    assert row["undefended_profit"] == pytest.approx(profits[:, spec.undefended_action].mean())
    nearest = spec.action_values(row["action"])
    assert all(
        abs(a - b) <= min(abs(v - b) for v in values) + 1e-12
        for a, b, values in zip(
            nearest,
            (row["level"], row["markup"], row["delta"]),
            (spec.base_levels, spec.markups, spec.detector_strengths),
            strict=True,
        )
    )
    assert row["n_seeds"] == len(SEEDS) and not row["on_edge"]


def test_oracle_table_has_one_row_per_alpha_and_k_in_the_contract_schema(spec):
    table = market_oracle(spec, [0.0, 0.5, 1.0], [8, 2], SEEDS, steps=STEPS)
    assert table.schema == pl.Schema(ORACLE_SCHEMA)
    assert table.select("k", "alpha").rows() == [(k, a) for k in (2, 8) for a in (0.0, 0.5, 1.0)]
    markdown = oracle_markdown(table)
    assert markdown.count("\n") == 1 + table.height


def test_same_seeds_give_an_identical_oracle_table(spec):
    first = market_oracle(spec, [0.5, 1.0], [2], SEEDS, steps=STEPS)
    assert first.equals(market_oracle(spec, [0.5, 1.0], [2], SEEDS, steps=STEPS))
    other = market_oracle(spec, [0.5, 1.0], [2], (6, 7, 8), steps=STEPS)
    assert not first["profit"].equals(other["profit"])


def test_common_random_numbers_make_action_differences_far_less_variable(spec):
    seeds = range(12)
    profits = fixed_action_profits(spec, 0.5, 2, seeds, steps=STEPS)
    # The comparison the detector's value rests on: the same level and markup, a stronger δ.
    level, markup, detector = spec.action_parts(spec.undefended_action)
    a, b = spec.undefended_action, spec.action_index(level, markup, detector + 1)
    paired = profits[:, a] - profits[:, b]
    independent = profits[:, a] - np.roll(profits[:, b], 1)  # each action on other seeds' draws
    assert paired.var(ddof=1) < independent.var(ddof=1) / 4


def test_seed_t_interval_matches_scipy_and_skips_undefined_seeds():
    rng = np.random.default_rng(0)
    values = rng.normal(10.0, 2.0, (8, 3))
    values[0, 1] = np.nan
    mean, se, low, high, n = seed_t_interval(values, 0.9)
    assert n.tolist() == [8, 7, 8]
    for column in range(3):
        kept = values[~np.isnan(values[:, column]), column]
        ref_low, ref_high = stats.t.interval(0.9, kept.size - 1, kept.mean(), stats.sem(kept))
        assert (mean[column], se[column]) == pytest.approx((kept.mean(), stats.sem(kept)))
        assert (low[column], high[column]) == pytest.approx((ref_low, ref_high))
    single = seed_t_interval(np.array([[1.0], [np.nan]]))
    assert single[4][0] == 1 and np.isnan(single[2][0]) and np.isnan(single[3][0])


@pytest.mark.parametrize(
    ("alphas", "ks", "seeds"), [([1.5], [2], SEEDS), ([0.5], [0], SEEDS), ([0.5], [2], ())]
)
def test_oracle_rejects_a_bad_grid(spec, alphas, ks, seeds):
    with pytest.raises(ValueError):
        market_oracle(spec, alphas, ks, seeds, steps=STEPS)
