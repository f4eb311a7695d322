"""Shopping tasks the simulated subjects pursue (budget traveller, honeymoon suite, ...).

A task fixes what a subject wants (preferred products), what it can pay (budget), how it narrows
the listing (weights over the filter events) and which travel dates it looks at (`dateIndex`
range); whether it buys is the demand's (`simulate.demand`). Humans and agents draw tasks from the
same pool, so the task mix never separates them; only how they pursue the task does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.constants import FILTER_EVENTS
from phantom_assets.simulate.catalog import Catalog, catalog_for

__all__ = ["TASKS", "Task", "task_utilities", "tasks_for"]


@dataclass(frozen=True)
class Task:
    """A goal-driven shopping task.

    Attributes:
        task_id: Stable id written to `xp_task_id`.
        store: Store the task is pursued in.
        preferred: Product ids that fit the goal.
        budget: Most the subject pays for the offer (EUR).
        filter_weights: Relative use of each event in `constants.FILTER_EVENTS`.
        date_range: Inclusive (low, high) range of the `dateIndex` the subject searches.
        weight: Relative popularity of the task in its store.
    """

    task_id: str
    store: str
    preferred: tuple[str, ...]
    budget: float
    filter_weights: tuple[float, float, float, float, float]
    date_range: tuple[int, int]
    weight: float = 1.0


# filter_weights order: search, filter_for_date, filter_for_amenities, filter_for_price, sort_change
TASKS: tuple[Task, ...] = (
    Task(
        "budget_traveller",
        "hotel",
        ("R01", "R02", "R03"),
        180.0,
        (1.0, 1.0, 0.3, 3.0, 2.0),
        (0, 30),
        1.5,
    ),
    Task(
        "honeymoon_suite",
        "hotel",
        ("R07", "R08", "R10"),
        1000.0,
        (1.0, 1.0, 3.0, 0.3, 0.5),
        (10, 60),
    ),
    Task("business_trip", "hotel", ("R09", "R01", "R06"), 300.0, (1.5, 3.0, 0.8, 0.5, 0.5), (0, 7)),
    Task("family_vacation", "hotel", ("R05", "R03"), 450.0, (1.0, 1.5, 2.0, 1.5, 1.0), (14, 90)),
    Task(
        "weekend_getaway", "hotel", ("R02", "R04", "R06"), 320.0, (1.0, 2.5, 1.0, 1.0, 1.0), (3, 10)
    ),
    Task(
        "last_minute_flight",
        "airline",
        ("F02", "F08", "F05", "F10"),
        700.0,
        (1.5, 3.0, 0.3, 0.8, 1.0),
        (0, 2),
        1.2,
    ),
    Task(
        "budget_flight",
        "airline",
        ("F01", "F08", "F02"),
        150.0,
        (1.0, 1.0, 0.2, 3.0, 2.5),
        (7, 60),
        1.5,
    ),
    Task("business_class", "airline", ("F05", "F06"), 1500.0, (1.0, 1.5, 2.0, 0.3, 0.5), (1, 21)),
    Task(
        "family_round_trip",
        "airline",
        ("F03", "F04", "F09"),
        450.0,
        (1.0, 2.0, 1.0, 1.5, 1.0),
        (21, 120),
    ),
    Task(
        "flexible_fare",
        "airline",
        ("F03", "F06", "F10"),
        1300.0,
        (1.0, 1.5, 1.5, 0.5, 1.0),
        (0, 45),
    ),
)
assert all(len(t.filter_weights) == len(FILTER_EVENTS) for t in TASKS)


def tasks_for(store: str) -> tuple[Task, ...]:
    """Return the tasks of `store` in a fixed order.

    Raises:
        ValueError: if the store has no tasks (unknown store).
    """
    found = tuple(t for t in TASKS if t.store == store)
    if not found:
        raise ValueError(f"no tasks for store {store!r}")
    return found


def task_utilities(tasks: tuple[Task, ...], catalog: Catalog) -> tuple[np.ndarray, np.ndarray]:
    """Utility and affordability of every product for every task.

    Utility = 2 for a preferred product, minus the price relative to the budget, so a subject
    prefers fitting, cheaper offers.

    Args:
        tasks: Tasks of one store.
        catalog: That store"s catalog.

    Returns:
        `(utility, affordable)`, both shaped (n_tasks, n_products).
    """
    prices = catalog.base_prices
    budgets = np.array([t.budget for t in tasks])
    preferred = np.array(
        [[p.product_id in t.preferred for p in catalog.products] for t in tasks], dtype=bool
    )
    utility = 2.0 * preferred - prices[None, :] / budgets[:, None]
    return utility, prices[None, :] <= budgets[:, None]


def _check_catalog_ids() -> None:
    """Every preferred id of every task exists in its store"s catalog (import-time guard)."""
    for task in TASKS:
        catalog = catalog_for(task.store)
        for product_id in task.preferred:
            catalog.index_of(product_id)


_check_catalog_ids()
