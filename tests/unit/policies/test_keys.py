"""Policy partition keys: format, round trip, grid."""

from __future__ import annotations

import pytest

from phantom_assets.policies import (
    HEURISTIC_MODE,
    TIERS,
    parse_policy_key,
    policy_key,
    policy_keys,
)


@pytest.mark.parametrize(
    ("tier", "mode", "alpha", "key"),
    [("ppo", "robust", 0.3, "ppo-robust-a030"), ("static", None, 0.0, "static-a000"),
     ("dqn", "baseline", 1.0, "dqn-baseline-a100"),
     ("qtable", "robust", 0.05, "qtable-robust-a005")],
)  # fmt: skip
def test_policy_key_formats_tier_mode_and_alpha(tier, mode, alpha, key):
    assert policy_key(tier, mode, alpha) == key
    parsed = parse_policy_key(key)
    assert (parsed.tier, parsed.alpha) == (tier, alpha)
    assert parsed.mode == (mode or HEURISTIC_MODE)
    assert parsed.key == key


@pytest.mark.parametrize(
    ("tier", "mode", "alpha"),
    [("ppo", None, 0.3), ("static", "robust", 0.3), ("sarsa", None, 0.3), ("ppo", "robust", 0.333),
     ("ppo", "robust", 1.5)],
)  # fmt: skip
def test_policy_key_rejects_bad_tier_mode_or_alpha(tier, mode, alpha):
    with pytest.raises(ValueError, match=r"tier|mode|alpha"):
        policy_key(tier, mode, alpha)


@pytest.mark.parametrize("key", ["ppo-a030", "ppo-robust-0.3", "static-baseline-a000", "x", ""])
def test_parse_policy_key_rejects_malformed_keys(key):
    with pytest.raises(ValueError, match=r"key|mode|tier"):
        parse_policy_key(key)


def test_policy_keys_cover_the_grid_without_duplicating_alpha_free_heuristics():
    keys = policy_keys(TIERS, (0.0, 0.5))
    assert keys[:4] == ["static-a000", "surge-a000", "linear-a000", "linear-a050"]
    assert "ppo-robust-a050" in keys and "ppo-baseline-a000" in keys
    assert len(keys) == 1 + 1 + 2 + 4 * 2 * 2
    assert len(set(keys)) == len(keys)


def test_baseline_twin_maps_robust_keys_only():
    from phantom_assets.policies import baseline_twin

    assert baseline_twin("ppo-robust-a030") == "ppo-baseline-a030"
    assert baseline_twin("ppo-baseline-a030") is None
    assert baseline_twin("static-a000") is None
