"""What a market step measures: the columns of its per-step totals, and the detector modes."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["COLUMN", "DETECTOR_MODES", "N_COLUMNS", "STEP_COLUMNS", "Column"]


class Column(IntEnum):
    """Per-step totals, in this column order (a step's totals append the demand proxy per
    product)."""

    REVENUE = 0
    PROFIT = 1  # Σ (p − p_low) over purchases
    HUMAN_PURCHASES = 2
    AGENT_PURCHASES = 3
    HUMAN_PREMIUM = 4  # Σ (p − p_min) over human purchases: COI_H = this / human purchases
    AGENT_PREMIUM = 5
    LEAK = 6  # Σ over agent purchases of (an equally engaged human's expected quote − price paid)
    SCORE_SUM = 7  # Σ f over the step's sessions (what the shop observes)
    SESSIONS = 8
    LOW_ENGAGEMENT_PURCHASES = 9  # purchases in sessions with s < s0
    HUMAN_OVERPAY = 10  # Σ over humans who buy of (quote − the reference response's quote)
    HUMAN_LOST = 11  # human purchases the reference response makes and the action loses
    HUMAN_LOST_SPEND = 12  # what those lost purchases pay under the reference response
    HUMAN_SPEND_REFERENCE = 13  # what humans spend under the reference response
    HUMAN_SURPLUS = 14  # Σ (valuation − price) over human purchases
    HUMAN_SURPLUS_REFERENCE = 15  # the same under the reference response
    HUMAN_QUOTED_UP = 16  # humans quoted above the reference response's quote
    HUMAN_FLAGGED = 17  # human sessions the detector quoted up (f > τ, δ·s_ref > s, m > 0)
    AGENT_FLAGGED = 18  # agent sessions the detector flagged and quoted up
    AGENTS = 19


STEP_COLUMNS: tuple[str, ...] = tuple(column.name.lower() for column in Column)
N_COLUMNS = len(STEP_COLUMNS)  # a global int: a compile-time constant of the compiled step
COLUMN = {name: i for i, name in enumerate(STEP_COLUMNS)}
DETECTOR_MODES: tuple[str, ...] = ("fitted", "permuted")
"""`fitted`: quotes use each session's own f; `permuted`: the detector-value ablation, every
session gets the f of a random session of the step's class mix in its own engagement stratum
(`draws.decoy_scores`: same law, no information beyond engagement)."""
