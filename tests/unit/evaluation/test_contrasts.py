"""What the benchmark compares: comparison pairs from policy labels and the λ × adversary
factorial on rows with planted effects."""

from __future__ import annotations

import polars as pl
import pytest
from scipy import stats

from phantom_assets.evaluation import (
    ABLATION_SCHEMA,
    FACTORIAL_METRICS,
    comparison_pairs,
    factorial_effects,
)
from tests.unit.evaluation.conftest import protocol_rows

FACTORIAL = {
    f"dqn-{mode}-a050": ("dqn", mode, 0.5)
    for mode in ("baseline", "robust", "charged", "robustcharged")
}
PLANTED = {
    "dqn-baseline-a050": 0.0,
    "dqn-robust-a050": 3.0,
    "dqn-charged-a050": -2.0,
    "dqn-robustcharged-a050": 3.0 - 2.0 + 5.0,
}
"""Adversary +3, charge −2, and +5 more when both are on: λ main effect (−2 + 6 − 0 − 3)/2 = 0.5,
adversary main effect (3 + 6 − 0 + 2)/2 = 5.5, interaction (6 + 2) − (3 − 0) = 5."""
EFFECTS = {"lambda": 0.5, "adversary": 5.5, "interaction": 5.0}


def labels(*rows: tuple[str, str, str, float]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=["policy", "tier", "mode", "train_alpha"], orient="row")


def test_comparison_pairs_name_the_detector_value_defences_and_the_static_reference():
    table = labels(
        ("static-a050", "static", "heuristic", 0.5),
        ("surge-a050", "surge", "heuristic", 0.5),
        *[(key, tier, mode, alpha) for key, (tier, mode, alpha) in FACTORIAL.items()],
        ("ppo-robust-a050", "ppo", "robust", 0.5),
        ("ppo-baseline-a050", "ppo", "baseline", 0.5),
        ("ppo-robust-a100", "ppo", "robust", 1.0),  # no twin at α = 1: no defence pair
    )
    pairs = comparison_pairs(table)
    value = pairs.filter(comparison="detector_value")
    assert value.height == table.height
    assert (value["policy"] == value["reference"]).all()
    assert set(value["detector"]) == {"fitted"} and set(value["reference_detector"]) == {"permuted"}
    defended = dict(
        pairs.filter(comparison="defended_vs_baseline").select("policy", "reference").iter_rows()
    )
    assert defended == {
        "dqn-robust-a050": "dqn-baseline-a050",
        "dqn-charged-a050": "dqn-baseline-a050",
        "dqn-robustcharged-a050": "dqn-charged-a050",
        "ppo-robust-a050": "ppo-baseline-a050",
    }
    versus = pairs.filter(comparison="vs_static")
    assert set(versus["reference"]) == {"static-a050"} and versus.height == table.height - 1
    assert set(pairs.filter(comparison="vs_static")["reference_detector"]) == {"fitted"}


def test_comparison_pairs_without_a_static_policy_skip_the_static_comparison():
    pairs = comparison_pairs(labels(("ppo-robust-a050", "ppo", "robust", 0.5)))
    assert pairs["comparison"].to_list() == ["detector_value"]


def test_factorial_effects_recover_planted_main_effects_and_interaction():
    rows = protocol_rows(FACTORIAL, episodes=12, effect=PLANTED, train_sd=0.0, seed=3)
    out = factorial_effects(rows, "dqn")
    assert out.schema == pl.Schema(ABLATION_SCHEMA)
    assert out.height == 3 * 2 * len(FACTORIAL_METRICS) * len(EFFECTS) and set(out["n"]) == {12}
    profit = out.filter(metric="profit")
    for effect, planted in EFFECTS.items():
        part = profit.filter(effect=effect)
        assert ((part["ci_low"] <= planted) & (planted <= part["ci_high"])).all(), effect
        assert part["mean"].to_numpy() == pytest.approx(planted, abs=1.5)
    leak = out.filter(metric="leak")
    assert (leak["ci_low"] < 0.5).all() and (leak["ci_high"] > -0.5).all()  # nothing planted


def test_factorial_interaction_is_a_paired_t_interval_of_per_seed_contrasts():
    rows = protocol_rows(FACTORIAL, episodes=6, effect=PLANTED, seed=5)
    row = factorial_effects(rows, "dqn").filter(
        metric="profit", effect="interaction", alpha=0.5, k=8
    )
    cell = rows.filter(alpha=0.5, k=8, detector="fitted")
    means = {
        key: cell.filter(policy=key)
        .group_by("seed")
        .agg(pl.col("profit").mean())
        .sort("seed")["profit"]
        .to_numpy()
        for key in FACTORIAL
    }
    per_seed = (
        means["dqn-robustcharged-a050"]
        - means["dqn-charged-a050"]
        - means["dqn-robust-a050"]
        + means["dqn-baseline-a050"]
    )
    oracle = stats.t.interval(0.95, 5, per_seed.mean(), stats.sem(per_seed))
    assert row["mean"][0] == pytest.approx(per_seed.mean())
    assert (row["ci_low"][0], row["ci_high"][0]) == pytest.approx(oracle)


def test_factorial_effects_are_empty_without_all_four_modes():
    rows = protocol_rows({k: v for k, v in FACTORIAL.items() if "charged" not in k}, episodes=3)
    assert factorial_effects(rows, "dqn").is_empty()
    assert factorial_effects(protocol_rows(FACTORIAL, episodes=3), "ppo").is_empty()
