"""Product catalogs and tasks."""

from __future__ import annotations

import dataclasses

import pytest

from phantom_assets.constants import STORES
from phantom_assets.simulate import TASKS, catalog_for, tasks_for
from phantom_assets.simulate.tasks import task_utilities


@pytest.mark.parametrize("store", STORES)
def test_catalog_has_about_ten_priced_products_with_store_attributes(store: str) -> None:
    catalog = catalog_for(store)
    assert 8 <= catalog.size <= 12
    assert len({p.product_id for p in catalog.products}) == catalog.size
    assert (catalog.base_prices > 0).all()
    for product in catalog.products:
        if store == "hotel":
            assert product.room_type and product.nights and product.nights >= 1
        else:
            assert product.cabin_class and product.flight_type and product.fare_rule


def test_catalog_products_are_frozen() -> None:
    product = catalog_for("hotel").products[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        product.base_price = 1.0  # type: ignore[misc]


def test_catalog_for_unknown_store_raises_value_error() -> None:
    with pytest.raises(ValueError, match="shop"):
        catalog_for("shop")


@pytest.mark.parametrize("store", STORES)
def test_every_task_can_afford_one_of_its_preferred_products(store: str) -> None:
    tasks = tasks_for(store)
    catalog = catalog_for(store)
    utility, affordable = task_utilities(tasks, catalog)
    assert utility.shape == affordable.shape == (len(tasks), catalog.size)
    for i, task in enumerate(tasks):
        preferred = [catalog.index_of(pid) for pid in task.preferred]
        assert affordable[i, preferred].any(), task.task_id


def test_tasks_cover_both_stores_with_unique_ids() -> None:
    assert {t.store for t in TASKS} == set(STORES)
    assert len({t.task_id for t in TASKS}) == len(TASKS)
