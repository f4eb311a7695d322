"""Trajectory encoding into transitions over KERNEL_STATES."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.constants import END_TOKEN, KERNEL_STATES, START_TOKEN
from phantom_assets.fingerprint import encode_trajectories

IDX = {s: i for i, s in enumerate(KERNEL_STATES)}


def _pairs(t, session: int) -> list[tuple[str, str]]:
    mask = t.session == session
    return [
        (KERNEL_STATES[a], KERNEL_STATES[b]) for a, b in zip(t.src[mask], t.dst[mask], strict=True)
    ]


def test_encode_trajectories_adds_start_and_end_around_each_session() -> None:
    t = encode_trajectories([["page_view", "search", "search"], ["checkout_start"]])
    assert _pairs(t, 0) == [
        (START_TOKEN, "page_view"),
        ("page_view", "search"),
        ("search", "search"),
        ("search", END_TOKEN),
    ]
    assert _pairs(t, 1) == [(START_TOKEN, "checkout_start"), ("checkout_start", END_TOKEN)]
    assert t.n_events.tolist() == [3, 1]
    assert t.position.tolist() == [0, 1, 2, 3, 0, 1]
    assert t.n_transitions == int((t.n_events + 1).sum())


def test_encode_trajectories_maps_an_empty_session_to_start_end() -> None:
    t = encode_trajectories(pl.Series([[], ["search"], []], dtype=pl.List(pl.String)))
    assert _pairs(t, 0) == [(START_TOKEN, END_TOKEN)]
    assert _pairs(t, 2) == [(START_TOKEN, END_TOKEN)]
    assert t.session.tolist() == [0, 1, 1, 2]


def test_encode_trajectories_of_no_sessions_is_empty() -> None:
    t = encode_trajectories(pl.Series([], dtype=pl.List(pl.String)))
    assert t.n_sessions == 0 and t.n_transitions == 0


def test_encode_trajectories_names_an_unknown_event() -> None:
    with pytest.raises(ValueError, match="add_to_cart"):
        encode_trajectories([["page_view", "add_to_cart"]])


@pytest.mark.parametrize("token", [START_TOKEN, END_TOKEN])
def test_encode_trajectories_rejects_explicit_start_end_tokens(token: str) -> None:
    with pytest.raises(ValueError, match="unknown event"):
        encode_trajectories([[token, "search"]])


def test_encode_trajectories_rejects_null_trajectories_and_events() -> None:
    with pytest.raises(ValueError, match="session 1 is null"):
        encode_trajectories(pl.Series([["search"], None], dtype=pl.List(pl.String)))
    with pytest.raises(ValueError, match="null event"):
        encode_trajectories(pl.Series([["search", None]], dtype=pl.List(pl.String)))


def test_select_sessions_renumbers_and_keeps_order() -> None:
    t = encode_trajectories([["search"], ["page_view", "search"], ["sort_change"]])
    sub = t.select_sessions(np.array([False, True, True]))
    assert sub.n_events.tolist() == [2, 1]
    assert sub.session.tolist() == [0, 0, 0, 1, 1]
    assert KERNEL_STATES[sub.dst[0]] == "page_view"
