"""Kernel fitting: orientation, exact MLE, fold kernels, frames and checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from phantom_assets.constants import END_TOKEN, KERNEL_STATES, START_TOKEN
from phantom_assets.fingerprint import (
    Kernel,
    empty_rows,
    encode_trajectories,
    fit_fold_kernels,
    fit_kernel,
    kernel_checks,
    kernel_frame,
    kernel_from_frame,
)

IDX = {s: i for i, s in enumerate(KERNEL_STATES)}
S, PV, SE, END = IDX[START_TOKEN], IDX["page_view"], IDX["search"], IDX[END_TOKEN]
# Asymmetric chain: page_view -> search happens twice, search -> page_view never.
CHAIN = [["page_view", "search", "search"], ["page_view", "search"], ["sort_change"]]


def test_fit_kernel_counts_rows_as_sources() -> None:
    """Regression for pitfall 1 of docs/method.md#pitfalls-this-method-avoids: a transposed
    kernel."""
    kernel = fit_kernel(encode_trajectories(CHAIN), kappa=0.0)
    assert kernel.counts[PV, SE] == 2
    assert kernel.counts[SE, PV] == 0
    assert kernel.counts[S, PV] == 2
    assert kernel.counts[SE, SE] == 1
    assert kernel.counts[SE, END] == 2
    assert kernel.counts.sum() == 7  # the 1-event session is excluded (MIN_EVENTS_FOR_KERNEL)


def test_fit_kernel_is_the_exact_mle_when_kappa_is_zero() -> None:
    kernel = fit_kernel(encode_trajectories(CHAIN), kappa=0.0)
    assert kernel.probs[S, PV] == 1.0
    assert kernel.probs[PV, SE] == 1.0
    assert kernel.probs[SE, SE] == pytest.approx(1 / 3, abs=1e-15)
    assert kernel.probs[SE, END] == pytest.approx(2 / 3, abs=1e-15)
    assert kernel.probs[SE, PV] == 0.0


def test_fit_kernel_smooths_over_the_eighteen_destinations() -> None:
    kernel = fit_kernel(encode_trajectories(CHAIN), kappa=0.5)
    # |V| = 18 (17 events + <end>; <start> is never a destination).
    assert kernel.probs[PV, SE] == pytest.approx(2.5 / 11, abs=1e-15)
    assert kernel.probs[PV, IDX["hover_over_link"]] == pytest.approx(0.5 / 11, abs=1e-15)
    assert kernel.probs[SE, SE] == pytest.approx(1.5 / 12, abs=1e-15)
    assert kernel.probs[SE, END] == pytest.approx(2.5 / 12, abs=1e-15)
    assert kernel.probs[S, PV] == pytest.approx(2.5 / 11, abs=1e-15)
    assert np.all(kernel.probs[:, S] == 0.0)


@pytest.mark.parametrize("kappa", [0.0, 0.5])
def test_fit_kernel_makes_end_absorbing_and_empty_rows_uniform(kappa: float) -> None:
    kernel = fit_kernel(encode_trajectories(CHAIN), kappa=kappa)
    assert kernel.probs[END, END] == 1.0 and kernel.probs[END].sum() == 1.0
    hover = IDX["hover_over_title"]
    expected = np.where(np.arange(len(KERNEL_STATES)) == S, 0.0, 1 / 18)
    np.testing.assert_allclose(kernel.probs[hover], expected, rtol=0, atol=1e-15)
    assert "hover_over_title" in empty_rows(kernel)
    assert "search" not in empty_rows(kernel) and END_TOKEN not in empty_rows(kernel)


def test_fit_kernel_rejects_negative_kappa() -> None:
    with pytest.raises(ValueError, match="kappa"):
        fit_kernel(encode_trajectories(CHAIN), kappa=-0.1)


def test_fit_fold_kernels_equal_explicit_refits_without_the_fold() -> None:
    rng = np.random.default_rng(3)
    events = ["search", "page_view", "view_item_page", "add_item_to_cart"]
    trajectories = [list(rng.choice(events, size=rng.integers(1, 9))) for _ in range(60)]
    folds = rng.integers(0, 4, size=60)
    t = encode_trajectories(trajectories)
    kernels = fit_fold_kernels(t, folds, 4, kappa=0.5)
    for j in range(4):
        refit = fit_kernel(t.select_sessions(folds != j), kappa=0.5)
        np.testing.assert_array_equal(kernels[j].counts, refit.counts)
        np.testing.assert_allclose(kernels[j].probs, refit.probs, rtol=0, atol=1e-15)


def test_fit_fold_kernels_rejects_unlabeled_fold_ids() -> None:
    t = encode_trajectories(CHAIN)
    with pytest.raises(ValueError, match=r"fold ids must lie in \[0, 5\)"):
        fit_fold_kernels(t, np.array([0, -1, 2]), 5, kappa=0.5)


@pytest.mark.parametrize("fold", [None, 3])
def test_kernel_frame_round_trips_in_any_row_order(fold: int | None) -> None:
    kernel = fit_kernel(encode_trajectories(CHAIN), kappa=0.5)
    frame = kernel_frame(kernel, fold=fold)
    assert frame.height == len(KERNEL_STATES) ** 2
    assert frame.columns == ["src", "dst", "count", "prob"] + (["fold"] if fold is not None else [])
    row = frame.filter((pl.col("src") == "page_view") & (pl.col("dst") == "search")).row(
        0, named=True
    )
    assert row["count"] == 2 and row["prob"] == pytest.approx(2.5 / 11)
    back = kernel_from_frame(frame.sample(fraction=1.0, shuffle=True, seed=1), kappa=0.5)
    assert back.states == kernel.states and back.kappa == 0.5
    np.testing.assert_array_equal(back.counts, kernel.counts)
    np.testing.assert_array_equal(back.probs, kernel.probs)


def test_kernel_from_frame_rejects_a_missing_pair_and_unknown_states() -> None:
    frame = kernel_frame(fit_kernel(encode_trajectories(CHAIN), kappa=0.5))
    with pytest.raises(ValueError, match="exactly once"):
        kernel_from_frame(frame.head(100), kappa=0.5)
    renamed = frame.with_columns(pl.col("src").replace({"search": "serch"}))
    with pytest.raises(ValueError, match="serch"):
        kernel_from_frame(renamed, kappa=0.5)


def test_kernel_checks_pass_on_a_fitted_kernel() -> None:
    t = encode_trajectories(CHAIN)
    checks = kernel_checks(fit_kernel(t, kappa=0.5), n_transitions=7)
    assert checks == {
        "rows_sum_to_one": True,
        "no_negative_entries": True,
        "counts_match_transitions": True,
        "labels_are_kernel_states": True,
    }


def test_kernel_checks_fail_on_a_bad_kernel() -> None:
    good = fit_kernel(encode_trajectories(CHAIN), kappa=0.5)
    probs = good.probs.copy()
    probs[PV, SE] += 1e-6  # row no longer sums to one
    assert not kernel_checks(dataclasses.replace(good, probs=probs), 7)["rows_sum_to_one"]
    negative = good.probs.copy()
    negative[PV, IDX["sort_change"]] += negative[PV, SE] + 0.1
    negative[PV, SE] = -0.1  # row sum unchanged, one negative entry
    bad = kernel_checks(dataclasses.replace(good, probs=negative), 7)
    assert bad["rows_sum_to_one"] and not bad["no_negative_entries"]
    assert not kernel_checks(good, 8)["counts_match_transitions"]
    transposed = Kernel(good.states, good.counts.T.copy(), good.probs.T.copy(), 0.5)
    assert not kernel_checks(transposed, 7)["rows_sum_to_one"]
