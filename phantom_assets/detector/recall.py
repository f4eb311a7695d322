"""Recall at a fixed human false-positive rate, by prefix length, with experiment-clustered
intervals (docs/detector.md#recall-by-prefix-length).

For a detector's out-of-fold scores of one prefix length, τ is the (1 − FPR) quantile of the
human scores (`np.quantile(..., method="higher")`, the market's rule, `compile.detector_threshold`)
and recall is the share of agent sessions scoring above it. The interval resamples experiments
with replacement (a subject's sessions move together; τ is re-set in every resample, as it would
be on another sample of the store) and takes percentiles; the difference of two detectors is
resampled paired (the same experiments). Its coverage is checked by
`tests/statistics/test_recall_calibration.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "DETECTOR_FPRS",
    "RECALL_METHOD",
    "RECALL_SCHEMA",
    "cluster_resamples",
    "plot_recall",
    "recall_at_fpr",
    "recall_markdown",
    "recall_table",
]

DETECTOR_FPRS: tuple[float, ...] = (0.01, 0.02, 0.05)
"""The human false-positive rates the recall table reports."""
RECALL_METHOD = "experiment-cluster bootstrap percentile"
RECALL_SCHEMA: dict[str, pl.DataType] = {
    "detector": pl.String(),
    "prefix": pl.String(),
    "fpr": pl.Float64(),
    "recall": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "n_human": pl.Int64(),
    "n_agent": pl.Int64(),
    "n_experiments": pl.Int64(),
    "method": pl.String(),
}
"""Contract of `quote_detector/recall.parquet` (docs/architecture.md#column-contracts): one row per
detector (and each difference `a − b`), prefix and false-positive rate."""


def recall_at_fpr(score: np.ndarray, is_agent: np.ndarray, fprs: Sequence[float]) -> np.ndarray:
    """(len(fprs),) share of agent sessions scoring above τ, τ flagging `fpr` of the humans;
    NaN where a class is absent."""
    score, is_agent = np.asarray(score, dtype=np.float64), np.asarray(is_agent, dtype=bool)
    human, agent = score[~is_agent], score[is_agent]
    if not human.size or not agent.size:
        return np.full(len(fprs), np.nan)
    tau = np.quantile(human, 1.0 - np.asarray(fprs, dtype=np.float64), method="higher")
    return np.mean(agent[:, None] > tau[None, :], axis=0)


def cluster_resamples(
    experiment: Sequence[str], n_resamples: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """`n_resamples` row-index arrays, each the rows of G experiments drawn with replacement
    from the G experiments (the first resample's rows come first in their experiment order)."""
    codes, inverse = np.unique(
        np.asarray(experiment, dtype=object).astype(str), return_inverse=True
    )
    order = np.argsort(inverse, kind="stable")
    sizes = np.bincount(inverse, minlength=codes.size)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = []
    for _ in range(n_resamples):
        drawn = rng.integers(0, codes.size, size=codes.size)
        lengths = sizes[drawn]
        offsets = np.repeat(starts[drawn] - np.cumsum(lengths) + lengths, lengths)
        out.append(order[offsets + np.arange(lengths.sum())])
    return out


def recall_table(
    scores: Mapping[str, Mapping[str, np.ndarray]],
    is_agent: np.ndarray,
    experiment: Sequence[str],
    *,
    fprs: Sequence[float] = DETECTOR_FPRS,
    differences: Sequence[tuple[str, str]] = (),
    n_resamples: int = 1000,
    rng: np.random.Generator,
    level: float = 0.95,
) -> pl.DataFrame:
    """`RECALL_SCHEMA` rows of every detector's recall by prefix and FPR, and of each
    difference `(a, b)` (recall of a − recall of b, resampled paired).

    Args:
        scores: detector → prefix label → (n,) out-of-fold score of every session.
        is_agent: (n,) the class of each session.
        experiment: (n,) each session's experiment (the resampled cluster).
        fprs: the human false-positive rates.
        differences: pairs of detector names to compare.
        n_resamples: bootstrap resamples.
        rng: randomness of the resamples.
        level: interval level.
    """
    is_agent = np.asarray(is_agent, dtype=bool)
    n_experiments = int(np.unique(np.asarray(experiment, dtype=object).astype(str)).size)
    resamples = cluster_resamples(experiment, n_resamples, rng)
    tails = (100 * (1 - level) / 2, 100 * (1 + level) / 2)
    prefixes = list(next(iter(scores.values())).keys())
    point: dict[tuple[str, str], np.ndarray] = {}
    boot: dict[tuple[str, str], np.ndarray] = {}
    for name, by_prefix in scores.items():
        for prefix in prefixes:
            score = np.asarray(by_prefix[prefix], dtype=np.float64)
            point[name, prefix] = recall_at_fpr(score, is_agent, fprs)
            boot[name, prefix] = np.array(
                [recall_at_fpr(score[rows], is_agent[rows], fprs) for rows in resamples]
            )
    names = list(scores)
    for a, b in differences:
        names.append(label := f"{a} − {b}")
        for prefix in prefixes:
            point[label, prefix] = point[a, prefix] - point[b, prefix]
            boot[label, prefix] = boot[a, prefix] - boot[b, prefix]
    rows: list[dict[str, object]] = []
    for name in names:
        for prefix in prefixes:
            low, high = np.nanpercentile(boot[name, prefix], tails, axis=0)
            for j, fpr in enumerate(fprs):
                rows.append(
                    {
                        "detector": name,
                        "prefix": prefix,
                        "fpr": float(fpr),
                        "recall": float(point[name, prefix][j]),
                        "ci_low": float(low[j]),
                        "ci_high": float(high[j]),
                        "n_human": int((~is_agent).sum()),
                        "n_agent": int(is_agent.sum()),
                        "n_experiments": n_experiments,
                        "method": RECALL_METHOD,
                    }
                )
    return pl.DataFrame(rows, schema=RECALL_SCHEMA)


def recall_markdown(recall: pl.DataFrame, fpr: float) -> str:
    """The recall table at one false-positive rate as markdown: one row per prefix, one column
    per detector (and difference), each `recall [95% CI]`."""
    rows = recall.filter(pl.col("fpr") == fpr)
    names = list(dict.fromkeys(rows["detector"].to_list()))
    prefixes = list(dict.fromkeys(rows["prefix"].to_list()))
    cell = {(r["detector"], r["prefix"]): r for r in rows.iter_rows(named=True)}
    lines = [
        f"| prefix (events) | {' | '.join(f'{name} recall at {fpr:.0%} FPR' for name in names)} |",
        "|---|" + "---:|" * len(names),
    ]
    for prefix in prefixes:
        values = [
            f"{c['recall']:.1%} [{c['ci_low']:.1%}, {c['ci_high']:.1%}]"
            for c in (cell[name, prefix] for name in names)
        ]
        lines.append(f"| {prefix} | {' | '.join(values)} |")
    return "\n".join(lines) + "\n"


def plot_recall(recall: pl.DataFrame, fpr: float, title: str = "") -> Figure:
    """Recall at one false-positive rate against the prefix length, one line per detector (not
    the differences), with the intervals as error bars."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.4), layout="constrained")
    ax = fig.subplots()
    rows = recall.filter(pl.col("fpr") == fpr, ~pl.col("detector").str.contains(" − "))
    for name in dict.fromkeys(rows["detector"].to_list()):
        own = rows.filter(pl.col("detector") == name)
        x = range(own.height)
        ax.errorbar(
            x,
            100 * own["recall"],
            yerr=[100 * (own["recall"] - own["ci_low"]), 100 * (own["ci_high"] - own["recall"])],
            marker="o",
            capsize=3,
            label=name,
        )
        ax.set_xticks(list(x), own["prefix"].to_list())
    ax.set_xlabel("prefix (events; quote: the market's quote)")
    ax.set_ylabel("agent sessions flagged (%)")
    ax.set_ylim(-2, 102)
    ax.legend(fontsize=8)
    ax.set_title(f"{title or 'Recall by prefix length'} (at {fpr:.0%} human FPR)", fontsize=9)
    return fig
