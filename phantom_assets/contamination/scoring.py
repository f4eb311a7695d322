"""Agent probability of synthetic sessions and the α̂ of a contaminated dataset
(docs/method.md#estimated-agent-share).

Synthetic agent sessions never fitted a kernel, so they are scored like unlabeled sessions: against
the *full* class kernels, with the f the store selected (`ScoreCalibration`: σ(gap / T), or the
logistic calibration fitted on all labeled sessions -- the one unlabeled sessions get).

Why α̂ takes E[f|A] from a reference sample of synthetic agents and not from the labeled agents'
out-of-fold f: α̂ = (f̄ − E[f|H]) / (E[f|A] − E[f|H]) is consistent only if each class mean is the
mean of the law the dataset's sessions of that class follow. The dataset's humans are the labeled
humans with their out-of-fold f, so their out-of-fold mean is exactly right. Its agents, however,
are drawn *from* the full agent kernel (a first-order, smoothed Markov chain) and scored *with* it,
a different law from held-out real agents scored with kernels fitted without them. On the demo
data (120 human / 40 agent experiments per store, temperature f) E[f|A] is 0.827 / 0.805
(hotel / airline) for synthetic agents against 0.841 / 0.826 out of fold, so α̂ at α = 1 with the
out-of-fold agent mean is 0.971 / 0.960 (the `alpha_hat_oof_agents` diagnostic) against 0.995 /
0.995 with the reference. An independent reference sample of synthetic agents -- same kernel,
same scorer, its own random stream -- has exactly the dataset agents' law, so E[f|A] from it is
unbiased. (Real traffic scored with the full kernels is close to the out-of-fold law; there the
labeled agents are the right reference.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from phantom_assets.constants import ACTORS, UNKNOWN_ACTOR
from phantom_assets.contamination.alpha_hat import AlphaHat, AlphaHatParams, alpha_hat
from phantom_assets.contamination.generator import (
    ContaminationParams,
    ScoreFn,
    synthesize_agents,
)
from phantom_assets.fingerprint.calibration import ScoreCalibration
from phantom_assets.fingerprint.divergence import score_sessions
from phantom_assets.fingerprint.sessions import SESSION_SCHEMA, KernelSet

__all__ = [
    "REFERENCE_AGENTS",
    "alpha_hat_report",
    "calibrated_scorer",
    "dataset_alpha_hat",
    "labeled_alpha_hat",
    "reference_agent_f",
]

REFERENCE_AGENTS = 2_000
"""Synthetic agent sessions in the reference sample that estimates E[f|A]."""


def calibrated_scorer(
    human: KernelSet, agent: KernelSet, store: str, calibration: ScoreCalibration
) -> ScoreFn:
    """Selected f of new sessions, scored as unlabeled against the full kernels.

    Args:
        human: The store's human kernels.
        agent: The store's agent kernels.
        store: Store of the sessions.
        calibration: The store's `calibration.json` (method, T, logistic coefficients).

    Returns:
        frame with ``session_id, trajectory, n_events`` -> f per row.
    """

    def score(sessions: pl.DataFrame) -> np.ndarray:
        frame = sessions.select(
            "session_id",
            "trajectory",
            "n_events",
            store=pl.lit(store),
            actor=pl.lit(UNKNOWN_ACTOR),
            fold=pl.lit(-1, pl.Int64),
        )
        frame = frame.select(list(SESSION_SCHEMA)).cast(SESSION_SCHEMA)  # type: ignore[arg-type]
        scores = score_sessions(
            frame,
            human,
            agent,
            calibration.temperature,
            calibration=calibration.method,
            ridge=calibration.ridge,
            logistic=calibration.coef,
        )
        return scores["f"].to_numpy()

    return score


def reference_agent_f(
    agent_kernel: np.ndarray,
    params: ContaminationParams,
    score_fn: Callable[[pl.DataFrame], np.ndarray],
    rng: np.random.Generator,
    n: int = REFERENCE_AGENTS,
) -> np.ndarray:
    """f of ``n`` synthetic agents drawn and scored exactly like G(α)'s (independent sessions)."""
    if n < 2:
        raise ValueError(f"the reference sample needs >= 2 sessions, got {n}")
    return np.asarray(score_fn(synthesize_agents(agent_kernel, n, 1.0, params, rng)))


def dataset_alpha_hat(
    dataset: pl.DataFrame,
    humans: pl.DataFrame,
    reference_f: np.ndarray,
    params: AlphaHatParams,
    rng: np.random.Generator,
) -> AlphaHat:
    """α̂ of one contaminated dataset; E[f|H] from the labeled humans, E[f|A] from the reference.

    Args:
        dataset: G(α) rows (``session_id, source, f``).
        humans: Labeled human sessions with ``session_id, experiment_id, f`` (out-of-fold).
        reference_f: f of the reference synthetic agents (each its own cluster).
        params: Level and bootstrap replicates.
        rng: Source of the bootstrap draws.

    Returns:
        α̂ with its CI. Real sessions are clustered by experiment, synthetic ones are independent.
    """
    experiment = humans["experiment_id"].fill_null(humans["session_id"])
    cluster_of = dict(zip(humans["session_id"], experiment, strict=True))
    clusters = dataset.select(
        pl.when(pl.col("source") == "real")
        .then(pl.col("session_id").replace_strict(cluster_of, default=pl.col("session_id")))
        .otherwise(pl.col("session_id"))
    ).to_series()
    n_ref = reference_f.size
    return alpha_hat(
        dataset["f"].to_numpy(),
        np.concatenate([humans["f"].to_numpy(), reference_f]),
        np.r_[np.zeros(humans.height, dtype=bool), np.ones(n_ref, dtype=bool)],
        np.concatenate([experiment.to_numpy().astype(str), [f"ref-{i}" for i in range(n_ref)]]),
        rng,
        params,
        cluster=clusters.to_numpy().astype(str),
    )


def labeled_alpha_hat(
    dataset: pl.DataFrame,
    labeled: pl.DataFrame,
    params: AlphaHatParams,
    rng: np.random.Generator,
) -> AlphaHat:
    """Diagnostic α̂ with both class means from the labeled out-of-fold f (``actor, f, …``)."""
    experiment = labeled["experiment_id"].fill_null(labeled["session_id"]).to_numpy().astype(str)
    return alpha_hat(
        dataset["f"].to_numpy(),
        labeled["f"].to_numpy(),
        (labeled["actor"] == ACTORS[1]).to_numpy(),
        experiment,
        rng,
        params,
    )


def alpha_hat_report(
    frame: pl.DataFrame,
    humans: pl.DataFrame,
    reference_f: np.ndarray,
    labeled: pl.DataFrame,
    params: AlphaHatParams,
    rng: np.random.Generator,
) -> dict[str, object]:
    """`alpha_hat.json` of one dataset: α̂ (E[f|A] from the reference synthetic agents), the true
    session share, and the diagnostic α̂ with E[f|A] from the labeled agents' out-of-fold f.

    Args:
        frame: the G(α) dataset (``session_id, source, alpha, f, f_method``).
        humans: labeled human sessions with their out-of-fold f (``session_id, experiment_id, f``).
        reference_f: f of the reference synthetic agents (`reference_agent_f`).
        labeled: both classes' labeled sessions (``session_id, actor, experiment_id, f``).
        params: level and bootstrap replicates.
        rng: source of the bootstrap draws (shared, in this order, by both estimates).
    """
    estimate = dataset_alpha_hat(frame, humans, reference_f, params, rng)
    oof = labeled_alpha_hat(frame, labeled, params, rng)
    share = float((frame["source"] == "synthetic").mean() or 0.0)
    return {
        **estimate.to_dict(),
        "alpha": float(frame["alpha"][0]) if frame.height else None,
        "alpha_true_share": share,
        "covers_true_share": estimate.covers(share),
        "f_method": frame["f_method"][0] if frame.height else None,
        "e_f_agent_source": "reference synthetic agents scored like the dataset",
        "n_reference_agents": int(reference_f.size),
        "alpha_hat_oof_agents": oof.alpha_hat_unclipped,
        "mean_f_agent_oof": oof.mean_f_agent,
    }
