"""Benchmark figures are pyplot-free Figures: a panel per K with a line per policy, and three
action panels against α̂."""

from __future__ import annotations

import polars as pl
import pytest

from phantom_assets.evaluation import (
    benchmark_curves,
    plot_actions_vs_alpha_hat,
    plot_metric_vs_alpha,
)
from tests.unit.evaluation.conftest import protocol_rows

POLICIES = {"dqn-robust-a050": ("dqn", "robust", 0.5), "static-a000": ("static", "heuristic", 0.0)}


def test_plot_metric_vs_alpha_draws_a_panel_per_k_and_a_line_per_policy():
    from matplotlib.figure import Figure

    curves = benchmark_curves(protocol_rows(POLICIES, episodes=3), ["profit"])
    fig = plot_metric_vs_alpha(curves.filter(detector="fitted"), "profit")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert all(len(ax.get_lines()) == len(POLICIES) for ax in fig.axes)


def test_plot_metric_vs_alpha_rejects_empty_rows():
    curves = benchmark_curves(protocol_rows(POLICIES, episodes=3), ["profit"])
    with pytest.raises(ValueError, match="margin"):
        plot_metric_vs_alpha(curves.filter(metric="margin"), "margin")


def test_plot_actions_vs_alpha_hat_draws_level_markup_and_detector_per_policy(partitions):
    nominal = pl.concat([e.nominal for e in partitions.values()])
    fig = plot_actions_vs_alpha_hat(nominal)
    assert len(fig.axes) == 3
    assert all(len(ax.get_lines()) == len(partitions) for ax in fig.axes)
    with pytest.raises(ValueError, match="fitted"):
        plot_actions_vs_alpha_hat(nominal.filter(detector="permuted"))
