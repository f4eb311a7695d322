"""The quote-time detectors' recall intervals hold their coverage, and timing that does not differ
between the classes buys detector v2 nothing (docs/statistics.md#quote-time-recall).

- `recall_ci`: the experiment-cluster bootstrap interval of recall at a human false-positive rate
  (`detector.recall.recall_table`, as `quote_detector` runs it) on clustered scores whose true
  recall is known: a session's score is N(u_e, 1) for humans and N(d + u_e, 1) for agents, u_e
  ~ N(0, ρ/(1 − ρ)) per experiment (intra-experiment correlation ρ), so both marginals have SD
  s = 1/√(1 − ρ) and the true recall at rate r is 1 − Φ(z_{1−r} − d/s).
- `timing_null`: whole synthetic stores run through `detector.fit.fit_quote_detector` (kernels
  refitted per fold by the production fitter): the classes differ in their event law but share
  one timing law. The reported gain "v2 − kernel" at the quote must not be found (its interval
  above 0) more often than the one-sided level: v2's timing features carry nothing, and a
  monotone function of the kernel statistic alone ranks sessions as the kernel detector does.
- power (`timing_differs`): the same stores with agents' gaps faster and more regular (the demo
  simulator's profiles): how often the gain is found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.calibration.result import CalibrationResult, PowerResult
from phantom_assets.detector.fit import (
    KERNEL_DETECTOR,
    QUOTE_PREFIX,
    V2_DETECTOR,
    fit_quote_detector,
)
from phantom_assets.detector.recall import recall_table
from phantom_assets.fingerprint.sessions import fit_class_kernels
from phantom_assets.market.bank import fold_log_ratios

LEVEL = 0.95
FOLDS = 5
N_RESAMPLES = 200
EVENTS = (
    "search",
    "page_view",
    "view_item_page",
    "hover_over_title",
    "filter_for_price",
    "add_item_to_cart",
)
HUMAN_EVENT_LAW = np.array([0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
AGENT_EVENT_LAW = np.array([0.15, 0.2, 0.2, 0.2, 0.2, 0.05])
"""Event laws of the synthetic stores: the kernel detector separates them, not perfectly. Both
classes view and add to the cart alike and have one length law, so the quote comes after as many
events in both: under the timing null no feature of the prefix's timing (gaps, elapsed time)
depends on the class."""
HUMAN_TIMING, AGENT_TIMING = (4.5, 1.0), (0.8, 0.3)
"""(median s, log SD) of the gaps between events: the demo simulator's human and agent profiles
(`simulate.profiles`); the null gives agents the human law."""

__all__ = [
    "COVERAGE_LAYOUTS",
    "POWER_LAYOUTS",
    "SMALL_LAYOUTS",
    "STORE_LAYOUTS",
    "coverage",
    "power_studies",
    "simulate_store",
    "studies",
]


@dataclass(frozen=True)
class CoverageLayout:
    """Clustered scores: `experiments` per class of `sessions` each, correlation `rho`,
    separation `d`, at the human false-positive rate `fpr`."""

    name: str
    experiments: int
    sessions: int
    rho: float
    d: float
    fpr: float

    def true_recall(self) -> float:
        s = 1.0 / np.sqrt(1.0 - self.rho)
        return float(stats.norm.sf(stats.norm.ppf(1.0 - self.fpr) - self.d / s))


COVERAGE_LAYOUTS = (
    CoverageLayout("g40_m8_rho0_fpr2", 40, 8, 0.0, 2.5, 0.02),
    CoverageLayout("g40_m8_rho30_fpr2", 40, 8, 0.3, 2.5, 0.02),
    CoverageLayout("g40_m8_rho30_fpr5", 40, 8, 0.3, 2.5, 0.05),
)
SMALL_LAYOUTS = (CoverageLayout("g20_m8_rho30_fpr5", 20, 8, 0.3, 2.5, 0.05),)
"""Few experiments: the percentile interval under-covers (reported, docs/statistics.md)."""


@dataclass(frozen=True)
class StoreLayout:
    """A synthetic store: `experiments` per class of `sessions` each; `timing_differs`: agents
    have their own (faster, regular) gaps, else the humans'."""

    name: str
    experiments: int
    sessions: int
    timing_differs: bool


STORE_LAYOUTS = (StoreLayout("timing_null_g30_m6", 30, 6, False),)
POWER_LAYOUTS = (StoreLayout("timing_differs_g30_m6", 30, 6, True),)


def coverage(
    layout: CoverageLayout, n_reps: int, rng: np.random.Generator, clustered: bool = True
) -> CalibrationResult:
    """Coverage of the recall interval on `layout`; `clustered=False` resamples sessions as if
    independent (the mistake the experiment clusters prevent: it must not cover)."""
    target, covered = layout.true_recall(), 0
    n = layout.experiments * layout.sessions
    cluster = np.repeat(np.arange(2 * layout.experiments), layout.sessions)
    experiment = [f"x{i}" for i in (cluster if clustered else np.arange(2 * n))]
    is_agent = np.repeat([False, True], n)
    sd = np.sqrt(layout.rho / (1.0 - layout.rho))
    for _ in range(n_reps):  # replications
        effect = np.repeat(rng.normal(0.0, sd, 2 * layout.experiments), layout.sessions)
        score = rng.normal(size=2 * n) + effect + layout.d * is_agent
        row = recall_table(
            {"x": {QUOTE_PREFIX: score}},
            is_agent,
            experiment,
            fprs=(layout.fpr,),
            n_resamples=N_RESAMPLES,
            rng=rng,
            level=LEVEL,
        ).row(0, named=True)
        covered += row["ci_low"] <= target <= row["ci_high"]
    procedure = "recall_ci" if clustered else "recall_ci_sessions_resampled"
    return CalibrationResult(procedure, layout.name, LEVEL, n_reps, coverage=covered / n_reps)


def simulate_store(layout: StoreLayout, rng: np.random.Generator) -> pl.DataFrame:
    """Labelled sessions of a synthetic store (`detector.fit.SESSION_COLUMNS` plus `store` and
    `n_events`); folds by experiment."""
    rows = []
    for c, (law, timing) in enumerate(
        ((HUMAN_EVENT_LAW, HUMAN_TIMING), (AGENT_EVENT_LAW, AGENT_TIMING))
    ):
        median, log_sd = timing if layout.timing_differs else HUMAN_TIMING
        for e in range(layout.experiments):
            for s in range(layout.sessions):
                length = 2 + int(rng.poisson(4.0))
                events = [EVENTS[i] for i in rng.choice(len(EVENTS), size=length, p=law)]
                gaps = np.exp(np.log(median) + log_sd * rng.standard_normal(length - 1))
                offsets = np.concatenate([[0], np.cumsum(np.rint(gaps * 1000))]).astype(int)
                rows.append(
                    {
                        "session_id": f"{c}-{e}-{s}",
                        "store": "synthetic",
                        "actor": ("human", "agent")[c],
                        "experiment_id": f"{c}-{e}",
                        "fold": (c * layout.experiments + e) % FOLDS,
                        "trajectory": events,
                        "n_events": length,
                        "event_offsets_ms": offsets.tolist(),
                    }
                )
    return pl.DataFrame(rows)


def _gain(frame: pl.DataFrame, rng: np.random.Generator) -> dict[str, float]:
    """The "v2 − kernel" row at the quote (2% FPR) of `fit_quote_detector` on a store."""
    kernels = [fit_class_kernels(frame, actor, k=FOLDS) for actor in ("human", "agent")]
    llr = fold_log_ratios(*([fold.probs for fold in ks.folds] for ks in kernels))
    fit = fit_quote_detector(
        frame, llr, (0.0, 1.0), prefix_events=(), rng=rng, fprs=(0.02,), n_resamples=N_RESAMPLES
    )
    label = f"{V2_DETECTOR} − {KERNEL_DETECTOR}"
    return fit.recall.filter(pl.col("detector") == label).row(0, named=True)


def _found(layout: StoreLayout, n_reps: int, rng: np.random.Generator) -> float:
    found = 0
    for _ in range(n_reps):  # replications
        found += _gain(simulate_store(layout, rng), rng)["ci_low"] > 0
    return found / n_reps


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Coverage of the recall interval per `COVERAGE_LAYOUTS`; the rate at which a timing gain
    is found under the timing null (one-sided level (1 − LEVEL)/2) per `STORE_LAYOUTS`."""
    out = [coverage(layout, n_reps, rng) for layout in (*COVERAGE_LAYOUTS, *SMALL_LAYOUTS)]
    level = (1.0 - LEVEL) / 2.0
    store_reps = max(1, n_reps // 5)  # a whole store per replication: ~5x the cost
    out += [
        CalibrationResult(
            "timing_gain_found",
            layout.name,
            level,
            store_reps,
            rejection_rate=_found(layout, store_reps, rng),
        )
        for layout in STORE_LAYOUTS
    ]
    return out


def power_studies(n_reps: int, rng: np.random.Generator) -> list[PowerResult]:
    """How often the gain is found where agents' timing differs."""
    return [
        PowerResult(
            "timing_gain_found",
            layout.name,
            (1.0 - LEVEL) / 2.0,
            n_reps,
            _found(layout, n_reps, rng),
        )
        for layout in POWER_LAYOUTS
    ]
