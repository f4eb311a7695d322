"""Policy partition keys: `<tier>[-<mode>]-a<alpha·100>` (DESIGN §4, e.g. `ppo-robust-a030`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from phantom_assets.lake import alpha_key

HEURISTIC_TIERS: tuple[str, ...] = ("static", "surge", "linear")
LEARNABLE_TIERS: tuple[str, ...] = ("qtable", "ppo", "a2c", "dqn")
SB3_TIERS: tuple[str, ...] = ("ppo", "a2c", "dqn")
TIERS: tuple[str, ...] = HEURISTIC_TIERS + LEARNABLE_TIERS
MODES: tuple[str, ...] = ("baseline", "robust")
HEURISTIC_MODE = "heuristic"
"""The `mode` column value of heuristic tiers, which train in no mode (keys carry none)."""
ALPHA_FREE_TIERS: tuple[str, ...] = ("static", "surge")
"""Tiers that learn nothing from the market: one key each, at the first training α."""

_KEY = re.compile(r"^(?P<tier>[a-z0-9]+)(?:-(?P<mode>[a-z]+))?-a(?P<alpha>\d{3})$")


@dataclass(frozen=True)
class PolicyKey:
    """A parsed policy key.

    Attributes:
        tier: one of `TIERS`.
        mode: "baseline" | "robust" for learnable tiers, `HEURISTIC_MODE` for heuristics.
        alpha: the training contamination level in [0, 1] (a multiple of 0.01).
    """

    tier: str
    mode: str
    alpha: float

    @property
    def key(self) -> str:
        """The key string (inverse of `parse_policy_key`)."""
        mode = None if self.mode == HEURISTIC_MODE else self.mode
        return policy_key(self.tier, mode, self.alpha)


def check_tier_mode(tier: str, mode: str | None) -> None:
    """Raise ValueError unless `mode` fits `tier` (heuristics: None, learnable: a mode)."""
    if tier not in TIERS:
        raise ValueError(f"unknown policy tier {tier!r}; choose one of {TIERS}")
    if tier in HEURISTIC_TIERS and mode not in (None, HEURISTIC_MODE):
        raise ValueError(f"heuristic tier {tier!r} has no mode, got mode {mode!r}")
    if tier in LEARNABLE_TIERS and mode not in MODES:
        raise ValueError(f"tier {tier!r} needs a mode in {MODES}, got {mode!r}")


def policy_key(tier: str, mode: str | None, alpha: float) -> str:
    """Key of a policy, e.g. `policy_key("ppo", "robust", 0.3) == "ppo-robust-a030"`.

    Args:
        tier: one of `TIERS`.
        mode: "baseline" | "robust" for learnable tiers; None for heuristics.
        alpha: training α, a multiple of 0.01 in [0, 1].
    """
    check_tier_mode(tier, mode)
    code = alpha_key(alpha)
    return f"{tier}-{code}" if tier in HEURISTIC_TIERS else f"{tier}-{mode}-{code}"


def parse_policy_key(key: str) -> PolicyKey:
    """Inverse of `policy_key`; raises ValueError naming a malformed key."""
    match = _KEY.match(key)
    if match is None:
        raise ValueError(f"malformed policy key {key!r}; expected e.g. 'ppo-robust-a030'")
    tier, mode = match["tier"], match["mode"]
    check_tier_mode(tier, mode)
    alpha = int(match["alpha"]) / 100
    if alpha > 1.0:
        raise ValueError(f"policy key {key!r} has alpha {alpha} > 1")
    return PolicyKey(tier, mode or HEURISTIC_MODE, alpha)


def baseline_twin(key: str) -> str | None:
    """The baseline-mode key of a robust policy (same tier and training α), else None."""
    parsed = parse_policy_key(key)
    return policy_key(parsed.tier, "baseline", parsed.alpha) if parsed.mode == "robust" else None


def policy_keys(tiers: Sequence[str], train_alphas: Sequence[float]) -> list[str]:
    """The policy partition grid: every learnable tier × mode × α, heuristics × α.

    Tiers in `ALPHA_FREE_TIERS` ignore α, so they get one key at the first α (evaluating identical
    policies under several keys would duplicate configurations, pitfall §10.6).
    """
    if not train_alphas:
        raise ValueError("train_alphas must not be empty")
    keys: list[str] = []
    for tier in tiers:
        check_tier_mode(tier, None if tier in HEURISTIC_TIERS else MODES[0])
        alphas = train_alphas[:1] if tier in ALPHA_FREE_TIERS else train_alphas
        modes: tuple[str | None, ...] = (None,) if tier in HEURISTIC_TIERS else MODES
        keys.extend(policy_key(tier, mode, a) for mode in modes for a in alphas)
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate policy keys from tiers {tiers!r} and alphas {train_alphas!r}")
    return keys
