"""The benchmark tables of one store, their summary and files."""

from __future__ import annotations

import json

import polars as pl
import pytest

from phantom_assets.constants import SELECTION_SPLIT
from phantom_assets.evaluation import (
    BENCHMARK_FILES,
    EPISODE_METRICS,
    STRESS_METRICS,
    PolicyEvaluation,
    benchmark_tables,
    expected_curve_rows,
    factorial_effects,
    save_benchmark,
    stress_as_curves_input,
    summary_markdown,
)
from phantom_assets.market import market_oracle
from phantom_assets.market.columns import Column
from phantom_assets.market.oracle import action_totals
from tests.unit.evaluation.conftest import GRID, PARTITIONS, PROTOCOL, protocol_rows
from tests.unit.evaluation.test_contrasts import FACTORIAL, PLANTED


@pytest.fixture(scope="module")
def oracle(spec) -> pl.DataFrame:
    """The real oracle of the spec (seconds), as `market_oracle` writes it."""
    return market_oracle(spec, GRID.alpha_grid, GRID.k_grid, PROTOCOL.selection_seeds)


@pytest.fixture(scope="module")
def tables(partitions, spec, oracle):
    tables = zip(*partitions.values(), strict=True)
    evaluation = PolicyEvaluation(*(pl.concat(frames) for frames in tables))
    return benchmark_tables(evaluation, oracle, spec, "dqn")


def test_regret_is_against_the_oracles_own_action(tables, oracle, spec):
    """Regret pairs each policy with the oracle's refined action on the same seeds: its mean is
    the oracle's profit − the policy's, never against another reference."""
    row = tables.regret.row(0, named=True)
    cell = oracle.filter(alpha=row["alpha"], k=row["k"]).row(0, named=True)
    expected = action_totals(
        spec,
        [(cell["level"], cell["markup"], cell["delta"])],
        [row["alpha"]],
        row["k"],
        PROTOCOL.selection_seeds,
    )
    assert row["oracle_profit"] == pytest.approx(expected[0, :, 0, Column.PROFIT].mean())


def test_stress_input_keeps_the_selection_seeds_keyed_by_the_nominal_alpha(partitions):
    stress = partitions["static-a000"].stress
    stressed = stress_as_curves_input(stress)
    assert stressed.height == stress.filter(split=SELECTION_SPLIT).height
    assert sorted(set(stressed["alpha"])) == list(GRID.alpha_grid)
    assert set(STRESS_METRICS) <= set(stressed.columns)
    assert not set(EPISODE_METRICS) & set(stressed.columns)
    assert set(stressed["seed"]) == set(PROTOCOL.selection_seeds)


def test_benchmark_tables_cover_every_policy_alpha_k_detector_metric_over_episode_seeds(tables):
    grid = (len(GRID.alpha_grid), len(GRID.k_grid))
    assert tables.curves.height == expected_curve_rows(len(PARTITIONS), *grid)
    assert set(tables.curves["metric"]) == {*EPISODE_METRICS, *STRESS_METRICS}
    assert set(tables.curves["n"]) == set(tables.differences["n"]) == {PROTOCOL.episodes}
    assert {r["policy"] for r in tables.regression["by_policy"]} == set(PARTITIONS)
    assert {r["k"] for r in tables.regression["by_policy"]} == set(GRID.k_grid)
    assert tables.regret.height == len(PARTITIONS) * grid[0] * grid[1]
    assert set(tables.regret["n"]) == {PROTOCOL.episodes}
    assert tables.adaptivity.height == len(PARTITIONS) * (grid[0] * grid[1] + 1)
    assert tables.ablation.is_empty()  # dqn has no charged modes here


def test_differences_hold_the_detector_value_the_defence_and_vs_static(tables):
    comparisons = tables.differences.select("comparison", "policy", "reference").unique()
    expected = {("detector_value", key, key) for key in PARTITIONS} | {
        ("defended_vs_baseline", "dqn-robust-a050", "dqn-baseline-a050"),
        ("vs_static", "dqn-robust-a050", "static-a000"),
        ("vs_static", "dqn-baseline-a050", "static-a000"),
    }
    assert set(comparisons.rows()) == expected


def test_policies_without_a_detector_have_zero_detector_value_on_common_seeds(tables):
    """δ = 0 policies quote the same with and without f: a CRN check through the benchmark."""
    value = tables.differences.filter(comparison="detector_value", metric="profit")
    assert (value.filter(pl.col("policy") != "dqn-robust-a050")["mean"] == 0).all()
    assert (value.filter(policy="dqn-robust-a050", k=8)["mean"] != 0).any()


def test_summary_has_a_row_per_policy_and_k_and_the_ablation_table(tables):
    summary = summary_markdown("hotel", tables)
    assert summary.startswith("# Benchmark hotel\n")
    for key in PARTITIONS:
        for k in GRID.k_grid:
            assert f"| {key} | {k} |" in summary
    assert "No tier was trained in all four modes." in summary
    for key in PARTITIONS:  # one regret and adaptivity row per policy
        assert summary.count(f"| {key} | ") == len(GRID.k_grid) + 1
    ablation = factorial_effects(protocol_rows(FACTORIAL, episodes=3, effect=PLANTED), "dqn")
    with_ablation = summary_markdown("hotel", tables._replace(ablation=ablation))
    rows = ablation.select("alpha", "k", "effect").unique().height
    assert with_ablation.count("| 0.5 | ") == rows and "Tier dqn" in with_ablation


def test_saved_benchmark_writes_its_files_in_contract_order(tmp_path, tables):
    paths = save_benchmark(tmp_path, "hotel", tables)
    assert [p.name for p in paths] == list(BENCHMARK_FILES)
    assert pl.read_parquet(paths[0]).equals(tables.curves)
    assert pl.read_parquet(paths[3]).equals(tables.regret)
    assert pl.read_parquet(paths[5]).equals(tables.adaptivity)
    assert json.loads(paths[2].read_text())["detector"] == "fitted"
    assert paths[-1].read_text() == summary_markdown("hotel", tables)
