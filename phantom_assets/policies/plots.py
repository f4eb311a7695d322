"""Training figures: the learning curve of a trained policy partition.

Returns a ``matplotlib.figure.Figure`` built without pyplot (no global state); the caller saves and
closes it. matplotlib is imported inside the function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_learning_curve(curve: pl.DataFrame, title: str) -> Figure:
    """Episode reward against training timesteps, one line per training seed (`train_seed`)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3.5), layout="constrained")
    ax = fig.add_subplot()
    by_seed = curve.sort("train_seed", "timesteps").group_by("train_seed", maintain_order=True)
    for (seed,), part in by_seed:
        ax.plot(part["timesteps"].to_numpy(), part["reward"].to_numpy(), label=f"seed {seed}")
    ax.set_xlabel("training timesteps")
    ax.set_ylabel("episode reward (unscaled)")
    ax.set_title(title)
    if curve.height:
        ax.legend(fontsize=7)
    return fig
