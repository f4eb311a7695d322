"""Best fixed actions on a continuous action space (docs/method.md#the-action-grid).

A coarse action grid manufactures gains: on the v3 demo a defended action beat the best
undefended *grid* action by 0.2-0.7% of profit, and by at most 0.07% (every held-out interval
covering 0) once the undefended store could re-tune on a finer grid. So every "best" action the
pipeline compares with -- the best undefended response, the best defended action, the oracle,
the ledger's -- is found on the continuous box of `ActionBox` by refinement: the starting grid,
then the 3 × 3 × 3 neighbourhood of the best action at the grid's spacing, moving to the best
neighbour, halving the spacing (a refinement) whenever the best stays, until the spacing is at
most 1/16 of the grid's (`MIN_HALVINGS`) and two successive refinements changed the objective by
less than `TOLERANCE` (0.1%) of its value. Every evaluation is on the same
episode seeds (common random numbers: `oracle.action_totals`).

`centred_grid` then builds the spec's action grid around the refined optima, so the oracle's best
grid actions and the learned tiers' action spaces contain them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.market.columns import Column
from phantom_assets.market.oracle import (
    ORACLE_SCHEMA,
    action_totals,
    check_grid,
    fixed_action_totals,
    seed_t_interval,
)
from phantom_assets.market.response import stress_alphas
from phantom_assets.market.spec import MarketSpec

__all__ = [
    "FAMILIES",
    "TOLERANCE",
    "ActionBox",
    "Objective",
    "Optimum",
    "action_box",
    "best_action",
    "cell_objective",
    "centre_on_optima",
    "centred_grid",
    "market_oracle",
    "nearest_action",
    "refine",
    "stress_objective",
]

TOLERANCE = 1e-3
"""Refinement stops when two successive refinements change the objective by less than this."""
MAX_ROUNDS = 80
MIN_HALVINGS = 4
"""Refinements before the tolerance may stop it: a spacing of 1/16 of the starting grid's (an
optimum between two coarse grid points is found even when neither neighbour beats the start)."""
LEVEL_SPREAD = (0.9, 1.1)
"""The centred grid's levels around the best undefended level (besides the optima themselves)."""
MERGE = 0.02
"""Grid values within 2% of one already on the grid are merged into it."""
FAMILIES: dict[str, tuple[bool, bool, bool]] = {
    "uniform": (True, False, False),
    "undefended": (True, True, False),
    "defended": (True, True, True),
}
"""Which of (level, m, δ) each family of actions optimizes (the others stay at 0)."""
Objective = Callable[[np.ndarray], np.ndarray]
"""(n, 3) actions (level, m, δ) -> (n,) objective values, all on the same draws."""


@dataclass(frozen=True)
class ActionBox:
    """The continuous action space: bounds of the level, the markup m and the strength δ."""

    level: tuple[float, float]
    markup: tuple[float, float]
    detector: tuple[float, float]

    @property
    def bounds(self) -> np.ndarray:
        """(3, 2) lower and upper bound per axis."""
        return np.array([self.level, self.markup, self.detector], dtype=np.float64)

    def on_edge(self, action: Sequence[float], free: Sequence[bool]) -> bool:
        """Whether a free coordinate of `action` sits on the box's boundary (an optimum there
        may lie outside it); δ = 0 and m = 0 are natural bounds and do not count."""
        low, high = self.bounds.T
        at_high = np.isclose(action, high, rtol=1e-9, atol=1e-9)
        at_low = np.isclose(action, low, rtol=1e-9, atol=1e-9) & (low > 0)
        return bool(np.any((at_high | at_low) & np.asarray(free)))


def action_box(spec: MarketSpec) -> ActionBox:
    """The levels between the marginal cost and the quote cap; markups up to four times the
    store's own (at least 1); δ up to twice the grid's largest (a flagged session quoted as twice
    the reference engagement)."""
    top = max(4.0 * spec.store_markup, 1.0)
    return ActionBox(
        (spec.cost_share, spec.price_cap), (0.0, top), (0.0, 2.0 * max(spec.detector_strengths))
    )


@dataclass(frozen=True)
class Optimum:
    """A refined best action.

    Attributes:
        action: (level, m, δ).
        value: its objective.
        rounds: refinement rounds.
        evaluations: objective evaluations (actions).
        last_change: relative change of the objective in the last round.
        on_edge: a free coordinate is on the box's boundary.
    """

    action: tuple[float, float, float]
    value: float
    rounds: int
    evaluations: int
    last_change: float
    on_edge: bool


def _start_grid(spec: MarketSpec, free: Sequence[bool]) -> np.ndarray:
    """The spec's grid actions of a family (fixed coordinates at 0; δ > 0 when δ is free)."""
    levels = spec.base_levels
    markups = spec.markups if free[1] else (0.0,)
    deltas = tuple(d for d in spec.detector_strengths if d > 0) if free[2] else (0.0,)
    grid = np.array(np.meshgrid(levels, markups, deltas or (0.0,), indexing="ij"))
    return np.unique(grid.reshape(3, -1).T, axis=0)


def _spacing(grid: np.ndarray, box: ActionBox, free: Sequence[bool]) -> np.ndarray:
    """The start grid's spacing per free axis (a box quarter where it has one value)."""
    steps = np.zeros(3)
    for axis in np.flatnonzero(free):
        values = np.unique(grid[:, axis])
        width = float(np.diff(box.bounds[axis])[0])
        steps[axis] = float(np.median(np.diff(values))) if values.size > 1 else width / 4.0
    return steps


def refine(
    objective: Objective,
    box: ActionBox,
    start: np.ndarray,
    free: Sequence[bool],
    tolerance: float = TOLERANCE,
) -> Optimum:
    """Refine the best of `start` (module docstring).

    Args:
        objective: what to maximize.
        box: the action space.
        start: (n, 3) starting actions (inside `box` after clipping).
        free: per axis, whether it is optimized (a fixed one keeps the start's values).
        tolerance: relative change below which two successive refinements stop it.
    """
    low, high = box.bounds.T
    grid = np.clip(np.asarray(start, dtype=np.float64), low, high)
    values = objective(grid)
    evaluations = int(grid.shape[0])
    best = int(np.argmax(values))
    action, value = grid[best], float(values[best])
    step = _spacing(grid, box, free)
    offsets = (
        np.array(np.meshgrid(*[(-1.0, 0.0, 1.0) if f else (0.0,) for f in free], indexing="ij"))
        .reshape(3, -1)
        .T
    )
    offsets = offsets[np.any(offsets != 0, axis=1)]
    quiet, rounds, halvings, change = 0, 0, 0, math.inf
    settled = value  # the objective when the last refinement (halving) began
    while rounds < MAX_ROUNDS:  # a few dozen rounds on the demo
        rounds += 1
        candidates = np.unique(np.clip(action + offsets * step, low, high), axis=0)
        candidates = candidates[np.any(candidates != action, axis=1)]
        scores = objective(candidates) if candidates.size else np.zeros(0)
        evaluations += int(candidates.shape[0])
        if scores.size and float(scores.max()) > value:
            action, value = candidates[int(np.argmax(scores))], float(scores.max())
            continue
        # No neighbour at this spacing is better: this refinement is done.
        change = (value - settled) / max(abs(value), 1e-12)
        settled, halvings = value, halvings + 1
        quiet = quiet + 1 if change < tolerance else 0
        if quiet >= 2 and halvings >= MIN_HALVINGS:
            break
        step = step / 2.0
    chosen = (float(action[0]), float(action[1]), float(action[2]))
    return Optimum(chosen, value, rounds, evaluations, change, box.on_edge(chosen, free))


def best_action(
    spec: MarketSpec,
    objective: Objective,
    family: str,
    box: ActionBox | None = None,
    also: Sequence[tuple[float, float, float]] = (),
) -> Optimum:
    """The refined best action of a family (`FAMILIES`), from the spec's grid and the actions
    `also` (e.g. the best undefended action, so a defended search never ends below it: δ = 0 is
    inside the defended family)."""
    free = FAMILIES[family]
    start = np.vstack([_start_grid(spec, free), *(np.asarray(a, float)[None] for a in also)])
    return refine(objective, box or action_box(spec), start, free)


def _profits(
    spec: MarketSpec,
    alphas: np.ndarray,
    k: int,
    seeds: Sequence[int],
    detector: str,
    actions: np.ndarray,
    steps: int | None,
) -> np.ndarray:
    """(n, alphas) mean episode profit of `actions` over `seeds`."""
    values = [tuple(a) for a in actions]
    totals = action_totals(spec, values, alphas, k, seeds, detector, steps=steps)
    return totals[..., Column.PROFIT].mean(axis=1)


def stress_objective(
    spec: MarketSpec,
    alpha_grid: Sequence[float],
    radius: float,
    k: int,
    seeds: Sequence[int],
    detector: str = "fitted",
    steps: int | None = None,
) -> Objective:
    """The gate's stress objective: per α0 of the grid the worst mean episode profit over its
    band α0 ± r, averaged over α0 (`response.BandProfits.objective`)."""
    bands = [stress_alphas(a0, radius) for a0 in alpha_grid]
    alphas = np.unique(np.concatenate(bands))
    columns = [np.searchsorted(alphas, band) for band in bands]

    def objective(actions: np.ndarray) -> np.ndarray:
        mean = _profits(spec, alphas, k, seeds, detector, actions, steps)
        return np.mean([mean[:, c].min(axis=1) for c in columns], axis=0)

    return objective


def cell_objective(
    spec: MarketSpec,
    alpha: float,
    k: int,
    seeds: Sequence[int],
    detector: str = "fitted",
    steps: int | None = None,
) -> Objective:
    """Mean episode profit at one (α, K)."""
    alphas = np.array([float(alpha)])
    return lambda actions: _profits(spec, alphas, k, seeds, detector, actions, steps)[:, 0]


def centred_grid(spec: MarketSpec, undefended: Optimum, defended: Optimum) -> MarketSpec:
    """The spec with its action grid built around the refined optima: levels {1, the
    undefended level × `LEVEL_SPREAD`, both optima's levels}, markups {0, the store's own, both
    optima's}, strengths {0, the defended optimum's, the grid's largest} -- so the store's own
    pricing, the best undefended response and the best defended action are grid actions (the
    tuned-static tier, the gate and the learned tiers can play them)."""
    level_u, markup_u, _ = undefended.action
    level_d, markup_d, delta_d = defended.action

    def grid(*values: float) -> tuple[float, ...]:
        """The distinct values, the first of any two within `MERGE` of each other kept (the
        store's own and the optima come first)."""
        kept: list[float] = []
        for value in values:
            if all(abs(value - other) > MERGE * max(abs(other), 1e-9) for other in kept):
                kept.append(round(float(value), 6))
        return tuple(sorted(kept))

    levels = grid(1.0, level_u, level_d, *(level_u * f for f in LEVEL_SPREAD))
    markups = grid(spec.store_markup, markup_u, markup_d, 0.0)
    deltas = grid(0.0, delta_d, max(spec.detector_strengths))
    if delta_d > 0 and delta_d not in deltas:  # merged into 0: keep the optimum's own δ
        deltas = tuple(sorted({*deltas, round(float(delta_d), 6)}))
    return dataclasses.replace(spec, base_levels=levels, markups=markups, detector_strengths=deltas)


def centre_on_optima(
    spec: MarketSpec, alpha_grid: Sequence[float], radius: float, seeds: Sequence[int]
) -> tuple[MarketSpec, dict[str, Optimum]]:
    """The compiled spec with its grid centred (`centred_grid`) on its best undefended response
    and best defended action, both refined on the gate's stress objective at the nominal K over
    `seeds` (the selection seeds), and those two optima by family."""
    stress = stress_objective(spec, alpha_grid, radius, spec.agents.nominal_k, seeds)
    undefended = best_action(spec, stress, "undefended")
    defended = best_action(spec, stress, "defended", also=[undefended.action])
    optima = {"undefended": undefended, "defended": defended}
    return centred_grid(spec, undefended, defended), optima


def nearest_action(spec: MarketSpec, action: Sequence[float]) -> int:
    """The grid action nearest (level, m, δ), axis by axis."""
    parts = [
        int(np.argmin(np.abs(np.asarray(values) - x)))
        for values, x in zip(
            (spec.base_levels, spec.markups, spec.detector_strengths), action, strict=True
        )
    ]
    return spec.action_index(*parts)


def market_oracle(
    spec: MarketSpec,
    alphas: Sequence[float],
    ks: Sequence[int],
    seeds: Sequence[int],
    steps: int | None = None,
) -> pl.DataFrame:
    """Best fixed action per (α, K), refined on the continuous action space (`best_action`,
    family "defended": any level, markup and δ) over `seeds`, its mean episode profit and
    standard error over seeds (the unit), its nearest grid action, whether it sits on the action
    box's edge, and the undefended engine's mean profit on the same draws: the clairvoyant bound
    every policy's regret is measured against (`oracle.ORACLE_SCHEMA`), sorted by k then α."""
    check_grid(alphas, ks, seeds)
    box, rows = action_box(spec), []
    for k in sorted({int(k) for k in ks}):  # the env's draws depend on K_max = K
        for alpha in alphas:  # a handful of cells
            objective = cell_objective(spec, alpha, k, seeds, steps=steps)
            best = best_action(spec, objective, "defended", box)
            totals = action_totals(spec, [best.action], [alpha], k, seeds, steps=steps)[0, :, 0]
            store = fixed_action_totals(
                spec, [spec.undefended_action], [alpha], k, seeds, steps=steps
            )
            mean, se, _, _, n = seed_t_interval(totals[:, Column.PROFIT])
            rows.append(
                {
                    "alpha": float(alpha),
                    "k": k,
                    "action": nearest_action(spec, best.action),
                    "level": best.action[0],
                    "markup": best.action[1],
                    "delta": best.action[2],
                    "profit": float(mean),
                    "profit_se": float(se),
                    "n_seeds": int(n),
                    "undefended_profit": float(store[0, :, 0, Column.PROFIT].mean()),
                    "on_edge": best.on_edge,
                }
            )
    return pl.DataFrame(rows, schema=ORACLE_SCHEMA).sort("k", "alpha")
