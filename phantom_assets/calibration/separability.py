"""Calibration of the separability report's test, kernel-divergence test and AUC interval
(docs/statistics.md#calibration-studies).

Each replication simulates a labeled dataset of experiments (vectorized Markov chains over the
project's 17-event vocabulary plus ``<start>``/``<end>``; the layout's class chains are drawn once
per study, so each layout is one fixed law) and runs the production procedures of
:mod:`phantom_assets.fingerprint` on it:

* ``separability_p``: the experiment-level refit permutation test of the out-of-fold AUC
  (:func:`experiment_permutation_test`), rejection at p <= 0.05;
* ``kernel_divergence_p``: the same test's kernel-divergence p;
* ``auc_ci``: the refit experiment-cluster bootstrap interval of the reported AUC
  (:func:`cluster_bootstrap_aucs` + :func:`auc_interval`). Its target θ_n = E[reported AUC] for
  the layout is the Monte Carlo mean of the reported AUC over *the same* replications (its Monte
  Carlo error, sd/√n_reps, is ~5% of the interval's sd at 500 replications). The interval is
  mildly conservative: the refitted bootstrap's sd exceeds the AUC's true sd by ~20–25%
  (duplicated experiments make the refitted kernels noisier), so coverage runs ~0.97–0.98.

Null layouts (humans and agents share one law; only the experiment structure differs):
``humans_5_agents_1`` and ``humans_1_agents_5`` (sessions per experiment differ by class),
``subject_effect`` (each experiment draws its own perturbed chain shared by its sessions),
``small_agent_class`` (60 human vs 15 agent experiments in the simulator's layout: humans 1–2
sessions, agents 4–7, with a subject effect). Separable layout ``simulator_separable`` (the
simulator's layout, agent chain moved towards another chain) gives the AUC interval's coverage
off the null and the test's power (:func:`power_studies`, reported, not a level).

Draws per replication are small (99 permutations, 99 bootstrap draws): a permutation test is exact
for any B, and the interval's Monte Carlo noise widens it slightly on average. The experiment ids,
hence the fold design and the test picks, are the same in every replication, so the level is
checked conditional on one fold design, as a store's report is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.calibration.result import CalibrationResult, PowerResult
from phantom_assets.constants import DEFAULT_FOLDS, DEFAULT_KAPPA
from phantom_assets.fingerprint.folds import stable_hash64
from phantom_assets.fingerprint.refit_bootstrap import auc_interval, cluster_bootstrap_aucs
from phantom_assets.fingerprint.refit_core import SessionCounts, counts_from_codes
from phantom_assets.fingerprint.refit_permutation import experiment_permutation_test, observed_auc
from phantom_assets.fingerprint.synthetic import (
    perturbed_chains,
    random_chain,
    sample_event_codes,
    sessions_per_experiment,
    transitions_from_codes,
)

logger = logging.getLogger(__name__)

LEVEL = 0.05
CONFIDENCE = 0.95
N_PERMUTATIONS = 99
N_BOOTSTRAP = 99
END_PROB = 0.1
MAX_EVENTS = 40

__all__ = [
    "LAYOUTS",
    "LEVEL",
    "Layout",
    "PowerResult",
    "class_chains",
    "experiment_hashes",
    "power_studies",
    "simulate",
    "studies",
]


@dataclass(frozen=True)
class Layout:
    """A simulated study design.

    Attributes:
        name: Layout name in the calibration records.
        n_human: Human experiments.
        n_agent: Agent experiments.
        human_sessions: Inclusive range of sessions per human experiment.
        agent_sessions: Inclusive range of sessions per agent experiment.
        subject_concentration: Subject effect (smaller = stronger); None = no subject effect.
        effect: Agent chain = (1 − effect)·human chain + effect·another chain (0 = the null).
    """

    name: str
    n_human: int
    n_agent: int
    human_sessions: tuple[int, int]
    agent_sessions: tuple[int, int]
    subject_concentration: float | None = None
    effect: float = 0.0

    def __post_init__(self) -> None:
        if self.n_human < 2 or self.n_agent < 2:
            raise ValueError(f"{self.name}: each class needs >= 2 experiments")
        if not 0.0 <= self.effect <= 1.0:
            raise ValueError(f"{self.name}: effect must lie in [0, 1], got {self.effect!r}")


LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("humans_5_agents_1", 30, 30, (5, 5), (1, 1)),
        Layout("humans_1_agents_5", 30, 30, (1, 1), (5, 5)),
        Layout("subject_effect", 30, 30, (3, 3), (3, 3), subject_concentration=5.0),
        Layout("small_agent_class", 60, 15, (1, 2), (4, 7), subject_concentration=20.0),
        Layout(
            "simulator_separable", 40, 14, (1, 2), (4, 7), subject_concentration=20.0, effect=0.7
        ),
    )
}
NULL_LAYOUTS = ("humans_5_agents_1", "humans_1_agents_5", "subject_effect", "small_agent_class")
CI_LAYOUTS = ("small_agent_class", "simulator_separable")


def experiment_hashes(n: int) -> np.ndarray:
    """Stable hashes of the ids ``xp-000000``, … of ``n`` experiments (folds and test picks)."""
    return stable_hash64(pl.Series([f"xp-{i:06d}" for i in range(n)], dtype=pl.String))


def class_chains(layout: Layout, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The layout's human and agent chains (drawn once per study, so θ_n is one number)."""
    human = random_chain(rng, end_prob=END_PROB)
    other = random_chain(rng, end_prob=END_PROB)
    return human, (1.0 - layout.effect) * human + layout.effect * other


def simulate(
    layout: Layout,
    chains: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
    hashes: np.ndarray,
) -> SessionCounts:
    """One labeled dataset of ``layout`` (folds and test picks hashed from experiment ids)."""
    n_xp = layout.n_human + layout.n_agent
    human, agent = chains
    sizes = np.concatenate(
        [
            sessions_per_experiment(layout.n_human, layout.human_sessions, rng),
            sessions_per_experiment(layout.n_agent, layout.agent_sessions, rng),
        ]
    )
    xp_agent = np.arange(n_xp) >= layout.n_human
    if layout.subject_concentration is None:
        chains, chain_of_xp = np.stack([human, agent]), xp_agent.astype(np.int64)
    else:
        c = layout.subject_concentration
        chains = np.concatenate(
            [
                perturbed_chains(human, layout.n_human, c, rng),
                perturbed_chains(agent, layout.n_agent, c, rng),
            ]
        )
        chain_of_xp = np.arange(n_xp)
    session_xp = np.repeat(np.arange(n_xp), sizes)
    events = sample_event_codes(chains, chain_of_xp[session_xp], rng, MAX_EVENTS)
    session, src, dst, n_events = transitions_from_codes(events)
    return counts_from_codes(
        session,
        src,
        dst,
        n_events,
        fold=(hashes[session_xp] % np.uint64(DEFAULT_FOLDS)).astype(np.int64),
        experiment=session_xp,
        experiment_hash=hashes,
        is_agent=xp_agent[session_xp],
    )


def _test_rates(layout: Layout, n_reps: int, rng: np.random.Generator) -> tuple[float, float]:
    """Rejection rates at ``LEVEL`` of the AUC test and the kernel-divergence test."""
    hashes = experiment_hashes(layout.n_human + layout.n_agent)
    chains = class_chains(layout, rng)
    rejected = np.zeros((n_reps, 2), dtype=bool)
    for rep in range(n_reps):  # loop over Monte Carlo replications
        test = experiment_permutation_test(
            simulate(layout, chains, rng, hashes),
            kappa=DEFAULT_KAPPA,
            n_permutations=N_PERMUTATIONS,
            rng=rng,
        )
        rejected[rep] = (test.auc_p <= LEVEL, test.divergence_p <= LEVEL)
    auc_rate, divergence_rate = rejected.mean(axis=0)
    return float(auc_rate), float(divergence_rate)


def _coverage(layout: Layout, n_reps: int, rng: np.random.Generator) -> float:
    """Share of replications whose interval holds the Monte Carlo mean of the reported AUC."""
    hashes = experiment_hashes(layout.n_human + layout.n_agent)
    chains = class_chains(layout, rng)
    observed, bounds = np.empty(n_reps), np.empty((n_reps, 2))
    for rep in range(n_reps):  # loop over Monte Carlo replications
        data = simulate(layout, chains, rng, hashes)
        observed[rep] = observed_auc(data, DEFAULT_KAPPA)
        boot = cluster_bootstrap_aucs(data, kappa=DEFAULT_KAPPA, n_draws=N_BOOTSTRAP, rng=rng)
        bounds[rep] = auc_interval(observed[rep], boot, CONFIDENCE)
    target = observed.mean()
    logger.info("%s: target E[auc] = %.4f, sd = %.4f", layout.name, target, observed.std())
    return float(np.mean((bounds[:, 0] <= target) & (target <= bounds[:, 1])))


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """Level of both tests under every null layout and coverage of the AUC interval.

    Args:
        n_reps: Monte Carlo replications per layout (tests) and per interval layout.
        rng: Random generator.

    Returns:
        One :class:`CalibrationResult` per procedure × layout.
    """
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps!r}")
    results = []
    for name in NULL_LAYOUTS:  # loop over the named null layouts
        auc_rate, divergence_rate = _test_rates(LAYOUTS[name], n_reps, rng)
        results += [
            CalibrationResult("separability_p", name, LEVEL, n_reps, rejection_rate=auc_rate),
            CalibrationResult(
                "kernel_divergence_p", name, LEVEL, n_reps, rejection_rate=divergence_rate
            ),
        ]
    for name in CI_LAYOUTS:  # loop over the interval layouts
        coverage = _coverage(LAYOUTS[name], n_reps, rng)
        results.append(CalibrationResult("auc_ci", name, CONFIDENCE, n_reps, coverage=coverage))
    return results


def power_studies(
    n_reps: int, rng: np.random.Generator, layout: str = "simulator_separable"
) -> list[PowerResult]:
    """Power of both tests at ``LEVEL`` in a separable layout (reported, not asserted here)."""
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps!r}")
    auc_rate, divergence_rate = _test_rates(LAYOUTS[layout], n_reps, rng)
    return [
        PowerResult("separability_p", layout, LEVEL, n_reps, auc_rate),
        PowerResult("kernel_divergence_p", layout, LEVEL, n_reps, divergence_rate),
    ]
