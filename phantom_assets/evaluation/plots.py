"""Benchmark figures: a metric against α per policy with its CI band, and price traces.

Every function returns a ``matplotlib.figure.Figure`` built without pyplot (no global state); the
caller saves and closes it. matplotlib is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_LINESTYLES = {"robust": "-", "baseline": "--"}


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def plot_metric_vs_alpha(
    curves: pl.DataFrame, metric: str, policies: Sequence[str] | None = None
) -> Figure:
    """`metric` against α for every policy of the `curves` frame, with its 95% CI band.

    Robust policies are drawn solid, baselines dashed, heuristics dotted.

    Raises:
        ValueError: when `metric` has no rows in `curves`.
    """
    rows = curves.filter(pl.col("metric") == metric)
    if policies is not None:
        rows = rows.filter(pl.col("policy").is_in(list(policies)))
    if rows.is_empty():
        raise ValueError(f"no curve rows for metric {metric!r}")
    fig = _figure(7.5, 4.5)
    ax = fig.add_subplot()
    for (policy,), part in rows.sort("policy", "alpha").group_by("policy", maintain_order=True):
        alpha = part["alpha"].to_numpy()
        style = _LINESTYLES.get(part["mode"][0], ":")
        (line,) = ax.plot(alpha, part["mean"].to_numpy(), style, marker="o", label=str(policy))
        ax.fill_between(alpha, part["ci_low"].to_numpy(), part["ci_high"].to_numpy(),
                        color=line.get_color(), alpha=0.15)  # fmt: skip
    ax.set_xlabel("contamination α (agent share)")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs α (mean, bootstrap 95% CI)")
    ax.legend(fontsize=7, ncols=2)
    return fig


def plot_price_traces(traces: pl.DataFrame, title: str = "Price traces") -> Figure:
    """Mean price per step, one line per (policy, α) of `traces`.

    Args:
        traces: columns `alpha, step, mean_price` (from `price_traces`) and optionally `policy`.
        title: figure title.
    """
    if traces.is_empty():
        raise ValueError("no price traces to plot")
    frame = traces if "policy" in traces.columns else traces.with_columns(policy=pl.lit("policy"))
    fig = _figure(7.5, 4.5)
    ax = fig.add_subplot()
    groups = frame.sort("policy", "alpha", "step").group_by("policy", "alpha", maintain_order=True)
    for (policy, alpha), part in groups:
        label = f"{policy} α={alpha:g}"
        ax.plot(part["step"].to_numpy(), part["mean_price"].to_numpy(), label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("mean price")
    ax.set_title(title)
    ax.legend(fontsize=7, ncols=2)
    return fig
