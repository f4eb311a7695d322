"""Plot helpers return matplotlib Figures without touching pyplot state."""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from phantom_assets.fingerprint import (
    SeparabilityParams,
    fit_class_kernels,
    plot_gap_histograms,
    plot_kernel_heatmap,
    plot_prefix_curve,
    plot_roc,
    prefix_scores,
    score_sessions,
    separability_report,
)


def test_plot_helpers_return_figures(separable_sessions: pl.DataFrame) -> None:
    human = fit_class_kernels(separable_sessions, "human", k=5)
    agent = fit_class_kernels(separable_sessions, "agent", k=5)
    scores = score_sessions(separable_sessions, human, agent, 1.0)
    prefix = prefix_scores(separable_sessions, human, agent, 1.0, max_prefix=4)
    params = SeparabilityParams(n_bootstrap=50, n_permutations=50)
    report = separability_report(
        scores,
        sessions=separable_sessions,
        rng=np.random.default_rng(0),
        params=params,
        prefix=prefix,
    )
    heatmap = plot_kernel_heatmap(human.full)
    figures = [
        heatmap,
        plot_gap_histograms(scores),
        plot_roc(scores),
        plot_prefix_curve(report.prefix_curve),
    ]
    assert all(isinstance(fig, Figure) for fig in figures)
    assert (
        "source" in heatmap.axes[0].get_ylabel() and "destination" in heatmap.axes[0].get_xlabel()
    )
