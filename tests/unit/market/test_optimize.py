"""Best fixed actions on the continuous action space (docs/method.md#the-action-grid): the
refinement finds an optimum between grid points, stops when a refinement changes the objective by
less than 0.1%, says when the optimum is on the box's edge; the grid built around the optima holds
them and the store's own pricing."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.market.optimize import (
    TOLERANCE,
    ActionBox,
    Optimum,
    action_box,
    best_action,
    cell_objective,
    centred_grid,
    refine,
)

BOX = ActionBox((0.5, 2.5), (0.0, 2.0), (0.0, 2.0))
GRID = (
    np.array(np.meshgrid((0.7, 1.0, 1.3), (0.0, 0.5, 1.0), (0.0,), indexing="ij")).reshape(3, -1).T
)


def concave(peak: tuple[float, float, float]):
    """A smooth concave objective with its maximum 100 at `peak`."""
    peak_ = np.asarray(peak)
    return lambda actions: 100.0 - 50.0 * np.sum((np.asarray(actions) - peak_) ** 2, axis=1)


def test_refinement_finds_an_optimum_between_grid_points_and_beats_the_grid():
    objective = concave((1.12, 0.37, 0.0))
    optimum = refine(objective, BOX, GRID, (True, True, False))
    assert objective(GRID).max() < optimum.value <= 100.0
    assert optimum.value >= 100.0 * (1.0 - TOLERANCE)  # within 0.1% of the best profit
    assert optimum.action[0] == pytest.approx(1.12, abs=0.04)
    assert optimum.action[1] == pytest.approx(0.37, abs=0.04)
    assert optimum.action[2] == 0.0 and optimum.last_change < TOLERANCE and not optimum.on_edge


def test_an_optimum_outside_the_box_is_reported_on_its_edge():
    optimum = refine(concave((3.0, 0.5, 0.0)), BOX, GRID, (True, True, False))
    assert optimum.action[0] == pytest.approx(2.5) and optimum.on_edge


def test_a_fixed_axis_keeps_its_start_value():
    uniform = GRID[GRID[:, 1] == 0.0]  # the uniform family: m = δ = 0, the level alone moves
    optimum = refine(concave((1.12, 0.0, 0.0)), BOX, uniform, (True, False, False))
    assert optimum.action[1:] == (0.0, 0.0)
    assert optimum.value >= 100.0 * (1.0 - TOLERANCE)  # within 0.1% of the best profit


def test_a_defended_search_started_from_the_undefended_optimum_never_ends_below_it(spec):
    seeds = (1, 2, 3)
    objective = cell_objective(spec, 0.5, 4, seeds, steps=4)
    undefended = best_action(spec, objective, "undefended")
    defended = best_action(spec, objective, "defended", also=[undefended.action])
    assert defended.value >= undefended.value
    assert undefended.action[2] == 0.0
    box = action_box(spec)
    assert box.level == (spec.cost_share, spec.price_cap)


def test_the_centred_grid_holds_the_optima_and_the_stores_own_pricing(spec):
    undefended = Optimum((1.13, 0.21, 0.0), 1.0, 3, 10, 0.0, False)
    defended = Optimum((1.21, 0.33, 0.7), 1.0, 3, 10, 0.0, False)
    grid = centred_grid(spec, undefended, defended)
    for action in (undefended.action, defended.action, (1.0, spec.store_markup, 0.0)):
        level, markup, delta = action
        assert level in grid.base_levels and markup in grid.markups
        assert delta in grid.detector_strengths
    assert grid.action_values(grid.undefended_action) == (1.0, spec.store_markup, 0.0)
    assert 0.0 in grid.markups and max(spec.detector_strengths) in grid.detector_strengths
    levels = np.asarray(grid.base_levels)
    assert np.all(np.diff(levels) / levels[:-1] > 0.02)  # near-duplicates merged
