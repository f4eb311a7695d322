"""Is the observed agent share informative: its error against α, and one step of it telling a low
agent share from a high one when K is unknown."""

from __future__ import annotations

import polars as pl
import pytest

from phantom_assets.market.observation import (
    HIGH_ALPHAS,
    LOW_ALPHAS,
    OBSERVATION_SCHEMA,
    SEPARATION_SCHEMA,
    SEPARATION_TOLERANCE,
    observation_report,
)
from tests.unit.market.conftest import small_spec

KS = (2, 8)


@pytest.fixture(scope="module")
def report():
    return observation_report(small_spec(episode_steps=10), KS, seeds=range(4))


def test_the_report_covers_every_estimate_alpha_and_k(report):
    assert report.accuracy.schema == pl.Schema(OBSERVATION_SCHEMA)
    assert report.accuracy.height == 2 * len(LOW_ALPHAS + HIGH_ALPHAS) * len(KS)
    assert set(report.accuracy["n_steps"]) == {4 * 10}
    assert report.separation.schema == pl.Schema(SEPARATION_SCHEMA)
    assert report.separation.height == 2 * (1 + len(KS))


def test_alpha_hat_tracks_the_session_share_and_the_shopper_alpha_hat_tracks_alpha(report):
    rows = report.accuracy.filter(pl.col("alpha").is_between(0.05, 0.95))
    session, shopper = (rows.filter(estimate=e) for e in ("alpha_hat", "shopper_alpha_hat"))
    assert (session["mean"] - session["session_share"]).abs().max() < 0.05
    assert (shopper["mean"] - shopper["alpha"]).abs().max() < 0.05
    assert shopper["mae_alpha"].max() < 0.1 < session["mae_alpha"].max()


def test_with_k_unknown_only_the_shopper_alpha_hat_tells_low_from_high_alpha_in_one_step(report):
    """(α, K) = (0.2, 8) and (0.5, 2) share one session share: α̂ misreads them, K known or not
    the shopper α̂ does not."""
    assert report.error("shopper_alpha_hat") <= SEPARATION_TOLERANCE < report.error("alpha_hat")
    per_k = report.separation.filter(pl.col("k").is_not_null())
    assert per_k["error"].max() <= SEPARATION_TOLERANCE  # K known: both separate
