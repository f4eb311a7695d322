"""Episode metrics that follow from a market's step totals
(docs/method.md#observation-reward-and-metrics): what the evaluation protocol records per episode
and what fixed-action studies (the ledger, the sensitivity grid) compute from
`oracle.fixed_action_totals`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["ratio", "totals_metrics"]


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den = 0 (a ratio without a denominator is undefined)."""
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, num / safe, np.nan)


def totals_metrics(total: Mapping[str, np.ndarray], humans: np.ndarray) -> dict[str, np.ndarray]:
    """The episode metrics that follow from an episode's step totals (`market.STEP_COLUMNS`
    names) and its number of human shoppers.

    Sums: revenue, profit, purchases (by class), leak, human_lost. Ratios of sums: coi_h = human
    premium / human purchases, coi_a likewise for agents, coi = both premiums / all purchases;
    the total human harm against the episode's reference response (level, markup and detector
    together; docs/method.md#human-harm): human_harm = (humans' extra spend + the reference spend of
    the purchases they lost) / their spend under the reference, human_surplus_change = (their
    consumer surplus − the reference's) / the reference spend, human_quoted_up = humans quoted
    above the reference / humans; false_positive_rate = human sessions the detector quoted up /
    humans. A ratio without a denominator is NaN.
    """
    bought = total["human_purchases"] + total["agent_purchases"]
    harmed = total["human_overpay"] + total["human_lost_spend"]
    surplus = total["human_surplus"] - total["human_surplus_reference"]
    return {
        **{name: total[name] for name in ("revenue", "profit")},
        "purchases": bought,
        **{name: total[name] for name in ("human_purchases", "agent_purchases")},
        "coi_h": ratio(total["human_premium"], total["human_purchases"]),
        "coi_a": ratio(total["agent_premium"], total["agent_purchases"]),
        "coi": ratio(total["human_premium"] + total["agent_premium"], bought),
        "leak": total["leak"],
        "human_harm": ratio(harmed, total["human_spend_reference"]),
        "human_lost": total["human_lost"],
        "human_surplus_change": ratio(surplus, total["human_spend_reference"]),
        "human_quoted_up": ratio(total["human_quoted_up"], humans),
        "false_positive_rate": ratio(total["human_flagged"], humans),
    }
