"""Hand-built kernels over KERNEL_STATES for the contamination tests."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.constants import END_TOKEN, KERNEL_STATES, START_TOKEN

INDEX = {state: i for i, state in enumerate(KERNEL_STATES)}


def kernel_from(rows: dict[str, dict[str, float]]) -> np.ndarray:
    """Dense kernel from {source: {destination: weight}}; unlisted rows go straight to <end>."""
    kernel = np.zeros((len(KERNEL_STATES), len(KERNEL_STATES)))
    for source, dests in rows.items():
        for dest, weight in dests.items():
            kernel[INDEX[source], INDEX[dest]] = weight
    empty = kernel.sum(axis=1) == 0
    kernel[empty, INDEX[END_TOKEN]] = 1.0
    return kernel / kernel.sum(axis=1, keepdims=True)


@pytest.fixture
def human_kernel() -> np.ndarray:
    """Humans browse and hover."""
    return kernel_from(
        {
            START_TOKEN: {"session_start": 1.0},
            "session_start": {"page_view": 0.7, "hover_over_title": 0.3},
            "page_view": {"hover_over_title": 0.5, "view_item_page": 0.3, END_TOKEN: 0.2},
            "hover_over_title": {"page_view": 0.4, "view_item_page": 0.4, END_TOKEN: 0.2},
            "view_item_page": {"add_item_to_cart": 0.2, "page_view": 0.5, END_TOKEN: 0.3},
            "add_item_to_cart": {"checkout_start": 0.6, END_TOKEN: 0.4},
            "checkout_start": {"purchase_complete": 0.8, END_TOKEN: 0.2},
        }
    )


@pytest.fixture
def agent_kernel() -> np.ndarray:
    """Agents search and filter."""
    return kernel_from(
        {
            START_TOKEN: {"session_start": 1.0},
            "session_start": {"search": 0.8, "page_view": 0.2},
            "search": {"filter_for_price": 0.5, "view_item_page": 0.3, END_TOKEN: 0.2},
            "filter_for_price": {"search": 0.3, "view_item_page": 0.5, END_TOKEN: 0.2},
            "page_view": {"search": 0.6, END_TOKEN: 0.4},
            "view_item_page": {"search": 0.4, "add_item_to_cart": 0.1, END_TOKEN: 0.5},
            "add_item_to_cart": {"checkout_start": 0.5, END_TOKEN: 0.5},
            "checkout_start": {"purchase_complete": 0.5, END_TOKEN: 0.5},
        }
    )
