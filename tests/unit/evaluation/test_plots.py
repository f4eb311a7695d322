"""Benchmark figures are pyplot-free Figures with one line per policy or trace."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.evaluation import benchmark_curves, plot_metric_vs_alpha, plot_price_traces


def test_plot_metric_vs_alpha_draws_one_line_per_policy(evaluations):
    from matplotlib.figure import Figure

    curves = benchmark_curves(evaluations, ["revenue"])
    fig = plot_metric_vs_alpha(curves, "revenue")
    assert isinstance(fig, Figure)
    assert len(fig.axes[0].get_lines()) == 2


def test_plot_metric_vs_alpha_rejects_an_unknown_metric(evaluations):
    curves = benchmark_curves(evaluations, ["revenue"])
    with pytest.raises(ValueError, match="margin"):
        plot_metric_vs_alpha(curves, "margin")


def test_plot_price_traces_draws_one_line_per_policy_and_alpha():
    traces = pl.DataFrame({"policy": ["a"] * 4 + ["b"] * 4, "alpha": [0.0, 0.0, 1.0, 1.0] * 2,
                           "step": [0, 1] * 4, "mean_price": np.linspace(90, 110, 8)})  # fmt: skip
    fig = plot_price_traces(traces)
    assert len(fig.axes[0].get_lines()) == 4
