"""Market sensitivity (docs/method.md#what-the-logs-cannot-identify): which conclusions survive the
assumptions the store's logs cannot identify.

The valuation law behind purchases (and s0 of the markup curve where the price logs cannot
identify it) is declared. Each point of the declared grid re-parameterizes the store's market
(valuation mean × anchor; s0 with the markup m refitted to the store's quotes at that s0) and
re-runs, on the same episode seeds:

- *erosion*: COI_A(K)/COI_H of the undefended engine (agents only vs humans only, K = nominal);
- *oracle*: the share of the α grid where the best fixed action uses the detector (δ > 0);
- *the gate on fixed actions*: the best defended fixed action (δ > 0, best stress objective on
  the selection seeds) against the best undefended one (the tuned-static tier at that point),
  through the real `promotion_gate` on held-out seeds: its profit advantage, detector value
  beyond engagement, total human harm, the detector's human false-positive rate at α = 0, and
  whether it certifies.

Fixed actions are evaluated with `market.oracle.fixed_action_totals`, exactly the evaluation
protocol's episodes of a policy that always plays the action, without stepping an env. A
conclusion is *robust* only if it holds at every grid point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.audit.gate import promotion_gate
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.evaluation.protocol import totals_metrics
from phantom_assets.market import DETECTOR_MODES, MarketSpec
from phantom_assets.market.columns import STEP_COLUMNS
from phantom_assets.market.compile import markup_grid
from phantom_assets.market.erosion import coi_a_share, coi_erosion
from phantom_assets.market.oracle import fixed_action_totals
from phantom_assets.market.response import band_profits, stress_alphas

SENSITIVITY_SCHEMA: dict[str, pl.DataType] = {
    "valuation_mean": pl.Float64(), "engagement_scale": pl.Float64(),
    "engagement_scale_multiple": pl.Float64(), "markup": pl.Float64(), "nominal": pl.Boolean(),
    "erosion_ratio": pl.Float64(), "oracle_detector_share": pl.Float64(),
    "undefended_action": pl.String(), "defended_action": pl.String(),
    "profit_advantage": pl.Float64(), "detector_value": pl.Float64(), "human_harm": pl.Float64(),
    "false_positive_rate": pl.Float64(), "p_profit": pl.Float64(), "p_detector": pl.Float64(),
    "p_harm": pl.Float64(), "certified": pl.Boolean(),
}  # fmt: skip
"""Contract of `market_sensitivity/sensitivity.parquet` (docs/architecture.md#column-contracts): one
row per grid point."""
STRESS_METRICS = ("profit", "human_harm", "false_positive_rate", "human_surplus_change",
                  "human_quoted_up")  # fmt: skip
"""The stress metrics the fixed-action gate reads or reports."""
STATIC, TUNED, DEFENDED = "static", "tuned", "defended"
CONCLUSIONS: dict[str, tuple[str, Callable[[pl.Expr], pl.Expr]]] = {
    "agents erode the premium (COI_A / COI_H < 1)": ("erosion_ratio", lambda x: x < 1.0),
    "the best fixed action uses the detector somewhere on the α grid":
        ("oracle_detector_share", lambda x: x > 0.0),
    "the best defended fixed action beats the best undefended one (held-out mean)":
        ("profit_advantage", lambda x: x > 0.0),
    "the detector adds value beyond engagement (held-out mean)":
        ("detector_value", lambda x: x > 0.0),
    "the fixed-action gate certifies the defence": ("certified", lambda x: x),
}  # fmt: skip
"""Each conclusion: the column it reads and when it holds at a grid point."""

INTERVAL_COVERS = (
    "shopper noise given the store's session bank: each held-out seed redraws shoppers, "
    "products, valuations and quote noise from one bank of the store's sessions; the store's "
    "finite sample of sessions itself is not resampled"
)
"""What the certificate's intervals cover (docs/method.md#promotion-gate), stated in every
certificate."""

__all__ = [
    "CONCLUSIONS",
    "INTERVAL_COVERS",
    "SENSITIVITY_SCHEMA",
    "SensitivityDesign",
    "assumption_grid",
    "certificate_assumptions",
    "market_sensitivity",
    "robust_conclusions",
    "sensitivity_markdown",
    "sensitivity_point",
]


@dataclass(frozen=True)
class SensitivityDesign:
    """What every grid point is evaluated on (the evaluation's grids and seeds).

    Attributes:
        alpha_grid, radius: the α grid and its stress band radius.
        k: clean sessions per agent (the market's nominal K).
        selection_seeds, test_seeds: the gate's disjoint episode seeds.
        max_human_harm: the gate's bound on the total human harm.
    """

    alpha_grid: tuple[float, ...]
    radius: float
    k: int
    selection_seeds: tuple[int, ...]
    test_seeds: tuple[int, ...]
    max_human_harm: float


def assumption_grid(
    spec: MarketSpec,
    valuation_means: Sequence[float],
    engagement_multiples: Sequence[float],
    markup_at: Callable[[float], float],
    markup_multiples: tuple[float, ...],
) -> list[tuple[dict[str, Any], MarketSpec]]:
    """The market at every declared grid point: valuation mean (× anchor) × s0 (× the spec's
    s0; only its own s0 when the logs identified it) with m = `markup_at(s0)`.

    Returns:
        (the point's values, its market) per point; `nominal` marks the spec's own point.
    """
    fitted_s0 = spec.sources.get("engagement_scale") != "declared"
    multiples = (1.0,) if fitted_s0 else tuple(engagement_multiples)
    points = []
    for mean in valuation_means:  # a dozen points at most
        for multiple in multiples:
            s0 = spec.engagement_scale * multiple
            markup = float(markup_at(s0))
            market = dataclasses.replace(
                spec, mu_human=float(mean), mu_agent=float(mean), engagement_scale=s0,
                markups=markup_grid(markup, markup_multiples),
            )  # fmt: skip
            values = {"valuation_mean": float(mean), "engagement_scale": s0,
                      "engagement_scale_multiple": float(multiple), "markup": markup,
                      "nominal": bool(mean == spec.mu_human and multiple == 1.0)}  # fmt: skip
            points.append((values, market))
    return points


def _stress_table(
    spec: MarketSpec, actions: dict[str, int], design: SensitivityDesign
) -> pl.DataFrame:
    """The protocol's stress rows of fixed-action policies (harm against the tuned action)."""
    bands = {a0: stress_alphas(a0, design.radius) for a0 in design.alpha_grid}
    alphas = np.unique(np.concatenate(list(bands.values())))
    names, indices = list(actions), list(actions.values())
    frames = []
    for split, seeds in ((SELECTION_SPLIT, design.selection_seeds),
                         (TEST_SPLIT, design.test_seeds)):  # fmt: skip
        for detector in DETECTOR_MODES:
            totals = fixed_action_totals(spec, indices, alphas, design.k, seeds, detector,
                                         reference_action=actions[TUNED])  # fmt: skip
            total = {name: totals[..., i] for i, name in enumerate(STEP_COLUMNS)}
            humans = spec.shoppers_per_step * spec.episode_steps - total["agents"]
            metrics = totals_metrics(total, humans)  # each (policies, seeds, alphas)
            p, s, a = (i.ravel() for i in np.indices(totals.shape[:3]))
            cells = pl.DataFrame({
                "policy": np.asarray(names)[p], "split": split, "detector": detector,
                "seed": np.asarray(seeds, dtype=np.int64)[s], "alpha": alphas[a],
                **{name: metrics[name].ravel() for name in STRESS_METRICS},
            })  # fmt: skip
            for alpha0, band in bands.items():
                frames.append(cells.filter(pl.col("alpha").is_in(band.tolist()))
                              .with_columns(alpha0=pl.lit(float(alpha0))))  # fmt: skip
    return pl.concat(frames)


def _action_text(spec: MarketSpec, action: int) -> str:
    level, markup, delta = spec.action_values(action)
    return f"level {level:g}, m {markup:.3g}, δ {delta:g}"


def sensitivity_point(
    spec: MarketSpec, design: SensitivityDesign, rng: np.random.Generator
) -> dict[str, Any]:
    """Erosion, the oracle's use of the detector and the fixed-action gate on one market."""
    profits = band_profits(spec, design.alpha_grid, design.radius, design.k,
                           design.selection_seeds)  # fmt: skip
    undefended, defended = profits.best(spec, defended=False), profits.best(spec, defended=True)
    grid = np.searchsorted(profits.alphas, design.alpha_grid)
    best = profits.mean[:, grid].argmax(axis=0)  # ties: the lowest index, δ = 0 first
    uses_detector = [spec.action_values(int(a))[2] > 0.0 for a in best]
    erosion = coi_erosion(spec, [0.0, 1.0], [design.k], design.selection_seeds, detectors=[0.0])
    actions = {STATIC: spec.undefended_action, TUNED: undefended, DEFENDED: defended}
    decision = promotion_gate(
        _stress_table(spec, actions, design), baseline=TUNED, static=STATIC,
        failed_checks={DEFENDED: ()}, rng=rng, max_human_harm=design.max_human_harm,
    )  # fmt: skip
    profit, detector, harm = decision.tests
    return {
        "erosion_ratio": coi_a_share(erosion, design.k),
        "oracle_detector_share": float(np.mean(uses_detector)),
        "undefended_action": _action_text(spec, undefended),
        "defended_action": _action_text(spec, defended),
        "profit_advantage": profit.mean, "detector_value": detector.mean,
        "human_harm": None if harm is None else harm.mean,
        "false_positive_rate": decision.reported.get("false_positive_rate_at_alpha_0"),
        "p_profit": profit.p_value, "p_detector": detector.p_value,
        "p_harm": None if harm is None else harm.p_value, "certified": decision.certified,
    }  # fmt: skip


def market_sensitivity(
    points: Sequence[tuple[dict[str, Any], MarketSpec]],
    design: SensitivityDesign,
    rng: np.random.Generator,
) -> pl.DataFrame:
    """`sensitivity_point` at every point of `assumption_grid`: the `SENSITIVITY_SCHEMA` table."""
    rows = [{**values, **sensitivity_point(market, design, rng)} for values, market in points]
    return pl.DataFrame(rows, schema=SENSITIVITY_SCHEMA)


def robust_conclusions(table: pl.DataFrame) -> pl.DataFrame:
    """Per conclusion: at how many grid points it holds, and whether it holds on the whole grid
    (`verdict`: "robust", "never", or "depends on the assumptions").

    Returns:
        `conclusion, holds_at, points, nominal, verdict`.
    """
    rows = []
    for conclusion, (column, holds) in CONCLUSIONS.items():
        flags = table.select(holds(pl.col(column)).fill_null(False).alias("holds"), "nominal")
        n_holds, points = int(flags["holds"].sum()), table.height
        nominal = flags.filter(pl.col("nominal"))["holds"].to_list()
        verdict = ("robust" if n_holds == points else "never" if n_holds == 0
                   else "depends on the assumptions")  # fmt: skip
        rows.append((conclusion, n_holds, points, nominal[0] if nominal else None, verdict))
    return pl.DataFrame(rows, schema=["conclusion", "holds_at", "points", "nominal", "verdict"],
                        orient="row")  # fmt: skip


def sensitivity_markdown(table: pl.DataFrame, conclusions: pl.DataFrame, store: str) -> str:
    """The conclusions and every grid point, as markdown."""
    lines = [
        f"# Market sensitivity: {store}", "",
        "Declared assumptions swept: valuation mean (× anchor) and, where the price logs do not "
        "identify it, s0 of the markup curve (m refitted at each s0). A conclusion is robust "
        "only if it holds at every point.", "",
        "| conclusion | holds at | at the market's own point | verdict |", "|---|---:|---|---|",
        *[f"| {r['conclusion']} | {r['holds_at']}/{r['points']} | {r['nominal']} | "
          f"**{r['verdict']}** |" for r in conclusions.iter_rows(named=True)],
        "", "| valuation mean | s0 | m | COI_A/COI_H | oracle uses δ | best undefended | "
        "best defended | profit adv. | detector value | harm | FPR α=0 | certified |",
        "|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---|",
    ]  # fmt: skip
    for r in table.iter_rows(named=True):
        mark = " (own)" if r["nominal"] else ""

        def num(value: object, spec: str = ".3g") -> str:
            return "—" if value is None else format(value, spec)

        lines.append(
            f"| {r['valuation_mean']:g}{mark} | {r['engagement_scale']:.3g} | {r['markup']:.3g} "
            f"| {num(r['erosion_ratio'])} | {r['oracle_detector_share']:.0%} "
            f"| {r['undefended_action']} | {r['defended_action']} "
            f"| {num(r['profit_advantage'], ',.0f')} | {num(r['detector_value'], ',.0f')} "
            f"| {num(r['human_harm'])} | {num(r['false_positive_rate'])} | {r['certified']} |"
        )
    return "\n".join(lines) + "\n"


def certificate_assumptions(
    table: pl.DataFrame | None, certified: bool, sources: dict[str, str]
) -> dict[str, Any]:
    """The certificate's assumption set (docs/method.md#what-the-logs-cannot-identify): the declared
    market terms, whether the fixed-action gate reaches the certificate's decision at every
    sensitivity grid point, the robust conclusions, and what the intervals cover."""
    declared = sorted(name for name, source in sources.items() if source == "declared")
    out: dict[str, Any] = {"declared": declared, "interval_covers": INTERVAL_COVERS}
    if table is None:
        return {**out, "sensitivity": "not built (materialize market_sensitivity)"}
    agree = table["certified"] == certified
    conclusions = robust_conclusions(table)
    return {
        **out, "grid_points": table.height,
        "fixed_action_gate_certified_at": int(table["certified"].sum()),
        "decision_holds_on_whole_grid": bool(agree.all()),
        "robust": conclusions.filter(pl.col("verdict") == "robust")["conclusion"].to_list(),
        "never": conclusions.filter(pl.col("verdict") == "never")["conclusion"].to_list(),
        "depends": conclusions.filter(pl.col("verdict").str.starts_with("depends"))
        ["conclusion"].to_list(),
    }  # fmt: skip
