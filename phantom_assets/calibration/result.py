"""The one record every calibration study returns (docs/statistics.md#calibration-studies).

A study simulates a procedure many times under a named layout and reports either its rejection
rate (a test under a null: must be <= level + tolerance) or its coverage (an interval: must be
>= nominal - tolerance). `phantom bench calibration` prints these as JSON lines; the statistics
tests assert on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["CalibrationResult", "PowerResult", "binomial_se"]


def binomial_se(rate: float, n_reps: int) -> float:
    """Standard error of a Monte Carlo proportion `rate` over `n_reps` replications."""
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    return math.sqrt(max(rate * (1.0 - rate), 0.0) / n_reps)


@dataclass(frozen=True)
class CalibrationResult:
    """One procedure under one layout.

    Attributes:
        procedure: What was simulated (e.g. "gate_sign_flip", "separability_p").
        layout: The named null / data layout (e.g. "humans_5_agents_1").
        level: Nominal level of a test (alpha) or nominal coverage of an interval.
        n_reps: Monte Carlo replications.
        rejection_rate: Share of replications that rejected (tests); None for intervals.
        coverage: Share of replications whose interval held the target (intervals); else None.
    """

    procedure: str
    layout: str
    level: float
    n_reps: int
    rejection_rate: float | None = None
    coverage: float | None = None

    def __post_init__(self) -> None:
        if (self.rejection_rate is None) == (self.coverage is None):
            raise ValueError(
                "give exactly one of rejection_rate (a test) or coverage (an interval)"
            )

    @property
    def holds(self) -> bool:
        """Within 3 binomial SEs of nominal: rate <= level + 3 SE, or coverage >= level - 3 SE."""
        if self.rejection_rate is not None:
            tol = 3.0 * binomial_se(self.level, self.n_reps)
            return self.rejection_rate <= self.level + tol
        tol = 3.0 * binomial_se(self.level, self.n_reps)
        return self.coverage is not None and self.coverage >= self.level - tol

    def to_dict(self) -> dict[str, Any]:
        """JSON line payload: `procedure, layout, level, rejection_rate|coverage, n_reps, holds`."""
        value = (
            {"rejection_rate": self.rejection_rate}
            if self.rejection_rate is not None
            else {"coverage": self.coverage}
        )
        return {
            "procedure": self.procedure,
            "layout": self.layout,
            "level": self.level,
            **value,
            "n_reps": self.n_reps,
            "holds": self.holds,
        }


@dataclass(frozen=True)
class PowerResult:
    """Rejection rate of a test off its null: its power (reported; no level applies)."""

    procedure: str
    layout: str
    level: float
    n_reps: int
    power: float

    def to_dict(self) -> dict[str, Any]:
        """JSON line payload."""
        return {
            "procedure": self.procedure,
            "layout": self.layout,
            "level": self.level,
            "power": self.power,
            "n_reps": self.n_reps,
        }
