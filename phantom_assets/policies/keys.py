"""Policy partition keys `<tier>[-<mode>]-a<alpha·100>` (docs/architecture.md#partitions, e.g.
`ppo-robust-a030`) and
the training modes of the learnable tiers.

The modes are the λ × adversary factorial (docs/method.md#policy-tiers): λ (the leak charged in the
reward) and the robust adversary over (α, K) are separate switches, so their effects can be
separated. Every learnable tier trains `baseline` and `robust` (λ = 0); the ablation tier also
trains the two charged modes (λ = the configured ablation λ).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from phantom_assets.constants import HEURISTIC_TIERS, LEARNABLE_TIERS
from phantom_assets.lake import alpha_key

SB3_TIERS: tuple[str, ...] = ("ppo", "a2c", "dqn")
TIERS: tuple[str, ...] = HEURISTIC_TIERS + LEARNABLE_TIERS
HEURISTIC_MODE = "heuristic"
"""The `mode` column value of heuristic tiers, which train in no mode (keys carry none)."""
ALPHA_FREE_TIERS: tuple[str, ...] = ("static", "tuned", "defended", "surge")
"""Tiers that learn nothing from the market: one key each, at the first training α."""


@dataclass(frozen=True)
class TrainingMode:
    """How a learnable mode's training market is built.

    Attributes:
        robust: the step executes at the worst (α, K) candidate of the ambiguity set.
        charged: the reward charges the leak at the ablation λ (else λ = 0: measured only).
    """

    robust: bool
    charged: bool

    def lam(self, ablation_lam: float) -> float:
        """The λ this mode trains with, given the ablation λ of the charged modes."""
        return float(ablation_lam) if self.charged else 0.0


TRAINING_MODES: dict[str, TrainingMode] = {
    "baseline": TrainingMode(robust=False, charged=False),
    "robust": TrainingMode(robust=True, charged=False),
    "charged": TrainingMode(robust=False, charged=True),
    "robustcharged": TrainingMode(robust=True, charged=True),
}
"""Every learnable mode: name -> (adversary, λ source)."""
MODES: tuple[str, ...] = tuple(name for name, m in TRAINING_MODES.items() if not m.charged)
"""The modes every learnable tier trains (λ = 0): baseline, robust."""
ABLATION_MODES: tuple[str, ...] = tuple(name for name, m in TRAINING_MODES.items() if m.charged)
"""The modes only the ablation tier trains (λ > 0, without and with the adversary): charged,
robustcharged."""
_MODE_NAMES: dict[TrainingMode, str] = {mode: name for name, mode in TRAINING_MODES.items()}
REFERENCE_MODES: dict[str, str] = {
    name: _MODE_NAMES[
        dataclasses.replace(mode, robust=False)
        if mode.robust
        else dataclasses.replace(mode, charged=False)
    ]
    for name, mode in TRAINING_MODES.items()
    if mode.robust or mode.charged
}
"""Defended mode -> the mode with one switch off: the adversary when it is on, else the charge
(robust -> baseline, robustcharged -> charged, charged -> baseline)."""
NOMINAL_TWINS: dict[str, str] = {
    name: twin for name, twin in REFERENCE_MODES.items() if TRAINING_MODES[name].robust
}
"""Robust mode -> the mode with the same λ and no adversary (robust -> baseline, robustcharged
-> charged)."""


def mode_market(mode: str, ablation_lam: float) -> tuple[bool, float]:
    """(robust, λ) of the market `mode` trains on; heuristics: nominal with λ = 0."""
    if mode == HEURISTIC_MODE:
        return False, 0.0
    if mode not in TRAINING_MODES:
        raise ValueError(f"unknown training mode {mode!r}; choose one of {tuple(TRAINING_MODES)}")
    setting = TRAINING_MODES[mode]
    return setting.robust, setting.lam(ablation_lam)


_KEY = re.compile(r"^(?P<tier>[a-z0-9]+)(?:-(?P<mode>[a-z]+))?-a(?P<alpha>\d{3})$")


@dataclass(frozen=True)
class PolicyKey:
    """A parsed policy key.

    Attributes:
        tier: one of `TIERS`.
        mode: a `TRAINING_MODES` name for learnable tiers, `HEURISTIC_MODE` for heuristics.
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
    if tier in LEARNABLE_TIERS and mode not in TRAINING_MODES:
        raise ValueError(f"tier {tier!r} needs a mode in {tuple(TRAINING_MODES)}, got {mode!r}")


def policy_key(tier: str, mode: str | None, alpha: float) -> str:
    """Key of a policy, e.g. `policy_key("ppo", "robust", 0.3) == "ppo-robust-a030"`.

    Args:
        tier: one of `TIERS`.
        mode: a `TRAINING_MODES` name for learnable tiers; None for heuristics.
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
    """The nominal twin of a robust policy: same tier, training α and λ, no adversary (robust ->
    baseline, robustcharged -> charged); None for nominal modes and heuristics."""
    parsed = parse_policy_key(key)
    twin = NOMINAL_TWINS.get(parsed.mode)
    return None if twin is None else policy_key(parsed.tier, twin, parsed.alpha)


def policy_keys(
    tiers: Sequence[str], train_alphas: Sequence[float], ablation_tier: str | None = None
) -> list[str]:
    """The policy partition grid: every learnable tier × mode × α, heuristics × α, and the
    charged modes of `ablation_tier` × α.

    Tiers in `ALPHA_FREE_TIERS` ignore α, so they get one key at the first α (evaluating identical
    policies under several keys would duplicate configurations, pitfall 6, docs/method.md).

    Raises:
        ValueError: no α, an unknown tier, or an ablation tier that is not a trained learnable
            tier.
    """
    if not train_alphas:
        raise ValueError("train_alphas must not be empty")
    if ablation_tier is not None and (
        ablation_tier not in tiers or ablation_tier not in LEARNABLE_TIERS
    ):
        raise ValueError(
            f"ablation tier {ablation_tier!r} must be a learnable tier among the "
            f"trained tiers {tuple(tiers)}"
        )
    keys: list[str] = []
    for tier in tiers:
        check_tier_mode(tier, None if tier in HEURISTIC_TIERS else MODES[0])
        alphas = train_alphas[:1] if tier in ALPHA_FREE_TIERS else train_alphas
        modes: tuple[str | None, ...] = (None,) if tier in HEURISTIC_TIERS else MODES
        if tier == ablation_tier:
            modes += ABLATION_MODES
        keys.extend(policy_key(tier, mode, a) for mode in modes for a in alphas)
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate policy keys from tiers {tiers!r} and alphas {train_alphas!r}")
    return keys
