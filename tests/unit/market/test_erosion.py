"""COI erosion: agents' premium falls with K as the order statistic says, humans' does not move,
and the class split agrees with the engine's mixed totals."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure
from scipy import stats

from phantom_assets.config import AgentsConfig
from phantom_assets.market import (
    COLUMN,
    EROSION_SCHEMA,
    STEP_COLUMNS,
    agent_coi_by_k,
    closed_form_coi_a,
    coi_a_share,
    coi_erosion,
    engine_of,
    episode_draws,
    plot_coi_erosion,
    simulate_step,
)
from phantom_assets.market.erosion import EROSION_METRICS, coi_by_class, seed_metrics
from tests.unit.market.oracles import brute_force_totals

EROSION_KS = AgentsConfig().erosion_k_grid

SEEDS = tuple(range(6))
STEPS = 6
ALPHAS = (0.0, 0.5, 1.0)


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    from tests.unit.market.conftest import small_spec

    return coi_erosion(small_spec(), ALPHAS, EROSION_KS, SEEDS, steps=STEPS)


def metric(table: pl.DataFrame, name: str, alpha: float, detector: float = 0.0) -> pl.DataFrame:
    rows = table.filter(
        (pl.col("metric") == name) & (pl.col("alpha") == alpha) & (pl.col("detector") == detector)
    )
    return rows.sort("k")


def test_erosion_table_is_in_the_contract_schema_without_undefined_cells(table, spec):
    assert table.schema == pl.Schema(EROSION_SCHEMA)
    assert set(table["detector"]) == {0.0, max(spec.detector_strengths)}
    assert set(table["metric"]) == set(EROSION_METRICS)
    assert metric(table, "coi_a", 0.0).is_empty() and metric(table, "coi_h", 1.0).is_empty()
    assert metric(table, "agent_purchases", 0.0)["mean"].to_list() == [0.0] * len(EROSION_KS)
    assert set(table["n"]) == {len(SEEDS)}


@pytest.mark.parametrize("detector", [0.0, 1.0])
def test_coi_a_falls_strictly_with_k_for_agents_only(table, detector):
    coi_a = metric(table, "coi_a", 1.0, detector)["mean"].to_numpy()
    assert coi_a.size == len(EROSION_KS)
    assert np.all(np.diff(coi_a) < 0)
    by_k = agent_coi_by_k(table, detector)
    assert by_k["mean"].to_list() == coi_a.tolist()


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_class_coi_equals_a_per_shopper_oracle_at_every_k(spec, alpha):
    # Each K of the table against the plain-Python oracle over the same episode's shoppers.
    ks = [1, 4]
    values = seed_metrics(spec, [alpha], ks, [3], steps=STEPS, detectors=(1.0,))[0, 0, 0]
    draws, _ = episode_draws(spec, 3, max(ks), STEPS)
    action = spec.action_index(*spec.action_parts(spec.undefended_action)[:2], 2)
    column = {name: i for i, name in enumerate(EROSION_METRICS)}
    for c, k in enumerate(ks):
        totals = dict(
            zip(STEP_COLUMNS, brute_force_totals(spec, action, draws, alpha, k), strict=False)
        )
        for name, cls in (("coi_h", "human"), ("coi_a", "agent")):
            bought = totals[f"{cls}_purchases"]
            expected = totals[f"{cls}_premium"] / bought if bought else np.nan
            np.testing.assert_allclose(values[c, column[name]], expected, rtol=1e-9)


@pytest.mark.parametrize("noise", [0.1, 0.2, 0.3])
def test_coi_a_matches_the_order_statistic_closed_form_at_zero_markup(make_spec, noise):
    # m = 0 and valuations far above every quote: every agent buys at its best of K quotes.
    spec = make_spec(markups=(0.0,), quote_noise=noise, mu_human=1_000.0, in_market=1.0)
    rows = metric(
        coi_erosion(spec, [1.0], EROSION_KS, SEEDS, steps=STEPS, detectors=(0.0,)), "coi_a", 1.0
    )
    expected = closed_form_coi_a(spec, EROSION_KS)["coi_a"].to_numpy()
    se = (rows["ci_high"] - rows["ci_low"]).to_numpy() / (2 * stats.t.ppf(0.975, len(SEEDS) - 1))
    z = (rows["mean"].to_numpy() - expected) / se
    assert np.all(np.abs(z) < 4), z


def test_class_split_totals_agree_with_the_engine_mixed_totals(spec):
    alpha, ks = 0.5, np.array([1, 4])
    values = seed_metrics(spec, [alpha], ks.tolist(), [7], steps=STEPS, detectors=(0.0,))[0, 0, 0]
    engine = engine_of(spec)
    draws, world = episode_draws(spec, 7, int(ks.max()), STEPS)
    action = spec.action_values(spec.undefended_action)
    result = simulate_step(engine, action, draws, np.full(ks.size, alpha), ks, demand=world.demand)
    column = {name: i for i, name in enumerate(EROSION_METRICS)}
    for c in range(ks.size):
        totals = result[c]
        human = totals[COLUMN["human_premium"]] / totals[COLUMN["human_purchases"]]
        agent = totals[COLUMN["agent_premium"]] / totals[COLUMN["agent_purchases"]]
        assert values[c, column["coi_h"]] == pytest.approx(human)
        assert values[c, column["coi_a"]] == pytest.approx(agent)
        assert values[c, column["leak"]] == pytest.approx(totals[COLUMN["leak"]])
        assert values[c, column["agent_purchases"]] == totals[COLUMN["agent_purchases"]]


def test_coi_a_share_divides_agents_at_the_top_alpha_by_humans_at_the_bottom(table):
    share = coi_a_share(table, 8)
    expected = (
        metric(table, "coi_a", 1.0).filter(pl.col("k") == 8)["mean"][0]
        / metric(table, "coi_h", 0.0)["mean"][0]
    )
    assert share == pytest.approx(expected)
    assert 0 < share < 1
    with pytest.raises(ValueError, match="k 3"):
        coi_a_share(table, 3)


def test_erosion_plot_has_both_panels_and_refuses_an_empty_table(table, spec):
    figure = plot_coi_erosion(table, closed_form_coi_a(spec, EROSION_KS))
    assert isinstance(figure, Figure) and len(figure.axes) == 2
    assert figure.axes[0].get_xscale() == "log"
    with pytest.raises(ValueError, match="no COI rows"):
        plot_coi_erosion(table.clear())


def test_erosion_rejects_a_bad_grid(spec):
    with pytest.raises(ValueError):
        coi_erosion(spec, [1.5], EROSION_KS, SEEDS)
    with pytest.raises(ValueError):
        coi_erosion(spec, [0.5], [0], SEEDS)


def test_coi_by_class_is_the_design_contract(spec):
    table = coi_erosion(spec, (0.0, 1.0), (1, 8), range(4), steps=6)
    contract = coi_by_class(table)
    assert contract.columns == ["alpha", "k", "class", "coi", "ci_low", "ci_high", "n", "detector"]
    assert set(contract["class"]) == {"human", "agent", "all"}
    agent = contract.filter((pl.col("class") == "agent") & (pl.col("detector") == 0.0))
    expected = table.filter((pl.col("metric") == "coi_a") & (pl.col("detector") == 0.0))
    assert (
        agent.sort("alpha", "k")["coi"].to_list() == expected.sort("alpha", "k")["mean"].to_list()
    )
