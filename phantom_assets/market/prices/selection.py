"""Which engagement signal the store prices on: experiment-clustered cross-validation.

Every candidate of `constants.ENGAGEMENT_SIGNALS` is fitted on the quotes of k − 1 folds of
experiments (fold = stable hash of the experiment id, as for the fingerprint folds) and scored on
the held-out fold by its squared log-price error; a held-out quote whose product the training folds
never quoted is not scored (for any candidate, so all are scored on the same quotes). The
selected signal is the one with the smallest CV mean squared error -- except that the no-markup
candidate (`constants.NO_MARKUP_SIGNAL`) wins whenever it is within one standard error of the best
(the one-SE rule: a markup is claimed only when it predicts held-out experiments better). The SE of
a difference of CV errors is clustered by experiment (paired: the same quotes, summed per
experiment).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.constants import NO_MARKUP_SIGNAL
from phantom_assets.fingerprint.folds import assign_folds
from phantom_assets.market.prices.curve import fit_curve, markup_curve

__all__ = ["SignalScores", "predict_held_out", "select_signal"]


@dataclass(frozen=True)
class SignalScores:
    """Cross-validation of the candidate signals.

    Attributes:
        selected: The selected signal.
        rmse: CV root mean squared log-price error of every candidate (NaN if none scored).
        se_vs_best: Clustered SE of each candidate's CV MSE minus the best candidate's.
        n_scored: Held-out quotes scored (the same for every candidate).
        folds: Folds used.
    """

    selected: str
    rmse: dict[str, float]
    se_vs_best: dict[str, float]
    n_scored: int
    folds: int


def predict_held_out(
    y: np.ndarray, s: np.ndarray, product: np.ndarray, cluster: np.ndarray, train: np.ndarray
) -> np.ndarray:
    """Log-price predictions for the rows outside `train` (NaN where the product is unseen).

    The model is fitted on the `train` rows (no markup when `s` is all zero there).
    """
    seen, local = np.unique(product[train], return_inverse=True)
    _, train_cluster = np.unique(cluster[train], return_inverse=True)
    counts = np.bincount(local).astype(np.float64)
    if np.any(s[train] > 0):
        fit = fit_curve(y[train], s[train], local, train_cluster, covariance=False)
        log_anchor, m, log_s0 = fit.log_anchor, fit.markup, fit.log_s0
    else:
        log_anchor, m, log_s0 = np.bincount(local, y[train]) / counts, 0.0, 0.0
    slot = np.searchsorted(seen, product[~train]).clip(0, seen.size - 1)
    known = seen[slot] == product[~train]
    pred = np.full(int((~train).sum()), np.nan)
    curve = markup_curve(s[~train][known], m, log_s0)[0]
    pred[known] = log_anchor[slot[known]] + curve
    return pred


def select_signal(
    y: np.ndarray,
    signals: dict[str, np.ndarray],
    product: np.ndarray,
    experiments: np.ndarray,
    folds: int,
) -> SignalScores:
    """Cross-validate every candidate signal and select one (module docstring).

    Args:
        y: (N,) log prices of the view quotes.
        signals: candidate name -> (N,) engagement before each quote.
        product: (N,) product index.
        experiments: (N,) experiment ids (strings; the fold and cluster unit).
        folds: Number of folds (>= 2).

    Raises:
        ValueError: for no candidates or fewer than 2 folds.
    """
    if not signals or folds < 2:
        raise ValueError(f"need >= 1 candidate signal and >= 2 folds, got {list(signals)}, {folds}")
    names = list(signals)
    if len(names) == 1:
        return SignalScores(names[0], {names[0]: float("nan")}, {names[0]: 0.0}, 0, 0)
    unique_xp, cluster = np.unique(experiments, return_inverse=True)
    fold = assign_folds(list(unique_xp), folds)[cluster]
    errors = np.full((len(names), y.size), np.nan)
    for k in np.unique(fold):  # one pass per fold (k <= folds)
        held = fold == k
        for j, name in enumerate(names):  # one fit per candidate signal
            errors[j, held] = y[held] - predict_held_out(y, signals[name], product, cluster, ~held)
    scored = np.all(np.isfinite(errors), axis=0)
    sq = errors[:, scored] ** 2
    n = int(scored.sum())
    mse = sq.mean(axis=1) if n else np.full(len(names), np.nan)
    markup = [j for j, name in enumerate(names) if name != NO_MARKUP_SIGNAL]
    best = markup[int(np.nanargmin(mse[markup]))] if n and markup else 0
    per_xp = np.stack([np.bincount(cluster[scored], row, unique_xp.size) for row in sq])
    diff = per_xp - per_xp[best]
    g = max(int(np.unique(cluster[scored]).size), 2)
    centred = diff - np.outer(mse - mse[best], np.bincount(cluster[scored], None, unique_xp.size))
    se = np.sqrt(g / (g - 1) * (centred**2).sum(axis=1)) / max(n, 1)
    selected = names[best]
    if NO_MARKUP_SIGNAL in names and n:
        none = names.index(NO_MARKUP_SIGNAL)
        if mse[none] - mse[best] <= se[none]:
            selected = NO_MARKUP_SIGNAL
    return SignalScores(
        selected,
        {name: float(np.sqrt(mse[j])) for j, name in enumerate(names)},
        {name: float(se[j]) for j, name in enumerate(names)},
        n,
        int(np.unique(fold).size),
    )
