"""Calibration of the promotion gate (DESIGN §5a, §8): how often it certifies a null candidate.

Every replication builds a stress table with the real shape -- 12 robust candidates, their 12
baseline twins and the static engine × 3 α0 cells × selection and held-out episode seeds ×
training seeds -- and runs the real `promotion_gate` on it. Values share an episode-seed effect
across policies (common random numbers) plus a policy-specific noise; under a null layout the
candidates are equal in distribution to what they are compared with, so a certification is a
false one and its rate must stay at or below the one-sided level (1 − confidence)/2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.audit.gate import DEFAULT_CONFIDENCE, promotion_gate
from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.policies import policy_key

TIERS = ("qtable", "ppo", "a2c", "dqn")
TRAIN_ALPHAS = (0.0, 0.5, 1.0)
STATIC = policy_key("static", None, 0.0)
ALPHA0 = (0.0, 0.5, 1.0)

__all__ = ["LAYOUTS", "GateLayout", "gate_rejection_rate", "stress_table", "studies"]


@dataclass(frozen=True)
class GateLayout:
    """One simulated world for the gate.

    Attributes:
        name: Layout name in the calibration output.
        noise: "normal" | "lognormal" (skewed) | "t2" (heavy-tailed) policy noise per seed.
        candidate_lift: Added to every robust candidate (0 under the null).
        twin_lift: Added to every baseline twin (a twin better than static, say).
        twins_identical: Robust policies reproduce their twin exactly (the v1 hotel case).
        n_candidates: Candidates tested (Holm) by the gate.
        selection_seeds / test_seeds / train_seeds: The design's shape.
    """

    name: str
    noise: str = "normal"
    candidate_lift: float = 0.0
    twin_lift: float = 0.0
    twins_identical: bool = False
    n_candidates: int = 1
    selection_seeds: int = 8
    test_seeds: int = 8
    train_seeds: int = 1


LAYOUTS: tuple[GateLayout, ...] = (
    GateLayout("null_12_candidates_normal"),
    GateLayout("null_12_candidates_skewed", noise="lognormal", train_seeds=3),
    GateLayout("null_12_candidates_heavy_tailed", noise="t2"),
    GateLayout("null_identical_twins", twins_identical=True),
    GateLayout("null_beats_twin_not_static", twin_lift=-3.0),
    GateLayout("null_beats_static_not_twin", candidate_lift=5.0, twin_lift=5.0),
    GateLayout("null_holm_3_candidates", n_candidates=3),
    GateLayout("null_study_shape", selection_seeds=30, test_seeds=30, train_seeds=3),
)


def _policies() -> tuple[list[str], list[str]]:
    robust = [policy_key(t, "robust", a) for t in TIERS for a in TRAIN_ALPHAS]
    twins = [policy_key(t, "baseline", a) for t in TIERS for a in TRAIN_ALPHAS]
    return robust, twins


def _noise(kind: str, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":
        return rng.standard_normal(size)
    if kind == "lognormal":
        return rng.lognormal(0.0, 1.0, size)
    if kind == "t2":
        return rng.standard_t(2.0, size)
    raise ValueError(f"unknown noise {kind!r}; choose normal, lognormal or t2")


def stress_table(layout: GateLayout, rng: np.random.Generator) -> pl.DataFrame:
    """One replication's stress rows: `policy, split, seed, alpha0, train_seed, reward`."""
    robust, twins = _policies()
    policies = [*robust, *twins, STATIC]
    n_seeds = layout.selection_seeds + layout.test_seeds
    shape = (len(policies), n_seeds, len(ALPHA0), layout.train_seeds)
    seed_effect = 10.0 * rng.standard_normal((1, n_seeds, len(ALPHA0), 1))  # CRN: shared
    values = seed_effect + _noise(layout.noise, shape, rng)
    n_robust = len(robust)
    values[:n_robust] += layout.candidate_lift
    values[n_robust : 2 * n_robust] += layout.twin_lift
    if layout.twins_identical:
        values[:n_robust] = values[n_robust : 2 * n_robust]
    p, s, a, t = np.meshgrid(np.arange(len(policies)), np.arange(n_seeds), np.arange(len(ALPHA0)),
                             np.arange(layout.train_seeds), indexing="ij")  # fmt: skip
    return pl.DataFrame({
        "policy": np.asarray(policies)[p.ravel()],
        "split": np.where(s.ravel() < layout.selection_seeds, SELECTION_SPLIT, TEST_SPLIT),
        "seed": s.ravel().astype(np.int64),
        "alpha0": np.asarray(ALPHA0)[a.ravel()],
        "train_seed": t.ravel().astype(np.int64),
        "reward": values.ravel(),
    })  # fmt: skip


def gate_rejection_rate(layout: GateLayout, n_reps: int, rng: np.random.Generator) -> float:
    """Share of `n_reps` replications in which the real gate certified."""
    robust, _ = _policies()
    passed: dict[str, tuple[str, ...]] = {key: () for key in robust}
    certified = 0
    for _ in range(n_reps):  # each replication is one full gate run on a fresh table
        decision = promotion_gate(stress_table(layout, rng), static=STATIC, failed_checks=passed,
                                  rng=rng, n_candidates=layout.n_candidates)  # fmt: skip
        certified += decision.certified
    return certified / n_reps


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """False-certification rate of the gate under every null layout in `LAYOUTS`."""
    level = round((1.0 - DEFAULT_CONFIDENCE) / 2.0, 12)
    return [
        CalibrationResult(procedure="certification_gate", layout=layout.name, level=level,
                          n_reps=n_reps, rejection_rate=gate_rejection_rate(layout, n_reps, rng))
        for layout in LAYOUTS
    ]  # fmt: skip
