"""Training figures: the learning curve of a trained policy partition.

Returns a ``matplotlib.figure.Figure`` built without pyplot (no global state); the caller saves and
closes it. matplotlib is imported inside the function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from phantom_assets.policies.base import PLATEAU_WINDOW, plateau_ratio

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SMOOTHING = 0.1
"""The moving average spans this share of a seed's episodes."""


def plot_learning_curve(curve: pl.DataFrame, title: str) -> Figure:
    """Episode reward (money) against training timesteps per training seed (`train_seed`): the
    raw episodes faintly, their moving average boldly, labelled with the seed's plateau ratio;
    dotted lines mark the two windows the plateau ratio compares."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3.5), layout="constrained")
    ax = fig.add_subplot()
    by_seed = curve.sort("train_seed", "timesteps").group_by("train_seed", maintain_order=True)
    for (seed,), part in by_seed:
        steps, reward = part["timesteps"].to_numpy(), part["reward"]
        window = max(1, round(SMOOTHING * part.height))
        (raw,) = ax.plot(steps, reward.to_numpy(), alpha=0.25, linewidth=0.8)
        label = (
            f"seed {seed}: {SMOOTHING:.0%} moving average, plateau ratio "
            f"{plateau_ratio(reward.to_numpy()):.3f}"
        )
        ax.plot(
            steps,
            reward.rolling_mean(window, min_samples=1).to_numpy(),
            color=raw.get_color(),
            label=label,
        )
        size = int(PLATEAU_WINDOW * part.height)
        for start in (part.height - 2 * size, part.height - size) if size else ():
            ax.axvline(steps[start], color=raw.get_color(), linestyle=":", linewidth=0.8)
    ax.set_xlabel("training timesteps")
    ax.set_ylabel("episode reward (money)")
    ax.set_title(title)
    if curve.height:
        ax.legend(fontsize=7)
    return fig
