"""Coverage of the α̂ bootstrap CI (docs/statistics.md#agent-share-interval).

Each replication simulates f (a logit-normal agent probability) for a calibration sample of
human and agent *experiments* -- every experiment's sessions share a random effect, so sessions
are not independent -- and a contaminated dataset with a known share α of agent sessions, whose
sessions are clustered the same way. It runs the production interval
(:func:`phantom_assets.contamination.alpha_hat.bootstrap_alpha`, vectorized over replications)
and counts how often the CI holds the true α.

Layouts: a mid-size calibration sample at α ∈ {0, 0.25, 0.5, 1}; the demo pipeline's small one
(12 human experiments, 4 agent experiments of 5 sessions) at α ∈ {0, 1}; the pipeline's own
shape (G(α): the dataset's humans *are* the calibration humans, synthetic agents are independent
sessions, E[f|A] from a reference sample of synthetic agents).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.contamination.alpha_hat import AlphaHatParams, ClusterStats, bootstrap_alpha

__all__ = ["PROCEDURE", "AlphaLayout", "coverage", "studies"]

PROCEDURE = "alpha_hat_bootstrap_ci"
LEVEL = 0.95
N_BOOT = 500
MU_HUMAN, MU_AGENT = -1.0, 1.0  # logit-scale class means of f
SD_EXPERIMENT, SD_SESSION = 0.7, 1.0


@dataclass(frozen=True)
class AlphaLayout:
    """Sizes of one study: (experiments, sessions per experiment) per sample.

    Attributes:
        name: Layout name in the results.
        alpha: True share of agent sessions in the dataset.
        human: Calibration human experiments and sessions per experiment.
        agent: Calibration agent experiments and sessions per experiment.
        dataset_human: Dataset human experiments and sessions per experiment.
        dataset_agent_size: Sessions per dataset agent experiment (1 = independent sessions).
        shared_humans: The dataset's humans are the calibration humans (as in G(α)).
    """

    name: str
    alpha: float
    human: tuple[int, int]
    agent: tuple[int, int]
    dataset_human: tuple[int, int]
    dataset_agent_size: int = 4
    shared_humans: bool = False

    def n_dataset_agents(self) -> int:
        """Agent sessions that make the dataset's share exactly α (whole experiments)."""
        n_h = self.dataset_human[0] * self.dataset_human[1]
        n_a = n_h if self.alpha == 1.0 else round(self.alpha * n_h / (1.0 - self.alpha))
        if n_a % self.dataset_agent_size:
            raise ValueError(f"{self.name}: {n_a} agent sessions is not whole experiments")
        return n_a


LAYOUTS = (
    *(
        AlphaLayout(f"cal_h40x2_a16x5_alpha{a:g}", a, (40, 2), (16, 5), (30, 2))
        for a in (0.0, 0.25, 0.5, 1.0)
    ),
    *(
        AlphaLayout(f"small_cal_h12x2_a4x5_alpha{a:g}", a, (12, 2), (4, 5), (12, 2))
        for a in (0.0, 1.0)
    ),
    AlphaLayout(
        "pipeline_shared_humans_ref_agents_alpha0.5",
        0.5,
        (30, 2),
        (100, 1),
        (30, 2),
        dataset_agent_size=1,
        shared_humans=True,
    ),
)


def _simulate(rng: np.random.Generator, reps: int, shape: tuple[int, int], mu: float) -> tuple:
    """f of ``reps`` × experiments × sessions, flattened per replication, with experiment ids."""
    n_xp, size = shape
    logit = (
        mu
        + rng.normal(0, SD_EXPERIMENT, (reps, n_xp, 1))
        + rng.normal(0, SD_SESSION, (reps, n_xp, size))
    )
    return expit(logit).reshape(reps, n_xp * size), np.repeat(np.arange(n_xp), size)


def coverage(layout: AlphaLayout, n_reps: int, rng: np.random.Generator) -> float:
    """Share of ``n_reps`` replications whose α̂ CI holds ``layout.alpha``."""
    f_h, xp_h = _simulate(rng, n_reps, layout.human, MU_HUMAN)
    f_a, xp_a = _simulate(rng, n_reps, layout.agent, MU_AGENT)
    n_a = layout.n_dataset_agents()
    parts = []
    if layout.alpha < 1.0:
        shape = layout.dataset_human
        parts.append(
            (f_h, xp_h) if layout.shared_humans else _simulate(rng, n_reps, shape, MU_HUMAN)
        )
    if n_a:
        size = layout.dataset_agent_size
        f_d, xp_d = _simulate(rng, n_reps, (n_a // size, size), MU_AGENT)
        parts.append((f_d, xp_d + 1 + max((int(p[1].max()) for p in parts), default=0)))
    f = np.concatenate([p[0] for p in parts], axis=1)
    cluster = np.concatenate([p[1] for p in parts])
    out = bootstrap_alpha(
        ClusterStats.of(f, cluster),
        ClusterStats.of(f_h, xp_h),
        ClusterStats.of(f_a, xp_a),
        AlphaHatParams(level=LEVEL, n_boot=N_BOOT),
        rng,
    )
    held = (out["ci_low"] <= layout.alpha) & (layout.alpha <= out["ci_high"])
    return float(held.mean())


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Coverage of the α̂ CI at level 0.95 under every layout in `LAYOUTS`."""
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    return [
        CalibrationResult(
            PROCEDURE, layout.name, LEVEL, n_reps, coverage=coverage(layout, n_reps, rng)
        )
        for layout in LAYOUTS
    ]
