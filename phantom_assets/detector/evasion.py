"""Agents that adapt to the detector (docs/detector.md#agents-that-adapt): an evasion share θ of
an agent's transitions and timing drawn from the human law.

A θ-evading agent session's quote-time statistics are, in expectation, the θ-mix of its own and
a human session's: every feature of `features.QUOTE_FEATURES` is a mean over the prefix's moves
or gaps (or a function of their sum), so a share θ of human-like moves and gaps moves each
toward the human value by θ. Each agent session is matched to a random human session of its own
engagement stratum (the detector-value ablation's strata, `market.draws.engagement_strata`): it
keeps its engagement -- an evading agent still reaches the product unengaged, which is why it
evades -- and at θ = 1 its statistics are those of a human with its engagement, so no detector
can tell it from one beyond engagement (detector value 0). Its scores are re-computed by the
same out-of-fold classifiers (v2) and calibration (kernel-only), so θ = 0 is the bank itself.

Human-like timing costs the agent time: `time_cost_s` is the mean extra seconds an evading
session takes to reach its quote (from the dwell feature), reported, not charged (the market's
agents buy by price alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from phantom_assets.detector.classifier import QuoteClassifier, out_of_fold_scores
from phantom_assets.detector.features import QUOTE_FEATURES
from phantom_assets.detector.fit import kernel_scores

__all__ = ["EVASION_STREAM", "Evasion", "evaded_scores"]

EVASION_STREAM = 4
"""Stream of `default_rng(seed + stream)` that matches agent sessions to human ones."""
_ELAPSED = QUOTE_FEATURES.index("log_elapsed")


@dataclass(frozen=True)
class Evasion:
    """The agent bank's scores under each evasion share θ.

    Attributes:
        thetas: the swept θ (0 first).
        score: (T, n_agent) the market's detector's score of each agent session at each θ.
        kernel_score: (T, n_agent) the kernel-only score.
        time_cost_s: (T,) mean extra seconds to the quote per agent session.
    """

    thetas: tuple[float, ...]
    score: np.ndarray
    kernel_score: np.ndarray
    time_cost_s: np.ndarray


def _matches(
    agent_stratum: np.ndarray, human_stratum: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """For each agent session a random human session of its stratum (the nearest stratum
    that has humans where its own has none)."""
    present = np.unique(human_stratum)
    nearest = present[np.abs(agent_stratum[:, None] - present[None, :]).argmin(axis=1)]
    order = np.argsort(human_stratum, kind="stable")
    counts = np.bincount(human_stratum, minlength=int(nearest.max(initial=0)) + 1)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pick = (rng.random(agent_stratum.size) * counts[nearest]).astype(np.int64)
    return order[offsets[nearest] + pick]


def evaded_scores(
    agent_x: np.ndarray,
    human_x: np.ndarray,
    strata: tuple[np.ndarray, np.ndarray],
    agent_folds: np.ndarray,
    models: Mapping[int, QuoteClassifier] | None,
    f_coef: tuple[float, float],
    thetas: Sequence[float],
    rng: np.random.Generator,
) -> Evasion:
    """The agent sessions' scores when a share θ of their moves and gaps are human-like.

    Args:
        agent_x, human_x: (n, len(QUOTE_FEATURES)) out-of-fold quote-time features.
        strata: (agent, human) engagement stratum of each session.
        agent_folds: (n_agent,) each agent session's fold (its v2 score's classifier).
        models: v2's classifier per fold (`classifier.fold_classifiers`); None: the market
            quotes with the kernel-only detector (both scores are then kernel-only).
        f_coef: the kernel-only f's (a, b).
        thetas: the evasion shares, each in [0, 1].
        rng: the matching's randomness.

    Raises:
        ValueError: if a θ is outside [0, 1] or shapes disagree.
    """
    thetas = tuple(float(t) for t in thetas)
    if not thetas or any(not 0.0 <= t <= 1.0 for t in thetas):
        raise ValueError(f"evasion shares θ must be in [0, 1], got {thetas}")
    agent_stratum, human_stratum = (np.asarray(s, dtype=np.int64) for s in strata)
    if agent_stratum.shape != (len(agent_x),) or human_stratum.shape != (len(human_x),):
        raise ValueError("need one stratum per session of each class")
    twin = np.asarray(human_x)[_matches(agent_stratum, human_stratum, rng)]
    agent_x = np.asarray(agent_x, dtype=np.float64)
    mixed = [(1.0 - t) * agent_x + t * twin for t in thetas]
    kernel = np.stack([kernel_scores(x, f_coef) for x in mixed])
    score = (
        kernel
        if models is None
        else np.stack([out_of_fold_scores(models, x, agent_folds) for x in mixed])
    )
    own = np.expm1(agent_x[:, _ELAPSED])
    cost = np.array([float(np.mean(np.expm1(x[:, _ELAPSED]) - own)) for x in mixed])
    return Evasion(thetas, score, kernel, cost)
