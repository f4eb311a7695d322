"""Policy partition keys and training modes: format, round trip, the λ × adversary table, grid."""

from __future__ import annotations

import pytest

from phantom_assets.policies import (
    ABLATION_MODES,
    HEURISTIC_MODE,
    MODES,
    TIERS,
    TRAINING_MODES,
    baseline_twin,
    mode_market,
    parse_policy_key,
    policy_key,
    policy_keys,
)


@pytest.mark.parametrize(
    ("tier", "mode", "alpha", "key"),
    [
        ("ppo", "robust", 0.3, "ppo-robust-a030"),
        ("static", None, 0.0, "static-a000"),
        ("dqn", "baseline", 1.0, "dqn-baseline-a100"),
        ("qtable", "robust", 0.05, "qtable-robust-a005"),
        ("dqn", "charged", 0.5, "dqn-charged-a050"),
        ("dqn", "robustcharged", 0.5, "dqn-robustcharged-a050"),
    ],
)
def test_policy_key_formats_tier_mode_and_alpha(tier, mode, alpha, key):
    assert policy_key(tier, mode, alpha) == key
    parsed = parse_policy_key(key)
    assert (parsed.tier, parsed.alpha) == (tier, alpha)
    assert parsed.mode == (mode or HEURISTIC_MODE)
    assert parsed.key == key


@pytest.mark.parametrize(
    ("tier", "mode", "alpha"),
    [
        ("ppo", None, 0.3),
        ("static", "robust", 0.3),
        ("sarsa", None, 0.3),
        ("ppo", "robust", 0.333),
        ("ppo", "robust", 1.5),
        ("dqn", "penalized", 0.5),
    ],
)
def test_policy_key_rejects_bad_tier_mode_or_alpha(tier, mode, alpha):
    with pytest.raises(ValueError, match=r"tier|mode|alpha"):
        policy_key(tier, mode, alpha)


@pytest.mark.parametrize("key", ["ppo-a030", "ppo-robust-0.3", "static-baseline-a000", "x", ""])
def test_parse_policy_key_rejects_malformed_keys(key):
    with pytest.raises(ValueError, match=r"key|mode|tier"):
        parse_policy_key(key)


def test_training_modes_are_the_full_lambda_by_adversary_factorial():
    cells = {(m.robust, m.charged) for m in TRAINING_MODES.values()}
    assert cells == {(False, False), (True, False), (False, True), (True, True)}
    assert set(TRAINING_MODES) == set(MODES) | set(ABLATION_MODES)
    assert not any(TRAINING_MODES[m].charged for m in MODES)


@pytest.mark.parametrize(
    ("mode", "market"),
    [
        ("baseline", (False, 0.0)),
        ("robust", (True, 0.0)),
        ("charged", (False, 2.5)),
        ("robustcharged", (True, 2.5)),
        (HEURISTIC_MODE, (False, 0.0)),
    ],
)
def test_mode_market_gives_the_adversary_flag_and_lambda_of_each_mode(mode, market):
    assert mode_market(mode, ablation_lam=2.5) == market


def test_mode_market_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="unknown training mode"):
        mode_market("greedy", 1.0)


def test_policy_keys_cover_the_grid_without_duplicating_alpha_free_heuristics():
    keys = policy_keys(TIERS, (0.0, 0.5))
    assert keys[:6] == [
        "static-a000",
        "tuned-a000",
        "defended-a000",
        "surge-a000",
        "linear-a000",
        "linear-a050",
    ]
    assert "ppo-robust-a050" in keys and "ppo-baseline-a000" in keys
    assert len(keys) == 1 + 1 + 1 + 1 + 2 + 4 * 2 * 2
    assert not any(parse_policy_key(k).mode in ABLATION_MODES for k in keys)


def test_policy_keys_add_the_charged_modes_for_the_ablation_tier_only():
    plain, ablated = policy_keys(TIERS, (0.0, 0.5)), policy_keys(TIERS, (0.0, 0.5), "dqn")
    added = sorted(set(ablated) - set(plain))
    assert added == [
        "dqn-charged-a000",
        "dqn-charged-a050",
        "dqn-robustcharged-a000",
        "dqn-robustcharged-a050",
    ]
    assert set(plain) < set(ablated) and len(set(ablated)) == len(ablated)


@pytest.mark.parametrize("ablation_tier", ["linear", "a2c", "sarsa"])
def test_policy_keys_reject_an_ablation_tier_that_is_not_a_trained_learnable_tier(ablation_tier):
    with pytest.raises(ValueError, match="ablation tier"):
        policy_keys(("static", "linear", "dqn"), (0.5,), ablation_tier)


@pytest.mark.parametrize(
    ("key", "twin"),
    [
        ("ppo-robust-a030", "ppo-baseline-a030"),
        ("dqn-robustcharged-a050", "dqn-charged-a050"),
        ("ppo-baseline-a030", None),
        ("dqn-charged-a050", None),
        ("static-a000", None),
    ],
)
def test_baseline_twin_drops_the_adversary_and_keeps_lambda(key, twin):
    assert baseline_twin(key) == twin
