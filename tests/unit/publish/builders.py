"""Small synthetic publish inputs (canonical events, kernels, contaminated sessions).

Plain functions so the integration test can build the same frames without these fixtures.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from phantom_assets.schema import CANONICAL_SCHEMA

T0 = datetime(2024, 11, 30, 10, 0, tzinfo=UTC)
STATES = ("<start>", "session_start", "page_view", "add_item_to_cart", "<end>")

# (session, experiment, store, actor, label_source, [(offset_ms, event, product, price, metadata)])
SESSIONS = (
    (
        "h1",
        "xp-h",
        "hotel",
        "human",
        "experiment",
        [
            (0, "session_start", None, None, {}),
            (1500, "view_item_page", "room-7", None, {"roomType": "deluxe", "nights": 2}),
            (1600, "price_quote", "room-7", 120.5, {}),
            (
                4100,
                "hover_over_title",
                "room-7",
                None,
                {"dwellTime": 1.5, "elementText": 'Say "hi"'},
            ),
        ],
    ),
    (
        "a1",
        "xp-a",
        "hotel",
        "agent",
        "experiment",
        [
            (10, "session_start", None, None, {}),
            (20, "add_item_to_cart", "room-2", None, {"itemCount": 1, "total": 99.0}),
        ],
    ),
    (
        "a2",
        "xp-a",
        "airline",
        "agent",
        "actor_column",
        [
            (5, "search", None, None, {"flightType": "one-way", "dateIndex": 3}),
            (9, "add_item_to_cart", "fl-1", None, {"cabinClass": "economy", "price": 99.9}),
            (12, "checkout_start", "fl-1", None, {"dwellTime": "slow"}),  # uncastable dwellTime
        ],
    ),
    (
        "u1",
        None,
        "airline",
        "unknown",
        "none",
        [
            (30, "page_view", None, None, {"referrer": "https://example.org/?q=a,b"}),
        ],
    ),
)


def canonical_events() -> pl.DataFrame:
    """Ten canonical events in four sessions: two stores, human/agent/unknown, one price log."""
    rows = []
    for session, experiment, store, actor, label_source, events in SESSIONS:
        for offset, event, product, price, metadata in events:
            rows.append(
                {
                    "event_id": f"{session}-{offset}",
                    "batch_id": "2024-11-30_abc123",
                    "source_row": len(rows),
                    "session_id": session,
                    "experiment_id": experiment,
                    "store": store,
                    "ts": T0 + timedelta(milliseconds=offset),
                    "event": event,
                    "page": f"/{store}/{product or ''}",
                    "product_id": product,
                    "price": price,
                    "record_type": "price_log" if event == "price_quote" else "interaction",
                    "user_agent": "agent/1.0" if actor == "agent" else "Mozilla/5.0",
                    "metadata": json.dumps(metadata, sort_keys=True, separators=(",", ":")),
                    "actor": actor,
                    "label_source": label_source,
                }
            )
    # Reverse the rows: the published order must not depend on the input order.
    return pl.DataFrame(rows[::-1], schema=CANONICAL_SCHEMA)


def kernels(seed: int = 3) -> pl.DataFrame:
    """Row-stochastic kernels over `STATES` for hotel/airline x human/agent, with counts."""
    rng = np.random.default_rng(seed)
    frames = []
    size = len(STATES)
    for store in ("hotel", "airline"):
        for actor in ("human", "agent"):
            counts = rng.integers(0, 9, size=(size, size))
            probs = (counts + 0.5) / (counts + 0.5).sum(axis=1, keepdims=True)
            frames.append(
                pl.DataFrame(
                    {
                        "src": np.repeat(STATES, size).tolist(),
                        "dst": list(STATES) * size,
                        "count": counts.reshape(-1).astype(np.int64),
                        "prob": probs.reshape(-1),
                    }
                ).with_columns(store=pl.lit(store), actor=pl.lit(actor))
            )
    return pl.concat(frames)


def contaminated() -> pl.DataFrame:
    """Contaminated sessions at alpha 0 and 0.5 for the hotel store (list column trajectory)."""
    return pl.DataFrame(
        {
            "session_id": ["h1", "h1", "syn-0"],
            "source": ["real", "real", "synthetic"],
            "actor": ["human", "human", "agent"],
            "alpha": [0.0, 0.5, 0.5],
            "n_events": [3, 3, 2],
            "f": [0.12, 0.12, 0.91],
            "trajectory": [
                ["session_start", "view_item_page", "hover_over_title"],
                ["session_start", "view_item_page", "hover_over_title"],
                ["session_start", "add_item_to_cart"],
            ],
            "store": ["hotel", "hotel", "hotel"],
        },
        schema_overrides={"n_events": pl.Int64},
    )
