"""The separability report of one store (docs/method.md#separability-report, its
`report.json` in docs/architecture.md#column-contracts).

Inputs: the out-of-fold gaps of :func:`score_sessions` (descriptive statistics, accuracy), the
labeled sessions themselves with their ``experiment_id`` (the calibrated test and interval refit
the fold kernels) and optionally :func:`prefix_scores` (the prefix curve).

What each number is:

* ``auc``, ``u_statistic``, ``mann_whitney_p``: the out-of-fold AUC over all labeled sessions and
  the Mann–Whitney test of the gaps. The MW p treats sessions as independent, so it is
  *descriptive*: anti-conservative under clustering (a subject's sessions share habits) and fold
  sharing (a fold's sessions share kernels).
* ``p_value`` (``p_method``, ``p_floor``, ``n_test_experiments``, ``test_auc``,
  ``test_auc_null_mean``): the experiment-level refit permutation test on a test sample of one
  hash-picked session per experiment, exact under "the two classes' sessions have the same law"
  whatever the sessions-per-experiment layout (:mod:`refit_permutation`).
* ``auc_ci_low``/``auc_ci_high`` (``auc_ci_method``): interval for θ_n = E[``auc``] at this
  study's numbers of experiments and layout, by an experiment-cluster bootstrap that refits the
  fold kernels (:mod:`refit_bootstrap`). Out-of-fold AUCs sit below ½ under no difference (folds
  holding more agents score with a noisier held-out agent kernel), so with indistinguishable
  classes this interval is centred near that value, not exactly on ½; whether the classes differ
  is what ``p_value`` says.
* ``kernel_divergence`` (all eligible labeled sessions, descriptive), ``kernel_divergence_test``
  and ``kernel_divergence_p`` (``kernel_divergence_p_method``): D(H‖A) and its test on the same
  test sample with the same experiment permutations, refitted with the same κ.

With κ = 0 the refitted gaps are infinite, so the test and interval are not available: their
values are NaN (``null`` in JSON) and the methods say so. Labeled sessions whose gap is NaN
(possible only with κ = 0) are dropped from the descriptive statistics and counted.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.constants import ACTORS, DEFAULT_FOLDS, DEFAULT_KAPPA
from phantom_assets.fingerprint.kernel_divergence import class_counts, kernel_divergence
from phantom_assets.fingerprint.refit_bootstrap import (
    AUC_CI_METHOD,
    auc_interval,
    cluster_bootstrap_aucs,
)
from phantom_assets.fingerprint.refit_core import session_counts
from phantom_assets.fingerprint.refit_permutation import (
    KERNEL_DIVERGENCE_P_METHOD,
    P_METHOD,
    experiment_permutation_test,
)
from phantom_assets.fingerprint.statistics import EXACT_MAX_N, auc, mann_whitney

logger = logging.getLogger(__name__)

UNAVAILABLE = "unavailable_kappa_zero"

__all__ = [
    "SeparabilityParams",
    "SeparabilityReport",
    "kernel_divergence",
    "prefix_curve",
    "separability_report",
]


@dataclass(frozen=True)
class SeparabilityParams:
    """Knobs of the report (draw counts, CI level, κ and folds of the refitted kernels)."""

    n_bootstrap: int = 1000
    n_permutations: int = 1000
    confidence: float = 0.95
    kappa: float = DEFAULT_KAPPA
    folds: int = DEFAULT_FOLDS
    exact_max_n: int = EXACT_MAX_N

    def __post_init__(self) -> None:
        for name in ("n_bootstrap", "n_permutations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie in (0, 1), got {self.confidence!r}")
        if not np.isfinite(self.kappa) or self.kappa < 0:
            raise ValueError(f"kappa must be a finite number >= 0, got {self.kappa!r}")


@dataclass(frozen=True)
class SeparabilityReport:
    """Separability of human vs agent gaps; ``to_dict()`` is the ``report.json`` payload."""

    n_human: int
    n_agent: int
    u_statistic: float
    mann_whitney_p: float
    p_value: float
    p_method: str
    p_floor: float
    auc: float
    auc_ci_low: float
    auc_ci_high: float
    auc_ci_method: str
    n_test_experiments: dict[str, int]
    test_auc: float
    test_auc_null_mean: float
    kernel_divergence: float
    kernel_divergence_test: float
    kernel_divergence_null_mean: float
    kernel_divergence_null_q95: float
    kernel_divergence_p: float
    kernel_divergence_p_method: str
    accuracy: float
    balanced_accuracy: float
    n_dropped_nan: int
    prefix_curve: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (non-finite floats become ``None``; strict JSON has no NaN)."""

        def clean(value: Any) -> Any:
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [clean(v) for v in value]
            return value

        return clean(asdict(self))


def _accuracy(gap: np.ndarray, is_agent: np.ndarray) -> tuple[float, float]:
    """Accuracy of "agent iff gap > 0" (i.e. f > ½), plain and class-balanced."""
    pred = gap > 0
    correct = pred == is_agent
    balanced = 0.5 * (correct[is_agent].mean() + correct[~is_agent].mean())
    return float(correct.mean()), float(balanced)


def prefix_curve(prefix: pl.DataFrame) -> tuple[dict[str, Any], ...]:
    """Accuracy and AUC per prefix length from a :func:`prefix_scores` table (labeled rows)."""
    rows = prefix.filter(pl.col("actor").is_in(list(ACTORS)) & pl.col("gap").is_not_nan())
    curve = []
    for p in sorted(rows["prefix_len"].unique().to_list()):  # loop over prefix lengths
        at = rows.filter(pl.col("prefix_len") == p)
        gap = at["gap"].to_numpy()
        is_agent = (at["actor"] == ACTORS[1]).to_numpy()
        n_a, n_h = int(is_agent.sum()), int((~is_agent).sum())
        both = n_a > 0 and n_h > 0
        acc, bal = _accuracy(gap, is_agent) if both else (float("nan"), float("nan"))
        value = auc(gap[~is_agent], gap[is_agent]) if both else float("nan")
        curve.append(
            {
                "prefix_len": int(p),
                "n_human": n_h,
                "n_agent": n_a,
                "accuracy": acc,
                "balanced_accuracy": bal,
                "auc": value,
            }
        )
    return tuple(curve)


def _calibrated(
    sessions: pl.DataFrame,
    observed_auc: float,
    params: SeparabilityParams,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """The experiment-level test, the kernel divergences and the AUC interval."""
    data = session_counts(sessions, params.folds)
    labels = data.is_agent.astype(np.int64)
    total = class_counts(data.session, data.pair, data.count, data.eligible * 1.0, labels)
    descriptive = float(kernel_divergence(total[0], total[1], params.kappa))
    if params.kappa <= 0:
        nan = float("nan")
        return {
            "p_value": nan,
            "p_method": UNAVAILABLE,
            "p_floor": nan,
            "auc_ci_low": nan,
            "auc_ci_high": nan,
            "auc_ci_method": UNAVAILABLE,
            "n_test_experiments": {},
            "test_auc": nan,
            "test_auc_null_mean": nan,
            "kernel_divergence": descriptive,
            "kernel_divergence_test": nan,
            "kernel_divergence_null_mean": nan,
            "kernel_divergence_null_q95": nan,
            "kernel_divergence_p": nan,
            "kernel_divergence_p_method": UNAVAILABLE,
        }
    test = experiment_permutation_test(
        data, kappa=params.kappa, n_permutations=params.n_permutations, rng=rng
    )
    boot = cluster_bootstrap_aucs(data, kappa=params.kappa, n_draws=params.n_bootstrap, rng=rng)
    low, high = auc_interval(observed_auc, boot, params.confidence)
    return {
        "p_value": test.auc_p,
        "p_method": P_METHOD,
        "p_floor": test.p_floor,
        "auc_ci_low": low,
        "auc_ci_high": high,
        "auc_ci_method": AUC_CI_METHOD,
        "n_test_experiments": {ACTORS[0]: test.n_test_human, ACTORS[1]: test.n_test_agent},
        "test_auc": test.auc,
        "test_auc_null_mean": float(test.auc_null.mean()),
        "kernel_divergence": descriptive,
        "kernel_divergence_test": test.divergence,
        "kernel_divergence_null_mean": float(test.divergence_null.mean()),
        "kernel_divergence_null_q95": float(np.quantile(test.divergence_null, 0.95)),
        "kernel_divergence_p": test.divergence_p,
        "kernel_divergence_p_method": KERNEL_DIVERGENCE_P_METHOD,
    }


def separability_report(
    scores: pl.DataFrame,
    *,
    sessions: pl.DataFrame,
    rng: np.random.Generator,
    params: SeparabilityParams = SeparabilityParams(),
    prefix: pl.DataFrame | None = None,
) -> SeparabilityReport:
    """Compute the separability report of one store.

    Args:
        scores: :func:`score_sessions` output of ``sessions`` (``actor``, ``gap`` used).
        sessions: The sessions frame ``scores`` came from, with an ``experiment_id`` column (a
            session without one is its own experiment).
        rng: Random generator for the permutations, then the bootstrap.
        params: Draw counts, CI level, κ and folds (must match those used for ``scores``).
        prefix: :func:`prefix_scores` output; enables the prefix curve.

    Raises:
        ValueError: If a class has no session with a non-NaN gap.
    """
    labeled = scores.filter(pl.col("actor").is_in(list(ACTORS)))
    finite = labeled.filter(pl.col("gap").is_not_nan())
    gap = finite["gap"].to_numpy()
    is_agent = (finite["actor"] == ACTORS[1]).to_numpy()
    human, agent = gap[~is_agent], gap[is_agent]
    mw = mann_whitney(human, agent, params.exact_max_n)
    acc, bal = _accuracy(gap, is_agent)
    if "experiment_id" not in sessions.columns:
        logger.warning("sessions lack experiment_id: each session is treated as an experiment")
    return SeparabilityReport(
        n_human=int(human.size),
        n_agent=int(agent.size),
        u_statistic=mw.u_statistic,
        mann_whitney_p=mw.p_value,
        auc=mw.auc,
        accuracy=acc,
        balanced_accuracy=bal,
        n_dropped_nan=labeled.height - finite.height,
        prefix_curve=prefix_curve(prefix) if prefix is not None else (),
        params=asdict(params),
        **_calibrated(sessions, mw.auc, params, rng),
    )
