"""G(α): session counts, columns, scores, timestamps, products, demand proxy, monotone f."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from scipy import stats

from phantom_assets.constants import DEMAND_WEIGHTS, KERNEL_STATES
from phantom_assets.contamination import (
    ContaminationParams,
    contaminate,
    demand_proxy,
    mean_f_is_monotone,
    n_synthetic,
    sample_chains,
)
from tests.unit.market.oracles import detector_scores

MIX = {"p1": 0.5, "p2": 0.3, "p3": 0.2}
GAPS = np.array([0.5, 2.0, 7.0])
PARAMS = ContaminationParams(product_mix=MIX, agent_gaps_s=GAPS)
CONTRACT = ("session_id", "source", "actor", "alpha", "n_events", "f", "trajectory")


def names(codes: np.ndarray, lengths: np.ndarray) -> list[list[str]]:
    states = np.asarray(KERNEL_STATES, dtype=object)
    return [states[row[:n]].tolist() for row, n in zip(codes, lengths, strict=True)]


def kernel_score_fn(human: np.ndarray, agent: np.ndarray):
    """A detector built from the two kernels: f = σ(Δ_H − Δ_A) of each trajectory."""
    index = {s: i for i, s in enumerate(KERNEL_STATES)}

    def score(frame: pl.DataFrame) -> np.ndarray:
        trajectories = frame["trajectory"].to_list()
        width = max((len(t) for t in trajectories), default=0) or 1
        codes = np.full((len(trajectories), width), -1, dtype=np.int64)
        for row, events in enumerate(trajectories):  # test helper, not a hot path
            codes[row, : len(events)] = [index[e] for e in events]
        lengths = np.array([len(t) for t in trajectories])
        return detector_scores(codes, lengths, human, agent)

    return score


def humans(kernel: np.ndarray, n: int, seed: int = 0) -> pl.DataFrame:
    codes, lengths = sample_chains(kernel, n, np.random.default_rng(seed))
    return pl.DataFrame(
        {
            "session_id": [f"h{i}" for i in range(n)],
            "trajectory": names(codes, lengths),
            "f": np.linspace(0.0, 0.4, n),
        }
    )


def constant_score(frame: pl.DataFrame) -> np.ndarray:
    return np.full(frame.height, 0.9)


@pytest.mark.parametrize(
    ("n_human", "alpha", "expected"),
    [
        (10, 0.0, 0),
        (10, 0.1, 1),
        (10, 0.25, 3),
        (10, 0.5, 10),
        (10, 0.75, 30),
        (10, 1.0, 10),
        (7, 0.3, 3),
        (0, 0.5, 0),
    ],
)
def test_n_synthetic_follows_round_alpha_nh_over_one_minus_alpha(n_human, alpha, expected):
    assert n_synthetic(n_human, alpha) == expected


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.5, 0.9, 1.0])
def test_contaminate_keeps_real_humans_and_adds_exactly_n_a_synthetic_agents(
    alpha, human_kernel, agent_kernel
):
    real = humans(human_kernel, 20)
    out = contaminate(real, agent_kernel, alpha, PARAMS, np.random.default_rng(1), constant_score)
    counts = dict(out.group_by("source").len().iter_rows())
    expected_real = 0 if alpha == 1.0 else 20
    assert counts.get("real", 0) == expected_real
    assert counts.get("synthetic", 0) == n_synthetic(20, alpha)
    assert out.filter(pl.col("source") == "synthetic")["actor"].unique().to_list() in (
        [],
        ["agent"],
    )


def test_contaminate_output_has_the_contract_columns_and_consistent_rows(
    human_kernel, agent_kernel
):
    real = humans(human_kernel, 12)
    out = contaminate(real, agent_kernel, 0.4, PARAMS, np.random.default_rng(2), constant_score)
    assert out.columns[: len(CONTRACT)] == list(CONTRACT)
    assert out["trajectory"].dtype == pl.List(pl.String)
    assert out["session_id"].is_unique().all()
    assert (out["trajectory"].list.len() == out["n_events"]).all()
    assert (out["alpha"] == 0.4).all()
    synthetic = out.filter(pl.col("source") == "synthetic")
    assert synthetic["session_id"].to_list() == [f"syn-0.4-{i}" for i in range(synthetic.height)]
    assert (synthetic["product_ids"].list.len() == synthetic["n_events"]).all()


def test_contaminate_keeps_real_f_and_scores_synthetic_sessions_with_score_fn(
    human_kernel, agent_kernel
):
    real = humans(human_kernel, 10)
    out = contaminate(real, agent_kernel, 0.5, PARAMS, np.random.default_rng(3), constant_score)
    assert out.filter(pl.col("source") == "real")["f"].to_list() == real["f"].to_list()
    assert (out.filter(pl.col("source") == "synthetic")["f"] == 0.9).all()


def test_contaminate_is_deterministic_for_a_seed(human_kernel, agent_kernel):
    real = humans(human_kernel, 10)
    runs = [
        contaminate(real, agent_kernel, 0.6, PARAMS, np.random.default_rng(4), constant_score)
        for _ in range(2)
    ]
    assert runs[0].equals(runs[1])


def test_synthetic_timestamps_advance_by_resampled_agent_gaps(human_kernel, agent_kernel):
    real = humans(human_kernel, 50)
    out = contaminate(real, agent_kernel, 0.5, PARAMS, np.random.default_rng(5), constant_score)
    synthetic = out.filter(pl.col("source") == "synthetic", pl.col("n_events") > 1)
    gaps = synthetic.select(pl.col("ts").list.diff().list.slice(1).alias("gap")).explode("gap")
    seconds = gaps["gap"].dt.total_milliseconds().to_numpy() / 1e3
    assert seconds.size > 0 and set(np.round(seconds, 3)) <= set(GAPS)
    starts = synthetic["ts"].list.first()
    origin = PARAMS.origin
    assert starts.min() >= origin and starts.max() <= origin + dt.timedelta(days=1)


def test_synthetic_products_follow_the_store_mix(human_kernel, agent_kernel):
    real = humans(human_kernel, 400)
    out = contaminate(real, agent_kernel, 0.5, PARAMS, np.random.default_rng(6), constant_score)
    products = out.filter(pl.col("source") == "synthetic")["product_ids"].explode()
    observed = np.array([(products == p).sum() for p in MIX])
    expected = np.array(list(MIX.values())) * observed.sum()
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_contaminate_rejects_scores_of_the_wrong_length(human_kernel, agent_kernel):
    real = humans(human_kernel, 10)
    with pytest.raises(ValueError, match="score_fn"):
        contaminate(real, agent_kernel, 0.5, PARAMS, np.random.default_rng(0), lambda f: [0.5])


@pytest.mark.parametrize("alpha", [-0.1, 1.5])
def test_contaminate_rejects_alpha_outside_the_unit_interval(alpha, human_kernel, agent_kernel):
    with pytest.raises(ValueError, match="alpha"):
        contaminate(
            humans(human_kernel, 3),
            agent_kernel,
            alpha,
            PARAMS,
            np.random.default_rng(0),
            constant_score,
        )


def test_mean_f_rises_with_alpha_under_a_kernel_detector(human_kernel, agent_kernel):
    score = kernel_score_fn(human_kernel, agent_kernel)
    real = humans(human_kernel, 200)
    real = real.with_columns(pl.Series("f", score(real)))
    mean_f = {
        alpha: contaminate(real, agent_kernel, alpha, PARAMS, np.random.default_rng(7), score)[
            "f"
        ].mean()
        for alpha in (0.0, 0.25, 0.5, 0.75, 1.0)
    }
    assert mean_f_is_monotone(mean_f, tol=0.0)
    assert mean_f[1.0] - mean_f[0.0] > 0.3


def test_demand_weights_match_the_design():
    """Regression for pitfall 7: weights keyed by the real names; checkout_start is cart-like."""
    assert DEMAND_WEIGHTS["checkout_start"] == 4.0
    assert DEMAND_WEIGHTS["purchase_complete"] == 4.0
    assert DEMAND_WEIGHTS["hover_over_title"] == 2.0
    assert DEMAND_WEIGHTS["page_view"] == 1.0
    assert DEMAND_WEIGHTS["session_start"] == 1.0
    assert DEMAND_WEIGHTS["search"] == 0.5


def test_demand_proxy_sums_event_weights_per_product():
    frame = pl.DataFrame(
        {
            "trajectory": [
                ["page_view", "checkout_start", "hover_over_link"],
                ["search", "add_item_to_cart"],
                ["page_view"],
            ],
            "product_ids": [["a", "a", "b"], ["b", None], None],
        }
    )
    assert demand_proxy(frame) == {"a": 5.0, "b": 2.5}


def test_demand_proxy_rejects_unknown_event_names():
    frame = pl.DataFrame({"trajectory": [["checkout"]], "product_ids": [["a"]]})
    with pytest.raises(ValueError, match="checkout"):
        demand_proxy(frame)


@pytest.mark.parametrize(
    ("means", "tol", "expected"),
    [
        ({0.0: 0.1, 0.5: 0.4, 1.0: 0.8}, 0.0, True),
        ({1.0: 0.8, 0.0: 0.1, 0.5: 0.4}, 0.0, True),
        ({0.0: 0.1, 0.5: 0.09, 1.0: 0.8}, 0.02, True),
        ({0.0: 0.1, 0.5: 0.05, 1.0: 0.8}, 0.02, False),
    ],
)
def test_mean_f_is_monotone_allows_drops_within_tolerance(means, tol, expected):
    assert mean_f_is_monotone(means, tol) is expected
