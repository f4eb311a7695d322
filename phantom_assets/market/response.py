"""The best fixed responses and the stress band (docs/method.md#oracle).

The gate's baseline is the best fixed price without a detector: the δ = 0 action with the best
stress objective -- for each α0 of the grid the worst mean episode profit over its band
α0 ± r, averaged over α0 -- on the selection seeds, every action on the same draws (CRN). The best
defended fixed action (δ > 0) by the same objective on the same draws is the simplest candidate
a defence has (the tuned-defended tier).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phantom_assets.market.columns import Column
from phantom_assets.market.oracle import check_grid, fixed_action_totals
from phantom_assets.market.spec import MarketSpec

__all__ = ["BandProfits", "Response", "band_profits", "best_fixed_responses", "stress_alphas"]


def stress_alphas(alpha0: float, radius: float) -> np.ndarray:
    """The stress band {α0 − r, α0, α0 + r} ∩ [0, 1] (rounded, so α0 ± r lands on a grid α when
    it is one)."""
    if not 0 <= alpha0 <= 1 or radius < 0:
        raise ValueError(f"need alpha0 in [0, 1] and radius >= 0: {alpha0!r}, {radius!r}")
    candidates = np.round([alpha0 - radius, alpha0, alpha0 + radius], 10)
    return np.unique(candidates[(candidates >= 0) & (candidates <= 1)])


@dataclass(frozen=True)
class Response:
    """A best fixed response (docs/method.md#oracle): undefended (δ = 0, the tuned-static tier
    and the gate's baseline) or defended (δ > 0, the tuned-defended tier).

    Attributes:
        action: its action index.
        level, markup, delta: its base level, engagement markup and detector strength δ.
        objective: its stress objective on the seeds (mean over the α grid of the band's worst
            mean episode profit).
        alpha_grid, radius, k, seeds: what it was chosen over.
    """

    action: int
    level: float
    markup: float
    delta: float
    objective: float
    alpha_grid: tuple[float, ...]
    radius: float
    k: int
    seeds: tuple[int, ...]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready fields (`market_oracle/reference.json`)."""
        return dataclasses.asdict(self)

    @classmethod
    def read(cls, path: Path) -> Response:
        """The response `to_dict` wrote to `path`; a missing or malformed file fails naming it."""
        try:
            payload = json.loads(Path(path).read_text())
            if payload is None:
                raise ValueError("the market's action grid has no action of this kind")
            return cls(
                **{**payload, **{name: tuple(payload[name]) for name in ("alpha_grid", "seeds")}}
            )
        except (OSError, ValueError, TypeError, KeyError) as error:
            raise ValueError(
                f"{path}: no best fixed response ({error}); re-materialize market_oracle"
            ) from error


@dataclass(frozen=True)
class BandProfits:
    """Every fixed action's mean episode profit over the stress bands of an α grid.

    Attributes:
        alphas: (B,) the bands' α, sorted (every grid α0 is one).
        mean: (actions, B) mean episode profit over the seeds, every action on the same draws.
        bands: per grid α0, the columns of its band.
    """

    alphas: np.ndarray
    mean: np.ndarray
    bands: tuple[np.ndarray, ...]

    def objective(self) -> np.ndarray:
        """(actions,) the stress objective: per α0 the band's worst mean profit, averaged."""
        return np.mean([self.mean[:, columns].min(axis=1) for columns in self.bands], axis=0)

    def best(self, spec: MarketSpec, defended: bool) -> int | None:
        """The action with the best objective among those with δ > 0 (`defended`) or δ = 0 (ties:
        the lowest action index); None when there is none."""
        pool = [a for a in range(spec.n_actions) if (spec.action_values(a)[2] > 0.0) == defended]
        return pool[int(np.argmax(self.objective()[pool]))] if pool else None


def band_profits(
    spec: MarketSpec,
    alpha_grid: Sequence[float],
    radius: float,
    k: int,
    seeds: Sequence[int],
    steps: int | None = None,
) -> BandProfits:
    """Mean episode profit of every fixed action at every α of the stress bands α0 ± `radius`
    of `alpha_grid`, at K = `k` on `seeds` (CRN)."""
    check_grid(alpha_grid, [k], seeds)
    steps = spec.episode_steps if steps is None else steps
    bands = [stress_alphas(a0, radius) for a0 in alpha_grid]
    alphas = np.unique(np.concatenate(bands))
    totals = fixed_action_totals(spec, range(spec.n_actions), alphas, int(k), seeds, steps=steps)
    mean = totals[..., Column.PROFIT].mean(axis=1)
    return BandProfits(alphas, mean, tuple(np.searchsorted(alphas, band) for band in bands))


def best_fixed_responses(
    spec: MarketSpec,
    alpha_grid: Sequence[float],
    radius: float,
    k: int,
    seeds: Sequence[int],
    steps: int | None = None,
) -> tuple[Response, Response | None]:
    """The best undefended (δ = 0) and the best defended (δ > 0; None when the grid has no such
    action) action by the stress objective
    on `seeds` (`BandProfits.objective`: for each α0 of `alpha_grid` the worst mean episode profit
    over its stress band α0 ± `radius`, averaged over α0) -- the statistic the gate compares on,
    so no fixed action of the same kind does better by it (ties: the lowest action index).
    Every action is evaluated on the same draws."""
    profits = band_profits(spec, alpha_grid, radius, k, seeds, steps)
    objective = profits.objective()

    def response(defended: bool) -> Response | None:
        best = profits.best(spec, defended)
        if best is None:
            return None
        return Response(
            best,
            *spec.action_values(best),
            float(objective[best]),
            tuple(float(a) for a in alpha_grid),
            float(radius),
            int(k),
            tuple(int(s) for s in seeds),
        )

    undefended = response(defended=False)
    assert undefended is not None  # the grid always holds the δ = 0 engine
    return undefended, response(defended=True)
