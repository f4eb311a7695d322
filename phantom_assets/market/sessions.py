"""The store's own shoppers: its labelled sessions as the market's session banks
(docs/method.md#shoppers-and-session-banks), and how well the detector separates the classes in a
bank.

Each real session enters its class's bank with its engagement at the quote (in the store's
engagement signal), its demand weight and its prefix agent score f computed with the class
kernels fitted *without its fold* -- the out-of-fold f the detector would give a session it never
saw. A bank sampled from the same kernels that score it (`compile.chain_banks`) separates the
classes better than any real detector can; `prefix_auc` of both banks shows by how much.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.constants import ENGAGEMENT_SIGNALS, KERNEL_STATES
from phantom_assets.market.bank import ChainBank, bank_tables, fold_log_ratios, session_bank

__all__ = ["prefix_auc", "store_session_banks"]


def store_session_banks(
    sessions: tuple[pl.DataFrame, pl.DataFrame],
    full_kernels: tuple[np.ndarray, np.ndarray],
    fold_kernels: tuple[Sequence[np.ndarray], Sequence[np.ndarray]],
    f_coef: tuple[float, float],
    signal: str,
    states: tuple[str, ...] = KERNEL_STATES,
) -> tuple[ChainBank, ChainBank]:
    """(human, agent) banks of a store's labelled sessions (module docstring).

    Args:
        sessions: (human, agent) frames with `trajectory` (list of event names) and `fold`, e.g.
            the store's `labeled_sessions`.
        full_kernels: (human, agent) kernels fitted on every session (the tables' generators;
            only their shapes and the quote events matter here).
        fold_kernels: (human, agent) kernels fitted without fold j, j = 0 … k − 1.
        f_coef: (a, b) of the store's selected f = σ(a + b·gap).
        signal: the engagement signal the store prices on (`constants.ENGAGEMENT_SIGNALS`).

    Raises:
        ValueError: if a class has no session (a market needs both).
    """
    empty = [
        name for name, frame in zip(("human", "agent"), sessions, strict=True) if frame.height == 0
    ]
    if empty:
        raise ValueError(f"the store has no labelled {' or '.join(empty)} session for its bank")
    llr = fold_log_ratios(*fold_kernels)
    weights = ENGAGEMENT_SIGNALS[signal]
    human_kernel, agent_kernel = full_kernels
    banks = []
    for frame in sessions:  # the two classes
        tables = bank_tables(human_kernel, human_kernel, agent_kernel, states, weights)
        banks.append(
            session_bank(frame["trajectory"], frame["fold"].to_numpy(), llr, tables, f_coef)
        )
    return banks[0], banks[1]


def prefix_auc(human: ChainBank, agent: ChainBank) -> float:
    """P(an agent session's quote-time f > a human session's), ties counting half: how well
    the detector separates the classes at the moment of the quote in this bank."""
    u = stats.mannwhitneyu(agent.score, human.score, alternative="two-sided").statistic
    return float(u / (human.size * agent.size))
