"""Calibration of the promotion gate (docs/statistics.md#certification-gate-tests): how often it
certifies what it must not.

Every replication builds a stress table with the real shape -- the demo's learnable candidates
(3 tiers × plain/robust at the training α), the surge and linear heuristics, the tuned-static
baseline (the best undefended response) and the static engine × 3 α0 cells × the stress band of
each (α0 ± 0.2 ∩ [0, 1], × the evasion shares θ ∈ {0, 0.25} of agents adapting to the detector)
× selection and held-out episode seeds × training seeds × both detectors -- and runs the real
`promotion_gate` on it. Per row (policy p, seed s, α0 cell a, band cell (θ, α) b, training seed
t, detector d), every noise term drawn from the layout's standardized law:

    profit = 100 + 10·u[s] + 3·u'[s, a, b] − 20·α_b + η[p, s, a, b, t]
             + learnable·(0.3·ε[p, s, a, b, t, d] + lift(b) + value(θ_b)·[d = fitted])
    harm   = learnable·harm_p(s, a, b, t)

u, u' are the episode seed's common random numbers (shared by every policy and both detectors),
η is shared by a policy's two detector runs (the permuted-f ablation reuses every draw but f),
ε -- the part that depends on f -- and harm exist only for learnable candidates (the heuristics,
the baseline and the static engine never quote up on f, so their detector value is exactly 0).
`lift(b)` is the layout's advantage over the baseline, optionally 0 at the lowest α of each band
(an advantage the worst case over the band does not have); `value(θ)` the detector value,
optionally another one where the agents adapt (θ > 0: a value evasion takes away).

Null layouts (each must certify at most (1 − confidence)/2 of the time): no effect (heavy
tails); the class-blind rule ("defence without detection": profit over the baseline, detector
value 0); a detector value without a profit advantage; an advantage everywhere in the band but
at its lowest α (the worst-case α must be found on the selection seeds); a detector value that
agents adapting at the band's θ take away (the worst case over θ); human harm exactly at
the bound (normal, and zero-inflated: most seeds harm nobody, a few a lot); Holm over 3
candidates; and the research shape (30 selection, 32 held-out seeds, 3 training seeds, skewed).
`POWER_LAYOUT` plants both effects with harm well within the bound: the gate must find them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from phantom_assets.audit.gate import DEFAULT_CONFIDENCE, promotion_gate
from phantom_assets.audit.pairs import FITTED, PERMUTED
from phantom_assets.audit.selection import HARM_METRIC
from phantom_assets.calibration.result import CalibrationResult
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.market.response import stress_alphas
from phantom_assets.policies import policy_key

TRAIN_ALPHA = 0.5
TIERS = ("qtable", "ppo", "dqn")
MODES = ("baseline", "robust")
LEARNABLE = tuple(policy_key(t, m, TRAIN_ALPHA) for t in TIERS for m in MODES)
HEURISTICS = tuple(policy_key(t, None, TRAIN_ALPHA) for t in ("surge", "linear"))
BASELINE = policy_key("tuned", None, TRAIN_ALPHA)
STATIC = policy_key("static", None, TRAIN_ALPHA)
POLICIES = (*LEARNABLE, *HEURISTICS, BASELINE, STATIC)
ALPHA0 = (0.0, 0.5, 1.0)
STRESS_RADIUS = 0.2
THETAS = (0.0, 0.25)
"""The evasion band's shares (the demo's `[agents] evasion_band`)."""
CELLS = tuple(
    (a0, theta, float(a))
    for a0 in ALPHA0
    for theta in THETAS
    for a in stress_alphas(a0, STRESS_RADIUS)
)
"""(α0, θ, band α) of every stress cell."""
DETECTORS = (FITTED, PERMUTED)
SPLITS = (SELECTION_SPLIT, TEST_SPLIT)
HARM_BOUND = 0.02
"""The bound the study tests against (the demo's `max_human_harm`)."""
METRIC = "profit"
_LOG_SD = 0.25  # skewness 0.78, as in the benchmark study: a value with a 25% CV
_LEAK = 20.0  # profit lost per unit of α (agents buy at the floor)

__all__ = [
    "BASELINE",
    "CELLS",
    "HARM_BOUND",
    "HEURISTICS",
    "LAYOUTS",
    "LEARNABLE",
    "POLICIES",
    "POWER_LAYOUT",
    "STATIC",
    "THETAS",
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
        profit_lift: Profit (both detectors) added to every learnable candidate; with the
            detector value, its fitted profit advantage over the baseline.
        band_low_lift: The lift at the lowest α of each band instead (None: the same); at
            −detector_value the worst case over the band has no advantage.
        detector_value: Fitted profit added to every learnable candidate (fitted − permuted).
        evaded_detector_value: The detector value where agents adapt (θ > 0) instead (None:
            the same); at 0 the worst case over the evasion band has none.
        harm: Mean human-harm share of every learnable candidate.
        harm_zero_share: Share of (seed, cell, training seed) runs that harm nobody (the rest
            carry the whole mean: zero inflation).
        n_candidates: Candidates tested (Holm) by the gate.
        selection_seeds / test_seeds / train_seeds: The design's shape.
    """

    name: str
    noise: str = "normal"
    profit_lift: float = 0.0
    band_low_lift: float | None = None
    detector_value: float = 0.0
    evaded_detector_value: float | None = None
    harm: float = 0.005
    harm_zero_share: float = 0.0
    n_candidates: int = 1
    selection_seeds: int = 8
    test_seeds: int = 24
    train_seeds: int = 1


_LIFT, _VALUE = 5.0, 2.0  # clear effects, several paired SDs: only the missing one can fail
LAYOUTS: tuple[GateLayout, ...] = (
    GateLayout("null_heavy_tailed", noise="heavy"),
    GateLayout("class_blind_rule", profit_lift=_LIFT),
    GateLayout(
        "class_blind_rule_skewed_3_training_seeds", noise="skewed", profit_lift=_LIFT, train_seeds=3
    ),
    GateLayout("class_blind_rule_holm_3_candidates", profit_lift=_LIFT, n_candidates=3),
    # Fitted profit equal to the baseline's, permuted below it: value without advantage.
    GateLayout("detection_without_profit", profit_lift=-_VALUE, detector_value=_VALUE),
    GateLayout(
        "advantage_missing_at_the_band_low",
        profit_lift=_LIFT,
        band_low_lift=-_VALUE,
        detector_value=_VALUE,
    ),
    GateLayout(
        "detector_value_lost_when_agents_adapt",
        profit_lift=_LIFT,
        detector_value=_VALUE,
        evaded_detector_value=0.0,
    ),
    GateLayout("harm_at_bound", profit_lift=_LIFT, detector_value=_VALUE, harm=HARM_BOUND),
    GateLayout(
        "harm_at_bound_zero_inflated",
        profit_lift=_LIFT,
        detector_value=_VALUE,
        harm=HARM_BOUND,
        harm_zero_share=0.7,
    ),
    GateLayout(
        "harm_at_bound_holm_3_candidates",
        profit_lift=_LIFT,
        detector_value=_VALUE,
        harm=HARM_BOUND,
        n_candidates=3,
    ),
    GateLayout(
        "class_blind_rule_research_shape_skewed",
        noise="skewed",
        profit_lift=_LIFT,
        selection_seeds=30,
        test_seeds=32,
        train_seeds=3,
    ),
)
# Per held-out seed the paired profit advantage has SD ~0.5 and the detector value ~0.15 (the
# cells of a seed averaged), so these are ~4 and ~5 per-seed SDs at the band's worst α: the gate's
# store-sample test (every held-out seed a replicate of the store: `audit.store_sample`) asks an
# effect to stand out from the seeds' spread (≈ 2.1 SDs at 24 seeds), not from its mean's SE.
POWER_LAYOUT = GateLayout("profit_and_detector_value", profit_lift=2.0, detector_value=0.75)


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


def _harm(layout: GateLayout, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Non-negative harm shares with mean `layout.harm` (zero-inflated if asked): a seed's common
    part times a run's own part, both mean-1 lognormal (right-skewed, like a pooled share)."""

    def unit_lognormal(sigma: float, size: tuple[int, ...]) -> np.ndarray:
        return rng.lognormal(-(sigma**2) / 2.0, sigma, size)

    own = unit_lognormal(0.5, shape)
    if layout.harm_zero_share:
        own *= (rng.random(shape) >= layout.harm_zero_share) / (1.0 - layout.harm_zero_share)
    return layout.harm * unit_lognormal(0.3, (1, shape[1], 1, 1, 1)) * own


def stress_table(layout: GateLayout, rng: np.random.Generator) -> pl.DataFrame:
    """One replication's stress rows: `policy, split, detector, seed, alpha0, theta, alpha,
    train_seed, profit, human_harm` (module docstring)."""
    n_seeds = layout.selection_seeds + layout.test_seeds
    runs = (len(POLICIES), n_seeds, len(CELLS), layout.train_seeds)
    alpha0, theta, alpha = (np.asarray(column) for column in zip(*CELLS, strict=True))
    band_low = alpha == np.asarray([min(b for c, _, b in CELLS if c == c0) for c0 in alpha0])
    learnable = np.isin(POLICIES, LEARNABLE).reshape(-1, 1, 1, 1, 1)
    fitted = (np.asarray(DETECTORS) == FITTED).reshape(1, 1, 1, 1, -1)
    low = layout.profit_lift if layout.band_low_lift is None else layout.band_low_lift
    lift = np.where(band_low, low, layout.profit_lift).reshape(1, 1, -1, 1, 1)
    evaded = (
        layout.detector_value
        if layout.evaded_detector_value is None
        else layout.evaded_detector_value
    )
    value = np.where(theta > 0.0, evaded, layout.detector_value).reshape(1, 1, -1, 1, 1)
    noise = layout.noise
    common = 10.0 * _noise(noise, (1, n_seeds, 1, 1, 1), rng) + 3.0 * _noise(
        noise, (1, n_seeds, len(CELLS), 1, 1), rng
    )
    profit = (
        100.0
        + common
        - _LEAK * alpha.reshape(1, 1, -1, 1, 1)
        + _noise(noise, (*runs, 1), rng)
        + learnable * (0.3 * _noise(noise, (*runs, len(DETECTORS)), rng) + lift + value * fitted)
    )
    harm = learnable * _harm(layout, (*runs, 1), rng)
    shape = (*runs, len(DETECTORS))
    p, s, c, t, d = np.indices(shape).reshape(len(shape), -1)
    return pl.DataFrame(
        {
            "policy": pl.Series(POLICIES).gather(p),
            "split": pl.Series(SPLITS).gather((s >= layout.selection_seeds).astype(np.int64)),
            "detector": pl.Series(DETECTORS).gather(d),
            "seed": s.astype(np.int64),
            "alpha0": alpha0[c],
            "theta": theta[c],
            "alpha": alpha[c],
            "train_seed": t.astype(np.int64),
            METRIC: np.broadcast_to(profit, shape).ravel(),
            HARM_METRIC: np.broadcast_to(harm, shape).ravel(),
        }
    )


def gate_rejection_rate(layout: GateLayout, n_reps: int, rng: np.random.Generator) -> float:
    """Share of `n_reps` replications in which the real gate certified."""
    passed: dict[str, tuple[str, ...]] = {key: () for key in POLICIES}
    certified = 0
    for _ in range(n_reps):  # each replication is one full gate run on a fresh table
        decision = promotion_gate(
            stress_table(layout, rng),
            baseline=BASELINE,
            static=STATIC,
            failed_checks=passed,
            rng=rng,
            max_human_harm=HARM_BOUND,
            metric=METRIC,
            n_candidates=layout.n_candidates,
        )
        certified += decision.certified
    return certified / n_reps


def studies(n_reps: int, rng: np.random.Generator) -> list[CalibrationResult]:
    """False-certification rate of the gate under every null layout in `LAYOUTS`."""
    level = round((1.0 - DEFAULT_CONFIDENCE) / 2.0, 12)
    return [
        CalibrationResult(
            procedure="certification_gate",
            layout=layout.name,
            level=level,
            n_reps=n_reps,
            rejection_rate=gate_rejection_rate(layout, n_reps, rng),
        )
        for layout in LAYOUTS
    ]
