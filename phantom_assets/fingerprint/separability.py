"""The separability report of one store (DESIGN §5 "Separability report", §12 report.json).

Inputs are the outputs of :mod:`divergence` (out-of-fold gaps, prefix gaps) and, for the kernel
divergence and the refit permutation test, the labeled sessions themselves.

Honesty caveat: out-of-fold gaps are dependent (sessions of one fold share their fold kernels), so
the Mann–Whitney p-value, the fixed-gap permutation p-value and the bootstrap CI, which all treat
gaps as independent, are somewhat anti-conservative. When ``sessions`` is given, ``permutation_p``
is therefore the *refit* permutation test (:mod:`refit_permutation`), valid by construction; the
fixed-gap version is kept as ``permutation_p_fixed_gaps``.

Bias: out-of-fold scoring is also biased *below* ½ under the null -- a session's own-class kernel
always lacks that session while the other class's kernel is complete, so every session looks a
little like the other class (strongly for a small class: AUC ≈ 0.29 with 19 agents vs 55 humans of
identical behaviour). With the refit null available, the headline ``p_value`` is the refit
permutation p (centred on the null's mean) and ``auc_ci_low``/``auc_ci_high`` are the bootstrap CI
shifted by the null's bias (``auc_null_mean`` − ½); the raw Mann–Whitney p, raw CI and
``auc_corrected`` are reported beside them. When ``sessions`` carries ``experiment_id``, both the
permutations and the bootstrap move whole experiments (one subject's sessions are not independent),
which is what keeps identical-behaviour data from looking separable. The CI is the wider of that
bootstrap interval and the interval that inverts the centred refit permutation test (observed AUC ±
the null's 95% quantile of |AUC − mean|, bias-corrected), since fold-shared kernels make gaps
dependent and the bootstrap alone too narrow; so the CI excludes ½ only when the test rejects. Only
labeled sessions (actor human/agent) enter; sessions whose gap is NaN (possible only with κ = 0)
are dropped and counted (the refit test then falls back to the fixed-gap one).

Kernel divergence: D(H‖A) = Σ_a π_H(a) · KL(T̂_H[a] ‖ T̂_A[a]) with π_H the human state-visit
shares (source-row counts). Its null ("split-half") comes from random splits of the pooled labeled
sessions into two groups *of the observed class sizes* (halves when n_H = n_A), refitted with the
same κ: same-size groups make the null carry the same estimation noise as the observed value, which
equal halves would not when the classes are unbalanced.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.constants import ACTORS, DEFAULT_FOLDS, DEFAULT_KAPPA
from phantom_assets.fingerprint.kernel_divergence import (
    kernel_divergence,
    kernel_divergence_summary,
    split_half_null,
)
from phantom_assets.fingerprint.refit_permutation import centred_pvalue, refit_permutation_null
from phantom_assets.fingerprint.statistics import (
    EXACT_MAX_N,
    auc,
    bootstrap_auc,
    mann_whitney,
    permutation_auc_pvalue,
)

logger = logging.getLogger(__name__)


__all__ = [
    "SeparabilityParams",
    "SeparabilityReport",
    "kernel_divergence",
    "prefix_curve",
    "separability_report",
    "split_half_null",
]


@dataclass(frozen=True)
class SeparabilityParams:
    """Knobs of the report (draw counts, CI level, κ and folds of the refitted kernels)."""

    n_bootstrap: int = 1000
    n_permutations: int = 1000
    n_split_half: int = 200
    confidence: float = 0.95
    kappa: float = DEFAULT_KAPPA
    folds: int = DEFAULT_FOLDS
    exact_max_n: int = EXACT_MAX_N

    def __post_init__(self) -> None:
        for name in ("n_bootstrap", "n_permutations", "n_split_half"):
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
    p_value: float
    p_method: str
    auc: float
    auc_ci_low: float
    auc_ci_high: float
    permutation_p: float
    permutation_method: str
    permutation_p_fixed_gaps: float
    accuracy: float
    balanced_accuracy: float
    n_dropped_nan: int
    mann_whitney_p: float | None = None
    auc_null_mean: float | None = None
    auc_corrected: float | None = None
    auc_ci_raw_low: float | None = None
    auc_ci_raw_high: float | None = None
    kernel_divergence: float | None = None
    kernel_divergence_null_mean: float | None = None
    kernel_divergence_null_q95: float | None = None
    kernel_divergence_p: float | None = None
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
            {"prefix_len": int(p), "n_human": n_h, "n_agent": n_a, "accuracy": acc,
             "balanced_accuracy": bal, "auc": value}
        )  # fmt: skip
    return tuple(curve)


def _experiment_groups(finite: pl.DataFrame, sessions: pl.DataFrame | None) -> np.ndarray | None:
    """Experiment id per scored session (its own id when unknown), if `sessions` carries them."""
    if sessions is None or "experiment_id" not in sessions.columns:
        return None
    joined = finite.select("session_id").join(
        sessions.select("session_id", "experiment_id"), on="session_id", how="left"
    )
    return joined["experiment_id"].fill_null(joined["session_id"]).to_numpy()


def separability_report(
    scores: pl.DataFrame,
    *,
    rng: np.random.Generator,
    params: SeparabilityParams = SeparabilityParams(),
    sessions: pl.DataFrame | None = None,
    prefix: pl.DataFrame | None = None,
) -> SeparabilityReport:
    """Compute the separability report of one store.

    Args:
        scores: :func:`score_sessions` output (``actor``, ``gap`` used).
        rng: Random generator for bootstrap, permutations and split-half null (in that order).
        params: Draw counts, CI level, κ and folds (must match those used for ``scores``).
        sessions: The sessions frame ``scores`` came from; enables the refit permutation test,
            the kernel divergence and its null.
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
    groups = _experiment_groups(finite, sessions)
    boot = bootstrap_auc(
        human, agent, params.n_bootstrap, rng,
        human_groups=None if groups is None else groups[~is_agent],
        agent_groups=None if groups is None else groups[is_agent],
    )  # fmt: skip
    tail = (1.0 - params.confidence) / 2
    fixed_p = permutation_auc_pvalue(human, agent, params.n_permutations, rng)
    method, permutation_p, null_mean, half_width = "fixed_gaps", fixed_p, 0.5, 0.0
    if sessions is not None and params.kappa > 0 and finite.height == labeled.height:
        observed, null = refit_permutation_null(
            sessions,
            k=params.folds,
            kappa=params.kappa,
            n_permutations=params.n_permutations,
            rng=rng,
        )
        method, permutation_p, null_mean = (
            "refit",
            centred_pvalue(observed, null),
            float(null.mean()),
        )
        # Inverts the centred permutation test: the interval holds 1/2 iff p >= 1 - confidence.
        half_width = float(np.quantile(np.abs(null - null_mean), params.confidence))
    # Out-of-fold AUCs are biased below 1/2 under the null (see refit_permutation_null); the
    # headline p and CI are the calibrated ones, measured against the refit null, when available.
    bias = null_mean - 0.5
    raw_low, raw_high = float(np.quantile(boot, tail)), float(np.quantile(boot, 1.0 - tail))
    acc, bal = _accuracy(gap, is_agent)
    extra = (
        kernel_divergence_summary(sessions, params.kappa, params.n_split_half, rng)
        if sessions is not None
        else {}
    )
    return SeparabilityReport(
        n_human=int(human.size),
        n_agent=int(agent.size),
        u_statistic=mw.u_statistic,
        p_value=permutation_p if method == "refit" else mw.p_value,
        p_method="refit_permutation" if method == "refit" else mw.method,
        auc=mw.auc,
        auc_ci_low=float(np.clip(min(raw_low, mw.auc - half_width) - bias, 0.0, 1.0)),
        auc_ci_high=float(np.clip(max(raw_high, mw.auc + half_width) - bias, 0.0, 1.0)),
        permutation_p=permutation_p,
        permutation_method=method,
        permutation_p_fixed_gaps=fixed_p,
        mann_whitney_p=mw.p_value,
        auc_null_mean=null_mean,
        auc_corrected=float(np.clip(mw.auc - bias, 0.0, 1.0)),
        auc_ci_raw_low=raw_low,
        auc_ci_raw_high=raw_high,
        accuracy=acc,
        balanced_accuracy=bal,
        n_dropped_nan=labeled.height - finite.height,
        prefix_curve=prefix_curve(prefix) if prefix is not None else (),
        params=asdict(params),
        **extra,
    )
