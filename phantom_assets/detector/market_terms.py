"""What the quote-time detectors give the store's market
(docs/method.md#shoppers-and-session-banks): the banks' scores of the detector it quotes with
and the agent bank's scores when agents adapt (`evasion`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.detector.classifier import QuoteClassifier
from phantom_assets.detector.evasion import evaded_scores
from phantom_assets.detector.features import QUOTE_FEATURES
from phantom_assets.detector.fit import V2_DETECTOR
from phantom_assets.market.bank import ChainBank
from phantom_assets.market.draws import engagement_strata

__all__ = ["QuoteTerms", "quote_terms"]


@dataclass(frozen=True)
class QuoteTerms:
    """`banks`: the (human, agent) banks scored by the market's detector; `overrides`: the
    `MarketSpec` evasion fields."""

    banks: tuple[ChainBank, ChainBank]
    overrides: dict[str, Any]


def _aligned(frame: pl.DataFrame, scores: pl.DataFrame) -> pl.DataFrame:
    """`scores` rows in the order of `frame`'s sessions (every session must have one)."""
    joined = frame.select("session_id").join(
        scores, on="session_id", how="left", maintain_order="left"
    )
    if joined["v2_score"].null_count():
        missing = joined.filter(pl.col("v2_score").is_null())["session_id"]
        raise ValueError(
            f"{missing.len()} bank sessions have no quote-time scores (first {missing[0]!r}): "
            "re-materialize quote_detector"
        )
    return joined


def quote_terms(
    kernel_banks: tuple[ChainBank, ChainBank],
    sessions: tuple[pl.DataFrame, pl.DataFrame],
    scores: pl.DataFrame,
    detector: str,
    fold_models: Mapping[int, QuoteClassifier],
    f_coef: tuple[float, float],
    thetas: Sequence[float],
    rng: np.random.Generator,
) -> QuoteTerms:
    """The market's detector terms of the store's empirical banks.

    Args:
        kernel_banks: (human, agent) banks scored by the kernel-only f (`store_session_banks`).
        sessions: (human, agent) labelled sessions (`session_id`, `fold`), in bank order.
        scores: `quote_detector`'s `quote_scores.parquet` (features and both scores).
        detector: the detector the market quotes with (`MarketConfig.detector`).
        fold_models: v2's classifier per fold (the out-of-fold scores').
        f_coef: the kernel-only f's (a, b).
        thetas: the evasion shares to sweep, 0 first (`spec.swept_thetas`).
        rng: the evasion's matching randomness.
    """
    human, agent = (_aligned(frame, scores) for frame in sessions)
    banks = kernel_banks
    if detector == V2_DETECTOR:
        banks = tuple(  # type: ignore[assignment]
            dataclasses.replace(bank, score=frame[f"{V2_DETECTOR}_score"].to_numpy())
            for bank, frame in zip(kernel_banks, (human, agent), strict=True)
        )
    strata = engagement_strata(banks)
    evasion = evaded_scores(
        agent.select(QUOTE_FEATURES).to_numpy(),
        human.select(QUOTE_FEATURES).to_numpy(),
        (strata.stratum(banks[1].engagement), strata.stratum(banks[0].engagement)),
        sessions[1]["fold"].to_numpy(),
        fold_models if detector == V2_DETECTOR else None,
        f_coef,
        thetas,
        rng,
    )
    overrides = {
        "agent_evasion_score": evasion.score,
        "agent_evasion_kernel_score": evasion.kernel_score,
        "evasion_time_cost_s": tuple(float(c) for c in evasion.time_cost_s),
    }
    return QuoteTerms(banks, overrides)
