"""The conversion figure of `store_demand`: P(buy) against price / anchor at a few engagement
levels, per class, with the replicates' intervals and the observed conversion of the decisions.

Built without pyplot (no global state); the caller saves and closes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["SHOWN_ENGAGEMENT", "plot_conversion"]

SHOWN_ENGAGEMENT = (0.0, 2.0, 5.0, 12.0)
"""The engagement levels (signal units) drawn as curves."""


def plot_conversion(
    surface: pl.DataFrame,
    observed: pl.DataFrame,
    title: str,
    unidentified: Mapping[str, str] | None = None,
) -> Figure:
    """One panel per class of `surface` (`CONVERSION_SCHEMA`): a curve with its band per level
    of `SHOWN_ENGAGEMENT`; `observed` (`class, ratio, conversion, n`: binned decisions) as dots.
    A class in `unidentified` (class -> reason) shows its dots only: a fit at the edge of its
    parameter space draws curves the data do not support."""
    unidentified = unidentified or {}
    from matplotlib.figure import Figure

    classes = surface["class"].unique(maintain_order=True).to_list() or ["human"]
    fig = Figure(figsize=(4.2 * len(classes), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(classes), sharey=True))
    for ax, actor in zip(axes, classes, strict=True):
        rows = surface.filter(pl.col("class") == actor)
        for i, level in enumerate(() if actor in unidentified else SHOWN_ENGAGEMENT):
            curve = rows.filter(pl.col("engagement") == level).sort("ratio")
            if curve.is_empty():
                continue
            x = curve["ratio"].to_numpy()
            ax.plot(x, curve["p_buy"].to_numpy(), color=f"C{i}", label=f"s = {level:g}")
            ax.fill_between(
                x,
                curve["ci_low"].to_numpy(),
                curve["ci_high"].to_numpy(),
                color=f"C{i}",
                alpha=0.15,
                lw=0,
            )
        dots = observed.filter(pl.col("class") == actor)
        if dots.height:
            ax.scatter(
                dots["ratio"],
                dots["conversion"],
                s=8 + dots["n"].to_numpy() / 4,
                color="k",
                alpha=0.6,
                label="observed",
            )
        shown = f"{actor}: not identified, observed only" if actor in unidentified else actor
        ax.set_title(shown, fontsize=9)
        ax.set_xlabel("price / anchor")
        ax.set_ylim(0.0, 1.0)
    axes[0].set_ylabel("P(buy)")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return fig
