"""Regret against the oracle paired by seed, and a policy's adaptivity: its modal action per cell
and what its variation earns over its own best fixed action."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from phantom_assets.evaluation import (
    ADAPTIVITY_SCHEMA,
    FIXED_SCHEMA,
    REGRET_SCHEMA,
    adaptivity_table,
    evaluate_policy,
    fixed_action_profits,
    oracle_profits,
    regret_table,
)
from phantom_assets.market.columns import Column
from phantom_assets.market.oracle import action_totals
from tests.unit.evaluation.conftest import action

SEEDS = [100, 101, 102, 103, 104]
LABELS = {"tier": "qtable", "mode": "baseline"}


def test_a_replayed_fixed_action_earns_exactly_the_episode_profit_of_the_policy_playing_it(spec):
    policy = action(spec, 3, 0, 2)
    nominal = evaluate_policy(policy, spec, [0.0, 1.0], 2, seed=5, ks=[2, 8])
    fixed = fixed_action_profits(spec, [policy.action, 0], nominal)
    assert fixed.schema == pl.Schema(FIXED_SCHEMA) and fixed.height == 2 * 2 * 2 * 2
    replayed = nominal.filter(detector="fitted").join(
        fixed.filter(action=policy.action), on=["alpha", "k", "seed"], suffix="_fixed"
    )
    assert replayed.height == 8
    assert replayed["profit"].to_numpy() == pytest.approx(replayed["profit_fixed"].to_numpy())


def _nominal(profits: dict[tuple[str, float], np.ndarray], k: int = 2) -> pl.DataFrame:
    """Fitted rows with these per-seed profits for each (policy, α), plus a permuted twin."""
    rows = [
        {
            "policy": policy,
            **LABELS,
            "alpha": alpha,
            "k": k,
            "detector": detector,
            "seed": seed,
            "train_seed": 0,
            "profit": float(value),
        }
        for (policy, alpha), values in profits.items()
        for seed, value in zip(SEEDS, values, strict=True)
        for detector in ("fitted", "permuted")
    ]
    return pl.DataFrame(rows).with_columns(pl.col("detector").cast(pl.String))


def _fixed(profits: dict[tuple[int, float], np.ndarray], k: int = 2) -> pl.DataFrame:
    rows = [
        (action, alpha, k, seed, float(value))
        for (action, alpha), values in profits.items()
        for seed, value in zip(SEEDS, values, strict=True)
    ]
    return pl.DataFrame(rows, schema=FIXED_SCHEMA, orient="row")


def _oracle(profits: dict[float, np.ndarray], k: int = 2) -> pl.DataFrame:
    """`oracle_profits`-shaped rows: the oracle action's profit per (α, seed)."""
    rows = [
        (alpha, k, seed, float(value))
        for alpha, values in profits.items()
        for seed, value in zip(SEEDS, values, strict=True)
    ]
    return pl.DataFrame(rows, schema=["alpha", "k", "seed", "profit"], orient="row")


def test_regret_pairs_the_oracle_actions_profit_with_the_policys_by_seed():
    rng = np.random.default_rng(0)
    policy, oracle_profit = rng.normal(90, 5, 5), rng.normal(100, 5, 5)
    nominal = _nominal({("p", 0.5): policy})
    row = regret_table(nominal, _oracle({0.5: oracle_profit})).row(0, named=True)
    diffs = oracle_profit - policy
    low, high = stats.t.interval(0.95, 4, diffs.mean(), stats.sem(diffs))
    assert row["regret"] == pytest.approx(diffs.mean()) and row["n"] == 5
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    assert row["relative_regret"] == pytest.approx(diffs.mean() / oracle_profit.mean())
    assert regret_table(nominal, _oracle({0.5: oracle_profit})).schema == pl.Schema(REGRET_SCHEMA)


def test_regret_refuses_an_oracle_without_the_policies_seeds(spec):
    nominal = _nominal({("p", 0.5): np.ones(5)})
    with pytest.raises(ValueError, match="oracle's actions"):
        regret_table(nominal, _oracle({1.0: np.ones(5)}))
    with pytest.raises(ValueError, match="level"):
        oracle_profits(spec, pl.DataFrame({"alpha": [0.5], "k": [2], "action": [9]}), nominal)


def test_oracle_profits_replay_the_oracles_continuous_action_on_the_policies_seeds(spec):
    oracle = pl.DataFrame(
        {"alpha": [0.5], "k": [2], "level": [1.07], "markup": [0.31], "delta": [0.4]}
    )
    nominal = _nominal({("p", 0.5): np.ones(5)})
    profits = oracle_profits(spec, oracle, nominal)
    expected = action_totals(spec, [(1.07, 0.31, 0.4)], [0.5], 2, SEEDS)[0, :, 0, Column.PROFIT]
    assert profits["seed"].to_list() == SEEDS
    np.testing.assert_allclose(profits["profit"].to_numpy(), expected)


def _traces(plays: dict[tuple[str, float], list[int]], k: int = 2) -> pl.DataFrame:
    rows = [
        {
            "policy": policy,
            **LABELS,
            "alpha": alpha,
            "k": k,
            "seed": seed,
            "step": step,
            "action": played,
            "level": 1.0 + played / 10,
            "markup": 0.0,
            "detector_strength": 0.0,
        }
        for (policy, alpha), actions in plays.items()
        for seed in SEEDS
        for step, played in enumerate(actions)
    ]
    return pl.DataFrame(rows)


def test_adaptivity_measures_the_switch_and_its_gain_over_the_policys_own_best_fixed_action():
    """`switch` plays 3 at α = 0 (where 3 earns 10, 5 earns 0) and mostly 5 at α = 1 (3 earns 0,
    5 earns 12): its own best fixed action is 5 (mean 6 > 5), so switching earns 10 at α = 0, 0
    at α = 1 and 5 over the grid; `constant` plays 3 everywhere and earns nothing over it."""
    noise = np.random.default_rng(1).normal(0, 0.1, 5)
    fixed = _fixed(
        {(3, 0.0): 10 + noise, (3, 1.0): 0 * noise, (5, 0.0): 0 * noise, (5, 1.0): 12 + noise}
    )
    traces = _traces(
        {
            ("switch", 0.0): [3, 3, 3, 3],
            ("switch", 1.0): [5, 5, 5, 3],
            ("constant", 0.0): [3] * 4,
            ("constant", 1.0): [3] * 4,
        }
    )
    nominal = _nominal(
        {
            ("switch", 0.0): 10 + noise,
            ("switch", 1.0): 12 + noise,
            ("constant", 0.0): 10 + noise,
            ("constant", 1.0): 0 * noise,
        }
    )
    out = adaptivity_table(traces, nominal, fixed)
    assert out.schema == pl.Schema(ADAPTIVITY_SCHEMA) and out.height == 2 * 3
    switch = {row["alpha"]: row for row in out.filter(policy="switch").iter_rows(named=True)}
    assert (switch[0.0]["modal_action"], switch[1.0]["modal_action"]) == (3, 5)
    assert switch[1.0]["modal_share"] == 0.75 and switch[1.0]["modal_label"] == "(1.5, 0.0, 0.0)"
    assert {row["fixed_action"] for row in switch.values()} == {5}
    assert switch[0.0]["mean"] == pytest.approx(10.0 + noise.mean())
    assert switch[1.0]["mean"] == pytest.approx(0.0, abs=1e-9)
    assert (
        switch[None]["mean"] == pytest.approx(5.0 + noise.mean() / 2) and switch[None]["ci_low"] > 4
    )
    assert switch[None]["actions_played"] == 2 and switch[None]["modal_share"] == 0.625
    constant = out.filter(policy="constant")
    assert set(constant["fixed_action"]) == {3} and constant["mean"].abs().max() < 1e-9


def test_adaptivity_refuses_fixed_profits_without_an_action_a_policy_plays():
    traces = _traces({("p", 0.0): [3, 4]})
    with pytest.raises(ValueError, match="lacks actions"):
        adaptivity_table(traces, _nominal({("p", 0.0): np.ones(5)}), _fixed({(3, 0.0): np.ones(5)}))
