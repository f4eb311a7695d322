"""Benchmark figures: a metric against α per policy with its CI band (one panel per K), and the
chosen action against the observed shopper α̂ (does a policy react to agents?).

Every function returns a ``matplotlib.figure.Figure`` built without pyplot (no global state); the
caller saves and closes it. matplotlib is imported inside the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from phantom_assets.evaluation.protocol import FITTED

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_LINESTYLES = {"baseline": "--", "robust": "-", "charged": "-.", "robustcharged": "-"}
_ACTION_PANELS = (
    ("mean_level", "base level"),
    ("mean_markup", "markup m"),
    ("mean_detector", "detector strength δ"),
)


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def plot_metric_vs_alpha(rows: pl.DataFrame, label: str) -> Figure:
    """`mean` against α with its [ci_low, ci_high] band, one line per policy, one panel per K.

    Args:
        rows: columns `policy, alpha, k, mean, ci_low, ci_high` and optionally `mode` (learnable
            modes get their own line style, heuristics dotted), e.g. one metric of the curves.
        label: the y-axis label and title.

    Raises:
        ValueError: when `rows` is empty.
    """
    if rows.is_empty():
        raise ValueError(f"no rows to plot for {label!r}")
    frame = rows if "mode" in rows.columns else rows.with_columns(mode=pl.lit("heuristic"))
    ks = sorted(set(frame["k"].to_list()))
    fig = _figure(4.5 * len(ks) + 1.5, 4.5)
    axes = fig.subplots(1, len(ks), sharey=True, squeeze=False)[0]
    for ax, k in zip(axes, ks, strict=True):
        part = frame.filter(pl.col("k") == k).sort("policy", "alpha")
        for (policy,), line in part.group_by("policy", maintain_order=True):
            alpha = line["alpha"].to_numpy()
            style = _LINESTYLES.get(line["mode"][0], ":")
            (drawn,) = ax.plot(alpha, line["mean"].to_numpy(), style, marker="o", label=policy)
            ax.fill_between(
                alpha,
                line["ci_low"].to_numpy(),
                line["ci_high"].to_numpy(),
                color=drawn.get_color(),
                alpha=0.15,
            )
        ax.set_xlabel("α (share of shoppers sending an agent)")
        ax.set_title(f"K = {k}")
    axes[0].set_ylabel(label)
    axes[-1].legend(fontsize=6, ncols=2)
    fig.suptitle(f"{label} vs α (mean, Student-t 95% CI over episode seeds)")
    return fig


def plot_actions_vs_alpha_hat(nominal: pl.DataFrame) -> Figure:
    """Episode-mean base level, markup and detector strength against the episode-mean shopper α̂
    the shop observed (the share of shoppers sending agents, on α's scale), fitted detector: one
    point per episode, one line per policy through its per-(α, K) means (sorted by α̂). A flat
    line is a policy that ignores agents.

    Raises:
        ValueError: when there are no fitted-detector rows.
    """
    rows = nominal.filter(pl.col("detector") == FITTED)
    if rows.is_empty():
        raise ValueError("no fitted-detector rows to plot")
    hat = "mean_shopper_alpha_hat"
    columns = [hat, *(c for c, _ in _ACTION_PANELS)]
    means = rows.group_by("policy", "alpha", "k").agg(pl.col(columns).mean()).sort("policy", hat)
    fig = _figure(13.5, 4.5)
    axes = fig.subplots(1, len(_ACTION_PANELS))
    for (policy,), line in means.group_by("policy", maintain_order=True):
        points = rows.filter(pl.col("policy") == policy)
        for ax, (column, _) in zip(axes, _ACTION_PANELS, strict=True):
            (drawn,) = ax.plot(
                line[hat].to_numpy(), line[column].to_numpy(), marker="o", label=policy
            )
            ax.scatter(
                points[hat].to_numpy(),
                points[column].to_numpy(),
                s=6,
                color=drawn.get_color(),
                alpha=0.3,
            )
    for ax, (_, label) in zip(axes, _ACTION_PANELS, strict=True):
        ax.set_xlabel("episode-mean shopper α̂ (observed)")
        ax.set_ylabel(f"episode-mean {label}")
    axes[-1].legend(fontsize=6, ncols=2)
    fig.suptitle("Chosen action vs observed shopper α̂ (fitted detector)")
    return fig
