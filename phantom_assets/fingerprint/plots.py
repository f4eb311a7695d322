"""Figures of the fingerprint assets: kernel heatmap, gap histograms, ROC, prefix curve.

Every function returns a ``matplotlib.figure.Figure`` built without pyplot (no global state);
the caller saves and closes it. matplotlib is imported inside the functions so importing this
package stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from phantom_assets.constants import ACTORS, UNKNOWN_ACTOR
from phantom_assets.fingerprint.kernels import Kernel
from phantom_assets.fingerprint.statistics import auc, roc_curve

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_gap_histograms", "plot_kernel_heatmap", "plot_prefix_curve", "plot_roc"]

_COLORS = {"human": "tab:blue", "agent": "tab:red", UNKNOWN_ACTOR: "tab:gray"}


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def plot_kernel_heatmap(kernel: Kernel, title: str = "Transition kernel") -> Figure:
    """Heatmap of ``P(dst | src)``: rows = sources (y axis), columns = destinations (x axis)."""
    fig = _figure(8.0, 7.0)
    ax = fig.add_subplot()
    image = ax.imshow(np.asarray(kernel.probs), cmap="viridis", vmin=0.0, vmax=1.0)
    ticks = np.arange(len(kernel.states))
    ax.set_xticks(ticks, labels=list(kernel.states), rotation=90, fontsize=7)
    ax.set_yticks(ticks, labels=list(kernel.states), fontsize=7)
    ax.set_xlabel("destination (next event)")
    ax.set_ylabel("source (current event)")
    ax.set_title(f"{title} (κ = {kernel.kappa:g}, {kernel.n_transitions} transitions)")
    fig.colorbar(image, ax=ax, label="P(dst | src)")
    return fig


def plot_gap_histograms(scores: pl.DataFrame, bins: int = 40) -> Figure:
    """Histograms of the gap Δ_H − Δ_A by actor class (unlabeled shown when present)."""
    fig = _figure(7.0, 4.0)
    ax = fig.add_subplot()
    finite = scores.filter(pl.col("gap").is_finite())
    gaps = finite["gap"].to_numpy()
    edges = np.histogram_bin_edges(gaps if gaps.size else np.zeros(1), bins=bins)
    for actor in (*ACTORS, UNKNOWN_ACTOR):  # loop over <= 3 classes
        values = finite.filter(pl.col("actor") == actor)["gap"].to_numpy()
        if values.size:
            ax.hist(
                values,
                bins=edges,
                alpha=0.5,
                density=True,
                color=_COLORS[actor],
                label=f"{actor} (n = {values.size})",
            )
    ax.axvline(0.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlabel("gap = Δ_H − Δ_A (positive = agent-like)")
    ax.set_ylabel("density")
    ax.legend()
    return fig


def plot_roc(scores: pl.DataFrame) -> Figure:
    """ROC curve of the gap as an agent detector (labeled sessions, NaN gaps dropped)."""
    labeled = scores.filter(pl.col("actor").is_in(list(ACTORS)) & pl.col("gap").is_not_nan())
    is_agent = (labeled["actor"] == ACTORS[1]).to_numpy()
    gap = labeled["gap"].to_numpy()
    fig = _figure(5.0, 5.0)
    ax = fig.add_subplot()
    if is_agent.any() and (~is_agent).any():
        fpr, tpr = roc_curve(gap[~is_agent], gap[is_agent])
        ax.plot(fpr, tpr, color="tab:red", label=f"AUC = {auc(gap[~is_agent], gap[is_agent]):.3f}")
    ax.plot([0, 1], [0, 1], color="gray", linestyle=":", label="chance")
    ax.set_xlabel("false positive rate (humans flagged)")
    ax.set_ylabel("true positive rate (agents flagged)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="lower right")
    return fig


def plot_prefix_curve(curve: Sequence[dict[str, Any]]) -> Figure:
    """Accuracy and AUC vs prefix length (``SeparabilityReport.prefix_curve``)."""
    fig = _figure(6.0, 4.0)
    ax = fig.add_subplot()
    lengths = [row["prefix_len"] for row in curve]
    for key, color in (("auc", "tab:red"), ("accuracy", "tab:blue")):
        values = [np.nan if row[key] is None else row[key] for row in curve]
        ax.plot(lengths, values, marker="o", color=color, label=key)
    ax.axhline(0.5, color="gray", linestyle=":")
    ax.set_xlabel("prefix length (events)")
    ax.set_ylabel("score")
    ax.set_ylim(0, 1.02)
    ax.legend()
    return fig
