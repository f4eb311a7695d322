"""Divergence scores: oracle KL, out-of-fold leakage, prefixes."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from scipy.special import expit
from scipy.stats import entropy

from phantom_assets.constants import KERNEL_STATES
from phantom_assets.fingerprint import (
    SCORE_COLUMNS,
    KernelSet,
    encode_trajectories,
    fit_class_kernels,
    fit_kernel,
    prefix_scores,
    score_sessions,
)

from .conftest import make_sessions

IDX = {s: i for i, s in enumerate(KERNEL_STATES)}


def _weighted_kl_oracle(trajectory: list[str], probs: np.ndarray) -> float:
    """Δ_Y computed the slow, literal way: per visited row, KL weighted by visits."""
    states = ["<start>", *trajectory, "<end>"]
    counts = np.zeros_like(probs)
    for a, b in itertools.pairwise(states):
        counts[IDX[a], IDX[b]] += 1
    visits = counts.sum(axis=1)
    total = 0.0
    for a in np.flatnonzero(visits):
        total += visits[a] / visits.sum() * entropy(counts[a] / visits[a], probs[a])
    return total


def test_score_sessions_matches_a_literal_weighted_kl(separable_sessions: pl.DataFrame) -> None:
    human = fit_class_kernels(separable_sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(separable_sessions, "agent", kappa=0.5, k=5)
    scores = score_sessions(separable_sessions, human, agent, temperature=2.0)
    assert scores.columns == list(SCORE_COLUMNS)
    assert scores.height == separable_sessions.height
    for row in scores.head(25).iter_rows(named=True):  # oracle loop over a few sessions
        traj = separable_sessions.filter(pl.col("session_id") == row["session_id"])["trajectory"][0]
        fold = row["fold"]
        assert row["delta_h"] == pytest.approx(
            _weighted_kl_oracle(traj.to_list(), human.folds[fold].probs), abs=1e-12
        )
        assert row["delta_a"] == pytest.approx(
            _weighted_kl_oracle(traj.to_list(), agent.folds[fold].probs), abs=1e-12
        )
        assert row["gap"] == pytest.approx(row["delta_h"] - row["delta_a"], abs=1e-12)
        assert row["f"] == pytest.approx(expit(row["gap"] / 2.0), abs=1e-15)


def _extreme_dataset() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    events = ["page_view", "search", "view_item_page", "filter_for_date"]
    trajs = [list(rng.choice(events, size=rng.integers(2, 8))) for _ in range(80)]
    actors = ["human" if i % 2 == 0 else "agent" for i in range(80)]
    trajs.append(["hover_over_link"] * 300)  # a unique long loop, never seen elsewhere
    actors.append("agent")
    return make_sessions(trajs, actors)


def test_score_sessions_never_uses_a_sessions_own_counts() -> None:
    """Regression for pitfall 3 of docs/method.md#pitfalls-this-method-avoids: the research scored
    sessions with kernels fitted on them."""
    sessions = _extreme_dataset()
    human = fit_class_kernels(sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(sessions, "agent", kappa=0.5, k=5)
    extreme = sessions.tail(1)
    oof = score_sessions(sessions, human, agent, 1.0).tail(1).row(0, named=True)
    fold = extreme["fold"][0]

    # Explicit refit without the extreme session's fold, used as full kernels for an unlabeled copy.
    rest = sessions.filter(pl.col("fold") != fold)
    refit = {
        actor: fit_kernel(
            encode_trajectories(rest.filter(pl.col("actor") == actor)["trajectory"]), 0.5
        )
        for actor in ("human", "agent")
    }
    as_unlabeled = extreme.with_columns(
        pl.lit("unknown").alias("actor"), pl.lit(-1, dtype=pl.Int64).alias("fold")
    )
    explicit = score_sessions(
        as_unlabeled,
        KernelSet(refit["human"], human.folds),
        KernelSet(refit["agent"], agent.folds),
        1.0,
    ).row(0, named=True)
    assert oof["delta_a"] == pytest.approx(explicit["delta_a"], abs=1e-12)
    assert oof["delta_h"] == pytest.approx(explicit["delta_h"], abs=1e-12)

    # In-sample (leaky) kernels include the loop, so its agent divergence collapses.
    leaky = score_sessions(as_unlabeled, human, agent, 1.0).row(
        0, named=True
    )  # unlabeled -> full kernels, which saw the session
    assert leaky["delta_a"] < 0.5 * oof["delta_a"]
    assert agent.full.counts[IDX["hover_over_link"], IDX["hover_over_link"]] == 299
    assert agent.folds[fold].counts[IDX["hover_over_link"], IDX["hover_over_link"]] == 0


def test_score_sessions_scores_unlabeled_sessions_with_the_full_kernels(
    separable_sessions: pl.DataFrame,
) -> None:
    human = fit_class_kernels(separable_sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(separable_sessions, "agent", kappa=0.5, k=5)
    unlabeled = separable_sessions.head(10).with_columns(
        pl.lit("unknown").alias("actor"), pl.lit(-1, dtype=pl.Int64).alias("fold")
    )
    scores = score_sessions(unlabeled, human, agent, 1.0)
    for row, traj in zip(scores.iter_rows(named=True), unlabeled["trajectory"], strict=True):
        assert row["delta_h"] == pytest.approx(
            _weighted_kl_oracle(traj.to_list(), human.full.probs), abs=1e-12
        )
    assert scores["f_calibrated"].is_nan().all()  # no labeled sessions to calibrate against


def test_score_sessions_calibrates_so_that_agents_get_higher_probability(
    separable_sessions: pl.DataFrame,
) -> None:
    human = fit_class_kernels(separable_sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(separable_sessions, "agent", kappa=0.5, k=5)
    scores = score_sessions(separable_sessions, human, agent, 1.0)
    means = dict(scores.group_by("actor").agg(pl.col("f_calibrated").mean()).iter_rows())
    assert scores["f_calibrated"].is_between(0, 1).all()
    assert means["agent"] > 0.8 > 0.2 > means["human"]


def test_score_sessions_with_kappa_zero_reports_infinite_divergence() -> None:
    sessions = make_sessions(
        [["search", "search"], ["page_view", "page_view"], ["search", "page_view"]] * 4,
        ["human", "agent", "unknown"] * 4,
    )
    human = fit_class_kernels(sessions, "human", kappa=0.0, k=5)
    agent = fit_class_kernels(sessions, "agent", kappa=0.0, k=5)
    scores = score_sessions(sessions, human, agent, 1.0).filter(pl.col("actor") == "unknown")
    assert scores["delta_h"].is_infinite().all() and scores["delta_a"].is_infinite().all()
    assert scores["gap"].is_nan().all()


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("actor", "robot", "robot"),
        ("fold", -1, "has fold -1"),
        ("n_events", 99, "n_events does not match"),
    ],
)
def test_score_sessions_rejects_contract_violations(
    separable_sessions: pl.DataFrame, column: str, value: object, message: str
) -> None:
    human = fit_class_kernels(separable_sessions, "human", k=5)
    agent = fit_class_kernels(separable_sessions, "agent", k=5)
    bad = separable_sessions.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )
    with pytest.raises(ValueError, match=message):
        score_sessions(bad, human, agent, 1.0)


def test_prefix_scores_have_one_row_per_long_enough_session_and_length(
    separable_sessions: pl.DataFrame,
) -> None:
    human = fit_class_kernels(separable_sessions, "human", k=5)
    agent = fit_class_kernels(separable_sessions, "agent", k=5)
    prefix = prefix_scores(separable_sessions, human, agent, 1.0, max_prefix=6)
    n_events = separable_sessions["n_events"].to_numpy()
    assert prefix.height == sum(int((n_events >= p).sum()) for p in range(2, 7))
    assert prefix["prefix_len"].unique().sort().to_list() == [2, 3, 4, 5, 6]
    assert set(prefix.columns) >= {"session_id", "prefix_len", "gap", "f"}
    # Oracle: the mean per-transition log-likelihood ratio of the first p transitions (no <end>).
    row = prefix.filter(pl.col("prefix_len") == 4).row(0, named=True)
    traj = separable_sessions.filter(pl.col("session_id") == row["session_id"])["trajectory"][
        0
    ].to_list()
    states = ["<start>", *traj[:4]]
    fold = row["fold"]
    llr = sum(
        np.log(agent.folds[fold].probs[IDX[a], IDX[b]])
        - np.log(human.folds[fold].probs[IDX[a], IDX[b]])
        for a, b in itertools.pairwise(states)
    )
    assert row["gap"] == pytest.approx(llr / 4, abs=1e-12)
    assert row["f"] == pytest.approx(expit(llr / 4), abs=1e-15)


@pytest.mark.parametrize(
    ("calibration", "column"), [("temperature", "f_temperature"), ("logistic", "f_calibrated")]
)
def test_score_sessions_f_is_the_probability_the_calibration_setting_selects(
    separable_sessions: pl.DataFrame, calibration: str, column: str
) -> None:
    human = fit_class_kernels(separable_sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(separable_sessions, "agent", kappa=0.5, k=5)
    scores = score_sessions(separable_sessions, human, agent, 2.0, calibration=calibration)
    other = "f_calibrated" if column == "f_temperature" else "f_temperature"
    np.testing.assert_array_equal(scores["f"], scores[column])
    assert not np.allclose(scores["f"], scores[other])
    np.testing.assert_allclose(scores["f_temperature"], expit(scores["gap"] / 2.0), atol=1e-15)


def test_score_sessions_rejects_an_unknown_calibration(separable_sessions: pl.DataFrame) -> None:
    human = fit_class_kernels(separable_sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(separable_sessions, "agent", kappa=0.5, k=5)
    with pytest.raises(ValueError, match="'isotonic'"):
        score_sessions(separable_sessions, human, agent, 1.0, calibration="isotonic")


def test_score_sessions_scores_new_sessions_with_the_stored_logistic_fit(
    separable_sessions: pl.DataFrame,
) -> None:
    from phantom_assets.fingerprint.calibration import ScoreCalibration, fit_score_calibration

    human = fit_class_kernels(separable_sessions, "human", kappa=0.5, k=5)
    agent = fit_class_kernels(separable_sessions, "agent", kappa=0.5, k=5)
    labeled = score_sessions(separable_sessions, human, agent, 1.0, calibration="logistic")
    stored = fit_score_calibration(
        labeled["gap"].to_numpy(),
        (labeled["actor"] == "agent").to_numpy(),
        np.ones(labeled.height, dtype=bool),
        "logistic",
        1.0,
    )
    stored = ScoreCalibration.from_dict(stored.to_dict())  # the calibration.json round trip
    new = separable_sessions.head(12).with_columns(
        pl.lit("unknown").alias("actor"), pl.lit(-1, dtype=pl.Int64).alias("fold")
    )
    scores = score_sessions(new, human, agent, 1.0, calibration="logistic", logistic=stored.coef)
    assert stored.coef is not None and stored.coef[1] > 0
    np.testing.assert_allclose(scores["f"], stored.apply(scores["gap"].to_numpy()), atol=1e-15)
    # Mixed in with labeled sessions, unlabeled ones get the same fit without a stored one.
    mixed = score_sessions(
        pl.concat([separable_sessions, new]), human, agent, 1.0, calibration="logistic"
    ).tail(12)
    np.testing.assert_allclose(mixed["f"], scores["f"], atol=1e-12)
