"""The observed-COI figure: premium over the anchor by class with clustered CIs.

Returns a ``matplotlib.figure.Figure`` built without pyplot (no global state); the caller saves
and closes it. matplotlib is imported inside the function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from phantom_assets.market.prices.coi import CoiDifference

__all__ = ["plot_observed_coi"]


def plot_observed_coi(
    coi: pl.DataFrame, difference: CoiDifference | None = None, store: str = ""
) -> Figure:
    """Bars of each class's premium (price/anchor − 1, in %) with its experiment-clustered CI;
    the title states the human − agent difference and its test when `difference` is given.

    Raises:
        ValueError: when `coi` lacks the `observed_coi` columns.
    """
    from matplotlib.figure import Figure

    missing = {"class", "premium", "ci_low", "ci_high", "n_quotes", "n_experiments"} - set(
        coi.columns
    )
    if missing:
        raise ValueError(f"observed COI table lacks the columns {sorted(missing)}")
    fig = Figure(figsize=(5.5, 4.0), layout="constrained")
    ax = fig.subplots()
    x = np.arange(coi.height)
    premium = 100.0 * coi["premium"].to_numpy()
    err = np.abs(100.0 * np.vstack([coi["ci_low"].to_numpy(), coi["ci_high"].to_numpy()]) - premium)
    ax.bar(x, premium, color=["C0", "C3"][: coi.height] if coi.height <= 2 else None)
    ax.errorbar(x, premium, yerr=np.nan_to_num(err), fmt="none", ecolor="k", capsize=6)
    rows = coi.select("class", "n_quotes", "n_experiments").iter_rows()
    labels = [f"{c}\n{q} quotes, {g} experiments" for c, q, g in rows]
    ax.set_xticks(x, labels)
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_ylabel("premium over anchor (%)")
    title = f"Observed COI {store}".strip()
    if difference is not None:
        d = difference
        title += (
            f"\nhuman − agent = {100 * d.difference:.2f} pp, "
            f"p = {d.p_value:.3g} (Welch cluster t, df {d.df:.1f})"
        )
    ax.set_title(title, fontsize=9)
    return fig
