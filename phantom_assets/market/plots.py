"""The COI erosion figure (docs/method.md#agents-and-coi-erosion: the thesis'
headline figure).

Returns a ``matplotlib.figure.Figure`` built without pyplot (no global state, Agg canvas); the
caller saves and closes it. matplotlib is imported inside the function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_STYLES = {"coi_a": "-", "coi_h": ":", "coi": "--"}
_LABELS = {"coi_a": "COI_A", "coi_h": "COI_H", "coi": "COI"}


def _band(ax: Axes, x, part: pl.DataFrame, style: str, label: str, color=None) -> None:
    """One mean line with its CI band."""
    (line,) = ax.plot(x, part["mean"].to_numpy(), style, marker="o", ms=3, label=label, color=color)
    ax.fill_between(
        x, part["ci_low"].to_numpy(), part["ci_high"].to_numpy(), color=line.get_color(), alpha=0.15
    )


def plot_coi_erosion(
    erosion: pl.DataFrame, reference: pl.DataFrame | None = None, detector: float = 0.0
) -> Figure:
    """Left: COI_A, COI_H and COI against K (log2 axis), one colour per α, 95% CI bands over
    episode seeds, and the m = 0 order-statistic line `reference` (`k, coi_a`). Right: COI
    against α, one line per K. Rows of the erosion table at detector strength `detector`.

    Raises:
        ValueError: when the table has no COI rows at `detector`.
    """
    from matplotlib.figure import Figure

    rows = erosion.filter((pl.col("detector") == detector) & pl.col("metric").is_in(_STYLES))
    if rows.is_empty():
        raise ValueError(f"no COI rows in the erosion table at detector {detector}")
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    by_k, by_alpha = fig.subplots(1, 2)
    colors = {a: f"C{i}" for i, a in enumerate(sorted(set(rows["alpha"].to_list())))}
    groups = rows.sort("metric", "alpha", "k").group_by("metric", "alpha", maintain_order=True)
    for (metric, alpha), part in groups:
        _band(
            by_k,
            part["k"].to_numpy(),
            part,
            _STYLES[str(metric)],
            f"{_LABELS[str(metric)]} α={alpha:g}",
            colors[alpha],
        )
    if reference is not None:
        by_k.plot(
            reference["k"].to_numpy(),
            reference["coi_a"].to_numpy(),
            "k-",
            lw=0.8,
            label="m = 0 order statistic 2w·base/(K+1)",
        )
    by_k.set_xscale("log", base=2)
    by_k.set_xlabel("K (clean sessions per agent)")
    by_k.set_ylabel("COI = mean price paid − p_min")
    by_k.set_title(f"COI erosion vs K (δ = {detector:g}; mean, t 95% CI over seeds)")
    by_k.legend(fontsize=7, ncols=2)
    coi = rows.filter(pl.col("metric") == "coi").sort("k", "alpha")
    for (k,), part in coi.group_by("k", maintain_order=True):
        _band(by_alpha, part["alpha"].to_numpy(), part, "-", f"K={k}")
    by_alpha.set_xlabel("α (share of shoppers sending an agent)")
    by_alpha.set_ylabel("COI (all purchases)")
    by_alpha.set_title("COI vs α")
    by_alpha.legend(fontsize=7)
    return fig


def plot_ledger(ledger: pl.DataFrame, k: int, store: str = "") -> Figure:
    """The agent ledger at one K: per α the money quantities with their intervals, as a share of
    the best undefended profit at α = 0."""
    from matplotlib.figure import Figure

    money = (
        "personalization_value",
        "agents_take",
        "perfect_detector",
        "fitted_detector",
        "beyond_engagement",
    )
    rows = ledger.filter(pl.col("k") == k, pl.col("quantity").is_in(money))
    fig = Figure(figsize=(7.0, 3.8), layout="constrained")
    ax = fig.subplots()
    labels, shares, lows, highs, colors = [], [], [], [], []
    for r in rows.iter_rows(named=True):
        scale = r["value"] / r["share_of_profit"] if r["share_of_profit"] else float("nan")
        labels.append(f"{r['quantity'].replace('_', ' ')}\nα = {r['alpha']:g}")
        shares.append(100 * r["share_of_profit"])
        lows.append(100 * r["ci_low"] / scale)
        highs.append(100 * r["ci_high"] / scale)
        colors.append(f"C{money.index(r['quantity'])}")
    x = range(len(labels))
    ax.bar(x, shares, color=colors)
    ax.errorbar(
        x,
        shares,
        yerr=[
            [s - lo for s, lo in zip(shares, lows, strict=True)],
            [hi - s for s, hi in zip(shares, highs, strict=True)],
        ],
        fmt="none",
        ecolor="k",
        capsize=4,
    )
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xticks(list(x), labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("% of the best undefended profit at α = 0")
    ax.set_title(f"Agent ledger {store} (K = {k}; store-sample 95% intervals)".strip(), fontsize=9)
    return fig
