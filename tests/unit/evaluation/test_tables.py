"""The benchmark tables of one store, their summary, trace selection and files."""

from __future__ import annotations

import json

import polars as pl

from phantom_assets.constants import SELECTION_SPLIT
from phantom_assets.evaluation import (
    BENCHMARK_FILES,
    EPISODE_METRICS,
    STRESS_METRICS,
    benchmark_tables,
    expected_curve_rows,
    save_benchmark,
    stress_as_curves_input,
    summary_markdown,
    trace_selection,
)
from tests.unit.evaluation.conftest import PARTITIONS, PROTOCOL


def _store(partitions) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    return tuple(pl.concat(frames) for frames in zip(*partitions.values(), strict=True))


def test_stress_input_keeps_the_selection_seeds_keyed_by_the_nominal_alpha(partitions):
    stress = partitions["static-a000"].stress
    stressed = stress_as_curves_input(stress)
    assert stressed.height == stress.filter(split=SELECTION_SPLIT).height
    assert sorted(set(stressed["alpha"])) == list(PROTOCOL.alphas)
    assert set(STRESS_METRICS) <= set(stressed.columns)
    assert not set(EPISODE_METRICS) & set(stressed.columns)
    assert set(stressed["seed"]) == set(PROTOCOL.selection_seeds)


def test_benchmark_tables_cover_every_policy_alpha_metric_over_episode_seeds(partitions):
    nominal, stress, _ = _store(partitions)
    curves, differences, regression = benchmark_tables(nominal, stress)
    assert curves.height == expected_curve_rows(nominal, len(PROTOCOL.alphas))
    assert set(curves["metric"]) == {*EPISODE_METRICS, *STRESS_METRICS}
    assert set(curves["n"]) == set(differences["n"]) == {PROTOCOL.episodes}
    assert set(differences["defended"]) == {"qtable-robust-a050"}
    assert {r["policy"] for r in regression["by_policy"]} == set(PARTITIONS)


def test_summary_has_a_row_per_policy_and_per_revenue_difference(partitions):
    nominal, stress, _ = _store(partitions)
    _, differences, regression = benchmark_tables(nominal, stress)
    summary = summary_markdown("hotel", regression, differences)
    assert summary.startswith("# Benchmark hotel\n")
    assert all(f"| {key} |" in summary for key in PARTITIONS)
    assert summary.count("| qtable-robust-a050 | qtable-baseline-a050 |") == len(PROTOCOL.alphas)


def test_trace_selection_shows_the_middle_alpha_of_the_middle_training_alpha_and_static(
    partitions,
):
    traces = pl.concat(
        [partitions["qtable-robust-a050"].traces, partitions["static-a000"].traces,
         partitions["qtable-baseline-a050"].traces.with_columns(train_alpha=pl.lit(1.0))]
    )  # fmt: skip
    selected = trace_selection(traces)
    assert set(selected["alpha"]) == {0.5} and set(selected["train_seed"]) == {0}
    assert set(selected["policy"]) == {"qtable-robust-a050", "static-a000"}


def test_saved_benchmark_writes_its_four_files_in_contract_order(tmp_path, partitions):
    nominal, stress, _ = _store(partitions)
    curves, differences, regression = benchmark_tables(nominal, stress)
    paths = save_benchmark(tmp_path, "hotel", curves, differences, regression)
    assert [p.name for p in paths] == list(BENCHMARK_FILES)
    assert pl.read_parquet(paths[0]).equals(curves)
    assert json.loads(paths[2].read_text())["by_mode"] == json.loads(
        json.dumps(regression["by_mode"])
    )
    assert paths[3].read_text() == summary_markdown("hotel", regression, differences)
