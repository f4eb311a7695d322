"""The law a training episode's (α, K) is drawn from (docs/method.md#policy-tiers).

Trained at one α, a policy can do well by ignoring α̂; drawn per episode from the band the
evaluation covers, it can only do well everywhere by reading α̂. The evaluation never draws: it
resets every episode at its cell's (α, K).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.config import TRAINING_LAWS, AgentsConfig

__all__ = ["EpisodeLaw", "training_law"]


@dataclass(frozen=True)
class EpisodeLaw:
    """α uniform on `band` (law "uniform") or uniform over `grid` (law "grid"); K uniform over
    `ks`.

    Attributes:
        band: (low, high) in [0, 1], the α interval of the law.
        ks: K values (clean sessions per agent), each drawn with equal probability.
        law: one of `config.TRAINING_LAWS`.
        grid: the α values of the "grid" law (inside `band`); unused by "uniform".
    """

    band: tuple[float, float]
    ks: tuple[int, ...]
    law: str = "uniform"
    grid: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        """Validate the band, K values and law; raise ValueError naming the bad value."""
        low, high = self.band
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"the α band must satisfy 0 <= low <= high <= 1, got {self.band!r}")
        if not self.ks or any(int(k) != k or k < 1 for k in self.ks):
            raise ValueError(f"ks must be a non-empty list of K >= 1, got {self.ks!r}")
        if self.law not in TRAINING_LAWS:
            raise ValueError(f"law must be one of {TRAINING_LAWS}, got {self.law!r}")
        if self.law == "grid" and not (self.grid and all(low <= a <= high for a in self.grid)):
            raise ValueError(f"the grid law needs α values inside {self.band!r}, got {self.grid!r}")

    def draw(self, rng: np.random.Generator) -> tuple[float, int]:
        """One episode's (α, K) from `rng` (α first, then K)."""
        if self.law == "grid":
            alpha = float(self.grid[int(rng.integers(len(self.grid)))])
        else:
            alpha = float(rng.uniform(*self.band))
        return alpha, int(self.ks[int(rng.integers(len(self.ks)))])


def training_law(agents: AgentsConfig, alpha0: float) -> EpisodeLaw:
    """The training law of the policies keyed by training α `alpha0`: α from the band
    α0 ± `train_alpha_radius` ∩ [0, 1] by `train_law`, K uniform over `k_grid`.

    Raises:
        ValueError: for α0 outside [0, 1], or a grid law whose band holds no `alpha_grid` point.
    """
    if not 0.0 <= alpha0 <= 1.0:
        raise ValueError(f"alpha0 must be in [0, 1], got {alpha0!r}")
    radius = agents.train_alpha_radius
    band = (max(0.0, alpha0 - radius), min(1.0, alpha0 + radius))
    grid = tuple(a for a in agents.alpha_grid if band[0] <= a <= band[1])
    if agents.train_law == "grid" and not grid:
        raise ValueError(
            f"[agents] train_law = 'grid': no alpha_grid point lies in the training "
            f"band {band} of alpha {alpha0}; widen train_alpha_radius"
        )
    return EpisodeLaw(band, tuple(int(k) for k in agents.k_grid), agents.train_law, grid)
