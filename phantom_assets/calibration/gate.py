"""Calibration of the promotion gate (DESIGN §5a, §8): how often it certifies what it must not.

Every replication builds a v2 stress table with the real shape -- 24 learnable candidates (4
tiers × baseline/robust × 3 training α), the surge and linear heuristics and the static engine
× 3 α0 cells × selection and held-out episode seeds × training seeds × both detectors -- and
runs the real `promotion_gate` on it. Per row (policy p, seed s, α0 cell a, training seed t,
detector d), with every noise term (u, v, η, ε, ζ) drawn from the layout's standardized law:

    profit = 100 + 10·u[s, a] + η[p, s, a, t] + 0.3·ε[p, s, a, t, d] + lift_p + value_p·[d = fitted]
    harm   = harm_p + 0.005·v[s, a] + 0.01·ζ[p, s, a, t]

u and v are the episode seed's common random numbers, shared by every policy and both detectors;
η is shared by a policy's two detector runs (the permuted-f ablation reuses every draw but f);
ε, the part that depends on f, and harm exist only for learnable candidates (with δ = 0 the
heuristics and the static engine quote the same with either f and harm no human). lift, value
and harm_p are the layout's, for learnable candidates only.

Null layouts (each must certify at most (1 − confidence)/2 of the time): no profit advantage
and no detector value; the "defence without detection" (DESIGN §5: a δ that lifts every
low-engagement quote raises profit with an uninformative f, so the profit lift is large and the
detector value 0); a detector value without a profit advantage; and human harm exactly at the
bound with both effects real. `POWER_LAYOUT` plants both effects: the gate must find them.

Known limit (measured, not a study here): the harm bound is a Student-t bound, liberal under
right skew. With harm noise skewed like the profit of the "skewed" law (lognormal, skewness 0.78
per cell) the harm-at-bound layout certifies 0.034 of 3,000 replications, at skewness 1.75 0.043,
against 0.025 (normal: 0.028 of 2,000). A harm share per episode pools thousands of shoppers,
so its per-seed law is close to normal, and the harm-at-bound layouts draw normal noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.audit.gate import DEFAULT_CONFIDENCE, HARM_METRIC, promotion_gate
from phantom_assets.audit.pairs import FITTED, PERMUTED
from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.policies import policy_key

TIERS = ("qtable", "ppo", "a2c", "dqn")
MODES = ("baseline", "robust")
TRAIN_ALPHAS = (0.0, 0.5, 1.0)
LEARNABLE = tuple(policy_key(t, m, a) for t in TIERS for m in MODES for a in TRAIN_ALPHAS)
HEURISTICS = tuple(policy_key(t, None, 0.0) for t in ("surge", "linear"))
STATIC = policy_key("static", None, 0.0)
POLICIES = (*LEARNABLE, *HEURISTICS, STATIC)
ALPHA0 = (0.0, 0.5, 1.0)
DETECTORS = (FITTED, PERMUTED)
SPLITS = (SELECTION_SPLIT, TEST_SPLIT)
HARM_BOUND = 0.05
"""The bound the study tests against (its level does not depend on the value)."""
METRIC = "profit"
_LOG_SD = 0.25  # skewness 0.78, as in the benchmark study: a value with a 25% CV

__all__ = [
    "HARM_BOUND",
    "HEURISTICS",
    "LAYOUTS",
    "LEARNABLE",
    "POLICIES",
    "POWER_LAYOUT",
    "STATIC",
    "GateLayout",
    "gate_rejection_rate",
    "stress_table",
    "studies",
]


@dataclass(frozen=True)
class GateLayout:
    """One simulated world for the gate.

    Attributes:
        name: Layout name in the calibration output.
        noise: "normal" | "skewed" (lognormal, skewness 0.78) | "heavy" (Student t, 3 df).
        profit_lift: Fitted and permuted profit added to every learnable candidate.
        detector_value: Fitted profit added to every learnable candidate (fitted − permuted).
        harm: Mean human-harm share of every learnable candidate.
        n_candidates: Candidates tested (Holm) by the gate.
        selection_seeds / test_seeds / train_seeds: The design's shape.
    """

    name: str
    noise: str = "normal"
    profit_lift: float = 0.0
    detector_value: float = 0.0
    harm: float = 0.01
    n_candidates: int = 1
    selection_seeds: int = 8
    test_seeds: int = 8
    train_seeds: int = 1


_LIFT, _VALUE = 5.0, 2.0  # clear effects, several paired SDs: only the missing one can fail
LAYOUTS: tuple[GateLayout, ...] = (
    GateLayout("null_heavy_tailed", noise="heavy"),
    GateLayout("defence_without_detection", profit_lift=_LIFT),
    GateLayout(
        "defence_without_detection_skewed", noise="skewed", profit_lift=_LIFT, train_seeds=3
    ),
    GateLayout("defence_without_detection_holm_3_candidates", profit_lift=_LIFT, n_candidates=3),
    GateLayout(
        "defence_without_detection_study_shape_heavy_tailed",
        noise="heavy",
        profit_lift=_LIFT,
        selection_seeds=30,
        test_seeds=30,
        train_seeds=3,
    ),
    # Fitted profit equal to the static engine's, permuted below it: value without advantage.
    GateLayout("detection_without_profit", profit_lift=-_VALUE, detector_value=_VALUE),
    GateLayout("harm_at_bound", profit_lift=_LIFT, detector_value=_VALUE, harm=HARM_BOUND),
    GateLayout(
        "harm_at_bound_holm_3_candidates",
        profit_lift=_LIFT,
        detector_value=_VALUE,
        harm=HARM_BOUND,
        n_candidates=3,
    ),
)
# Per held-out seed the paired profit advantage has SD 0.82 and the detector value 0.24, so
# these are 1.2 and 2 per-seed SDs: effects 8 seeds can find, not effects that cannot be missed.
POWER_LAYOUT = GateLayout("profit_and_detector_value", profit_lift=1.0, detector_value=0.5)


def _noise(kind: str, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Mean-0, variance-1 draws of the layout's law."""
    if kind == "normal":
        return rng.standard_normal(size)
    if kind == "skewed":
        mean, var = np.exp(_LOG_SD**2 / 2.0), (np.exp(_LOG_SD**2) - 1.0) * np.exp(_LOG_SD**2)
        return (rng.lognormal(0.0, _LOG_SD, size) - mean) / np.sqrt(var)
    if kind == "heavy":
        return rng.standard_t(3.0, size) / np.sqrt(3.0)
    raise ValueError(f"unknown noise {kind!r}; choose normal, skewed or heavy")


def stress_table(layout: GateLayout, rng: np.random.Generator) -> pl.DataFrame:
    """One replication's stress rows: `policy, split, detector, seed, alpha0, train_seed,
    profit, human_harm` (module docstring)."""
    n_seeds = layout.selection_seeds + layout.test_seeds
    cells = (1, n_seeds, len(ALPHA0), 1, 1)
    runs = (len(POLICIES), n_seeds, len(ALPHA0), layout.train_seeds, 1)
    learnable = np.isin(POLICIES, LEARNABLE).reshape(-1, 1, 1, 1, 1)
    fitted = (np.asarray(DETECTORS) == FITTED).reshape(1, 1, 1, 1, -1)
    noise = layout.noise
    profit = (100.0 + 10.0 * _noise(noise, cells, rng) + _noise(noise, runs, rng)
              + learnable * (0.3 * _noise(noise, (*runs[:-1], len(DETECTORS)), rng)
                             + layout.profit_lift + layout.detector_value * fitted))  # fmt: skip
    harm = learnable * (layout.harm + 0.005 * _noise(noise, cells, rng)
                        + 0.01 * _noise(noise, runs, rng))  # fmt: skip
    shape = (*runs[:-1], len(DETECTORS))
    p, s, a, t, d = np.indices(shape).reshape(len(shape), -1)
    return pl.DataFrame({
        "policy": pl.Series(POLICIES).gather(p),
        "split": pl.Series(SPLITS).gather((s >= layout.selection_seeds).astype(np.int64)),
        "detector": pl.Series(DETECTORS).gather(d),
        "seed": s.astype(np.int64),
        "alpha0": np.asarray(ALPHA0)[a],
        "train_seed": t.astype(np.int64),
        METRIC: profit.ravel(),
        HARM_METRIC: np.broadcast_to(harm, shape).ravel(),
    })  # fmt: skip


def gate_rejection_rate(layout: GateLayout, n_reps: int, rng: np.random.Generator) -> float:
    """Share of `n_reps` replications in which the real gate certified."""
    passed: dict[str, tuple[str, ...]] = {key: () for key in POLICIES if key != STATIC}
    certified = 0
    for _ in range(n_reps):  # each replication is one full gate run on a fresh table
        decision = promotion_gate(stress_table(layout, rng), static=STATIC, failed_checks=passed,
                                  rng=rng, max_human_harm=HARM_BOUND, metric=METRIC,
                                  n_candidates=layout.n_candidates)  # fmt: skip
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
