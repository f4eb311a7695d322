"""Refit core and experiment-level permutation test: reproduces the pipeline, picks one session
per experiment without looking at the data, and centres the two-sided p on the null."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.fingerprint import (
    auc,
    centred_pvalue,
    encode_trajectories,
    experiment_permutation_test,
    fit_fold_kernels,
    fit_kernel,
    observed_auc,
    one_session_per_experiment,
    oof_aucs,
    permute_within_folds,
    score_sessions,
    session_counts,
    upper_pvalue,
    weighted_row_auc,
)
from phantom_assets.fingerprint import fit_class_kernels as fit_class
from phantom_assets.fingerprint.refit_core import class_totals, fold_counts


def _pipeline_auc(sessions: pl.DataFrame) -> float:
    human = fit_class(sessions, "human", kappa=0.5, k=5)
    agent = fit_class(sessions, "agent", kappa=0.5, k=5)
    scores = score_sessions(sessions, human, agent, 1.0)
    gap, is_agent = scores["gap"].to_numpy(), (scores["actor"] == "agent").to_numpy()
    return auc(gap[~is_agent], gap[is_agent])


@pytest.mark.parametrize("seed", range(3))
def test_refit_reproduces_the_pipeline_auc_for_any_labelling_of_experiments(
    separable_sessions: pl.DataFrame, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    xp = separable_sessions["experiment_id"].unique(maintain_order=True)
    flip = pl.DataFrame({"experiment_id": xp, "agent": rng.random(xp.len()) < 0.4})
    relabeled = (
        separable_sessions.join(flip, on="experiment_id", how="left", maintain_order="left")
        .with_columns(actor=pl.when("agent").then(pl.lit("agent")).otherwise(pl.lit("human")))
        .drop("agent")
    )
    assert observed_auc(session_counts(relabeled, 5), 0.5) == pytest.approx(
        _pipeline_auc(relabeled), abs=1e-12
    )


def test_refit_counts_match_the_fold_kernels_in_orientation(
    separable_sessions: pl.DataFrame,
) -> None:
    data = session_counts(separable_sessions, 5)
    counts = fold_counts(data, data.is_agent[None, :].astype(int), None)
    dense = class_totals(data, counts)[0]
    for label, actor in enumerate(("human", "agent")):
        own = separable_sessions.filter(pl.col("actor") == actor)
        t = encode_trajectories(own["trajectory"])
        np.testing.assert_array_equal(dense[label], fit_kernel(t, 0.5).counts)
        held_out = fit_fold_kernels(t, own["fold"].to_numpy(), 5, 0.5)
        assert sum(k.n_transitions for k in held_out) == 4 * fit_kernel(t, 0.5).n_transitions


def test_weighted_refit_equals_physically_duplicated_experiments(
    separable_sessions: pl.DataFrame,
) -> None:
    """A bootstrap's multiplicities must act like copies that share their experiment's fold."""
    data = session_counts(separable_sessions, 5)
    rng = np.random.default_rng(1)
    xp_weight = rng.integers(0, 3, data.experiment.max() + 1)
    xp_weight[data.experiment[data.is_agent][0]] += 1
    xp_weight[data.experiment[~data.is_agent][0]] += 1  # both classes keep a session
    weights = xp_weight[data.experiment].astype(float)
    ordered = separable_sessions.sort("experiment_id", "session_id")
    copies = ordered.select(pl.all().repeat_by(pl.Series(weights.astype(int))).explode())
    copies = copies.with_columns(
        session_id=pl.format("{}-{}", "session_id", pl.int_range(pl.len()))
    )
    expected = _pipeline_auc(copies)
    got = oof_aucs(data, data.is_agent[None, :], 0.5, weights[None, :])[0]
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_weighted_row_auc_equals_the_rank_auc_of_repeated_samples(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gaps = rng.integers(0, 5, (6, 21)).astype(float)  # many ties
    labels = np.zeros((6, 21), dtype=int)
    labels[:, 12:] = 1
    weights = rng.integers(0, 4, (6, 21)).astype(float)
    weights[:, [0, 12]] += 1  # every row keeps at least one session per class
    got = weighted_row_auc(gaps, labels, weights)
    expected = [
        auc(np.repeat(g[:12], w[:12].astype(int)), np.repeat(g[12:], w[12:].astype(int)))
        for g, w in zip(gaps, weights, strict=True)
    ]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_test_sample_has_one_session_per_experiment_independent_of_row_order(
    separable_sessions: pl.DataFrame,
) -> None:
    def picked(frame: pl.DataFrame) -> list[str]:
        data = session_counts(frame, 5)
        order = frame.sort("experiment_id", "session_id")["session_id"]
        index = one_session_per_experiment(data.experiment, data.experiment_hash)
        return sorted(order.gather(index).to_list())

    chosen = picked(separable_sessions)
    shuffled = picked(separable_sessions.sample(fraction=1.0, shuffle=True, seed=4))
    assert chosen == shuffled
    by_xp = separable_sessions.filter(pl.col("session_id").is_in(chosen))["experiment_id"]
    assert by_xp.n_unique() == len(chosen) == separable_sessions["experiment_id"].n_unique()
    first = separable_sessions.sort("session_id").group_by("experiment_id").first()
    assert set(chosen) != set(first["session_id"])  # the hash, not "always the first"


def test_permutations_move_labels_only_within_folds() -> None:
    fold = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 0])
    labels = np.array([1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0])
    rows = permute_within_folds(labels, fold, 200, np.random.default_rng(0))
    for f in range(3):
        assert (rows[:, fold == f].sum(axis=1) == labels[fold == f].sum()).all()
    assert np.unique(rows, axis=0).shape[0] > 20  # genuinely random within folds


def test_centred_pvalue_is_two_sided_around_a_null_that_sits_below_one_half() -> None:
    """Why the centring: the out-of-fold AUC null sits below ½ for unbalanced classes."""
    null = np.random.default_rng(0).normal(0.35, 0.03, 999)
    assert centred_pvalue(0.35, null) > 0.9
    assert centred_pvalue(0.47, null) < 0.01  # above the null centre although below ½
    assert centred_pvalue(0.23, null) < 0.01
    assert centred_pvalue(0.45, null) == pytest.approx(centred_pvalue(0.25, null), abs=0.01)


def test_permutation_pvalues_floor_at_one_over_b_plus_one() -> None:
    null = np.linspace(0.0, 1.0, 99)
    assert upper_pvalue(2.0, null) == centred_pvalue(5.0, null) == 1 / 100
    assert upper_pvalue(-1.0, null) == 1.0


def test_experiment_permutation_test_rejects_kappa_zero_and_a_missing_class(
    separable_sessions: pl.DataFrame,
) -> None:
    rng = np.random.default_rng(0)
    data = session_counts(separable_sessions, 5)
    with pytest.raises(ValueError, match="kappa > 0"):
        experiment_permutation_test(data, kappa=0.0, n_permutations=10, rng=rng)
    humans = session_counts(separable_sessions.filter(pl.col("actor") == "human"), 5)
    with pytest.raises(ValueError, match="both classes"):
        experiment_permutation_test(humans, kappa=0.5, n_permutations=10, rng=rng)


def test_sessions_without_experiment_ids_are_their_own_experiments(
    separable_sessions: pl.DataFrame,
) -> None:
    data = session_counts(separable_sessions.drop("experiment_id"), 5)
    test = experiment_permutation_test(
        data, kappa=0.5, n_permutations=20, rng=np.random.default_rng(0)
    )
    assert test.n_test_human + test.n_test_agent == separable_sessions.height


def test_a_session_mixing_labels_within_one_experiment_is_rejected(
    separable_sessions: pl.DataFrame,
) -> None:
    agent_xp = separable_sessions.filter(pl.col("actor") == "agent")["experiment_id"][0]
    first = (
        pl.col("session_id")
        == separable_sessions.filter(pl.col("experiment_id") == agent_xp)["session_id"][0]
    )
    mixed = separable_sessions.with_columns(
        actor=pl.when(first).then(pl.lit("human")).otherwise("actor")
    )
    with pytest.raises(ValueError, match="mixes actor labels"):
        session_counts(mixed, 5)
