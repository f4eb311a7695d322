"""Observed COI by class, the human − agent test and its figure."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from phantom_assets.market.prices import (
    COI_SCHEMA,
    coi_difference,
    fit_price_model,
    observed_coi,
    plot_observed_coi,
    quote_features,
)
from tests.unit.market.price_builders import demo_events

ANCHORS = pl.DataFrame({"product_id": ["A", "B"], "anchor": [100.0, 200.0]})


def quote_rows(rows: list[tuple], event: str = "view_item_page") -> pl.DataFrame:
    """Usable quotes from `(actor, experiment, session, product, price[, bought])` tuples."""
    frame = pl.DataFrame(
        [(*r[:5], r[5] if len(r) > 5 else False) for r in rows],
        schema=["actor", "experiment_id", "session_id", "product_id", "price", "bought"],
        orient="row",
    )
    return frame.with_columns(event=pl.lit(event), reason=pl.lit(None, dtype=pl.String))


def test_premium_is_the_quote_weighted_mean_of_price_over_anchor():
    quotes = quote_rows(
        [
            ("human", "h1", "s1", "A", 110.0),
            ("human", "h1", "s1", "B", 220.0),
            ("human", "h1", "s1", "A", 120.0),
            ("human", "h2", "s2", "A", 100.0),
            ("agent", "a1", "s3", "B", 200.0),
            ("agent", "a1", "s4", "A", 104.0),
            ("agent", "a2", "s5", "A", 100.0),
            ("agent", "a2", "s5", "C", 999.0),  # C: no anchor
        ]
    )
    coi = observed_coi(quotes, ANCHORS)
    assert coi.schema == pl.Schema(COI_SCHEMA) and coi["class"].to_list() == ["human", "agent"]
    human, agent = coi.rows(named=True)
    assert human["premium"] == pytest.approx((0.1 + 0.1 + 0.2 + 0.0) / 4)  # not (0.4/3 + 0)/2
    assert (human["n_quotes"], human["n_experiments"]) == (4, 2)
    assert agent["premium"] == pytest.approx(0.04 / 3) and agent["n_quotes"] == 3


def test_premium_ci_is_the_cluster_jackknife_with_bell_mccaffrey_df():
    """Oracle, by hand for a mean: the jackknife over experiments, (G−1)/G Σ_g (mean without g −
    mean)², and the Bell-McCaffrey df of Imbens & Kolesár (2016):
    df = (tr M)² / ‖M‖²_F with M the dense G × G matrix D^(-1/2) (C + κC²) D^(-1/2),
    C = diag(n) − nnᵀ/N, D = diag(1 − n/N), κ = the ANOVA intra-class variance ratio."""
    rng = np.random.default_rng(0)
    rows = [
        ("human", f"h{g}", f"s{g}-{j}", "A", 100.0 * (1 + 0.05 * rng.random() + 0.02 * g % 3))
        for g in range(12)
        for j in range(1 + g % 4)
    ]
    coi = observed_coi(quote_rows(rows), ANCHORS, level=0.9).row(0, named=True)
    x = np.array([r[4] / 100.0 - 1 for r in rows])
    g = np.array([int(r[1][1:]) for r in rows])
    n, total, p = np.bincount(g).astype(float), x.size, x.mean()
    sums = np.bincount(g, x)
    leave_out = (x.sum() - sums) / (total - n)
    se = np.sqrt(11 / 12 * np.sum((leave_out - p) ** 2))
    means = sums / n
    within = np.sum((x - means[g]) ** 2) / (total - 12)
    between = np.sum(n * (means - p) ** 2) / 11
    kappa = max(between - within, 0) / ((total - np.sum(n**2) / total) / 11) / within
    c = np.diag(n) - np.outer(n, n) / total
    scale = np.sqrt(np.outer(1 - n / total, 1 - n / total))
    m = (c + kappa * c @ c) / scale
    df = np.trace(m) ** 2 / np.sum(m * m)
    assert kappa > 0 and 2 < df < 11  # 12 unequal, correlated experiments: fewer than G - 1 df
    half = stats.t.ppf(0.95, df) * se
    assert coi["premium"] == pytest.approx(p)
    assert (coi["ci_low"], coi["ci_high"]) == pytest.approx((p - half, p + half))


def test_premium_ci_with_equal_experiments_is_cr1_with_g_minus_1_df():
    rows = [
        ("agent", f"a{g}", f"s{g}-{j}", "A", 100.0 + g + 3 * j) for g in range(6) for j in range(3)
    ]
    coi = observed_coi(quote_rows(rows), ANCHORS).row(1, named=True)
    x = np.array([r[4] / 100.0 - 1 for r in rows])
    u = np.bincount(np.repeat(np.arange(6), 3), x - x.mean())
    half = stats.t.ppf(0.975, 5) * np.sqrt(6 / 5 * (u @ u)) / x.size
    assert (coi["ci_low"], coi["ci_high"]) == pytest.approx((x.mean() - half, x.mean() + half))


def test_cart_and_checkout_logs_do_not_count_twice():
    views = quote_rows([("human", "h1", "s1", "A", 110.0), ("human", "h2", "s2", "A", 100.0)])
    carts = quote_rows([("human", "h1", "s1", "A", 110.0)], event="add_item_to_cart")
    once = observed_coi(views, ANCHORS)
    assert observed_coi(pl.concat([views, carts]), ANCHORS).equals(once)
    assert once["premium"][0] == pytest.approx(0.05)


def test_difference_test_reduces_to_welch_with_one_quote_per_experiment():
    """With one quote per experiment the clustered SEs are the iid ones: scipy's Welch t."""
    rng = np.random.default_rng(1)
    h, a = (
        100 * (1.05 + 0.03 * rng.standard_normal(15)),
        100 * (1.02 + 0.01 * rng.standard_normal(6)),
    )
    rows = [("human", f"h{i}", f"h{i}", "A", p) for i, p in enumerate(h)]
    rows += [("agent", f"a{i}", f"a{i}", "A", p) for i, p in enumerate(a)]
    diff = coi_difference(quote_rows(rows), ANCHORS)
    welch = stats.ttest_ind(h, a, equal_var=False)
    assert diff.statistic == pytest.approx(welch.statistic)
    assert diff.p_value == pytest.approx(welch.pvalue)
    assert diff.difference == pytest.approx((h.mean() - a.mean()) / 100)
    assert (diff.n_experiments_human, diff.n_experiments_agent) == (15, 6)
    assert diff.ci_low < diff.difference < diff.ci_high


def test_difference_is_undefined_with_a_single_experiment_in_a_class():
    rows = [
        ("human", "h1", "s1", "A", 110.0),
        ("human", "h2", "s2", "A", 100.0),
        ("agent", "a1", "s3", "A", 104.0),
        ("agent", "a1", "s4", "A", 101.0),
    ]
    diff = coi_difference(quote_rows(rows), ANCHORS)
    assert np.isnan(diff.p_value) and diff.to_dict()["p_value"] is None
    assert np.isnan(observed_coi(quote_rows(rows), ANCHORS)["ci_low"][1])


@pytest.mark.parametrize("store", ["hotel", "airline"])
def test_demo_humans_pay_a_larger_premium_than_agents(store):
    """The demo marks quotes up with the pages viewed; agents' clean sessions view fewer pages
    (without the price test, whose ±20% arms drown the gap at this size)."""
    quotes = quote_features(demo_events(arms=(1.0,))).filter(pl.col("store") == store)
    model = fit_price_model(quotes)
    coi = observed_coi(quotes, model.anchors)
    human, agent = coi["premium"].to_list()
    assert human > agent > 0
    diff = coi_difference(quotes, model.anchors)
    assert diff.p_value < 0.01 and diff.ci_low > 0
    assert coi["n_experiments"].to_list() == [120, 40]


def test_plot_observed_coi_returns_a_figure_with_the_test_in_its_title():
    rows = [
        ("human", "h1", "s1", "A", 110.0),
        ("human", "h2", "s2", "A", 100.0),
        ("agent", "a1", "s3", "A", 104.0),
        ("agent", "a2", "s4", "A", 101.0),
    ]
    quotes = quote_rows(rows)
    fig = plot_observed_coi(observed_coi(quotes, ANCHORS), coi_difference(quotes, ANCHORS), "x")
    assert type(fig).__name__ == "Figure" and len(fig.axes) == 1
    assert "human − agent" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="premium"):
        plot_observed_coi(pl.DataFrame({"class": ["human"]}))


def test_observed_coi_rejects_bad_arguments():
    quotes = quote_rows([("human", "h1", "s1", "A", 110.0, True)])
    with pytest.raises(ValueError, match="anchor"):
        observed_coi(quotes, ANCHORS.drop("anchor"))
    two_stores = pl.concat([quotes.with_columns(store=pl.lit(s)) for s in ("hotel", "airline")])
    with pytest.raises(ValueError, match="one store"):
        coi_difference(two_stores, ANCHORS)
