"""Market sensitivity (docs/method.md#what-the-logs-cannot-identify): which conclusions survive the
assumptions the store's logs cannot identify.

What stays declared in market v4 -- the marginal cost, the quote cap, what agents' principals pay,
the in-market share and s0 where the logs do not identify them -- and the demand's own
uncertainty (its engagement slope β at the ends of its interval) are moved one at a time from the
market's own point (`assumption_grid`), and every point re-runs, on the same episode seeds:

- *erosion*: COI_A(K)/COI_H of the undefended engine (agents only vs humans only, K = nominal);
- *personalization value*: the best engagement pricing − the best uniform price at α = 0
  (refined on the selection seeds, the held-out mean);
- *the gate on fixed actions*: the best defended action against the best undefended one, both
  refined on the continuous action space on the selection seeds (`market.optimize`), through the
  real `promotion_gate` on held-out seeds (its stress band with the agents that adapt to the
  detector, as the certificate's): its profit advantage, detector value beyond engagement,
  total human harm, the detector's human false-positive rate at α = 0, and whether it certifies.

Fixed actions are evaluated with `market.oracle.action_totals`, exactly the evaluation protocol's
episodes of a policy that always plays the action, without stepping an env. A conclusion is
*robust* only if it holds at every grid point.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.audit.gate import promotion_gate
from phantom_assets.config import MarketConfig
from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.market import DETECTOR_MODES, MarketSpec
from phantom_assets.market.columns import STEP_COLUMNS
from phantom_assets.market.compile import markup_grid
from phantom_assets.market.erosion import coi_a_share, coi_erosion
from phantom_assets.market.metrics import totals_metrics
from phantom_assets.market.optimize import best_action, cell_objective, stress_objective
from phantom_assets.market.oracle import action_totals
from phantom_assets.market.response import stress_alphas
from phantom_assets.market.spec import REPLICATE_COLUMNS

SENSITIVITY_SCHEMA: dict[str, pl.DataType] = {
    "term": pl.String(),
    "nominal": pl.Boolean(),
    "cost_share": pl.Float64(),
    "price_cap": pl.Float64(),
    "agent_valuation": pl.String(),
    "beta_human": pl.Float64(),
    "in_market": pl.Float64(),
    "engagement_scale": pl.Float64(),
    "markup": pl.Float64(),
    "erosion_ratio": pl.Float64(),
    "personalization_value": pl.Float64(),
    "undefended_action": pl.String(),
    "defended_action": pl.String(),
    "profit_advantage": pl.Float64(),
    "detector_value": pl.Float64(),
    "human_harm": pl.Float64(),
    "false_positive_rate": pl.Float64(),
    "p_profit": pl.Float64(),
    "p_detector": pl.Float64(),
    "p_harm": pl.Float64(),
    "certified": pl.Boolean(),
}
"""Contract of `market_sensitivity/sensitivity.parquet` (docs/architecture.md#column-contracts): one
row per grid point, `term` the declared term moved there ("nominal": the market's own point)."""
STRESS_METRICS = (
    "profit",
    "human_harm",
    "false_positive_rate",
    "human_surplus_change",
    "human_quoted_up",
)
"""The stress metrics the fixed-action gate reads or reports."""
STATIC, TUNED, DEFENDED = "static", "tuned", "defended"
CONCLUSIONS: dict[str, tuple[str, Callable[[pl.Expr], pl.Expr]]] = {
    "agents erode the premium (COI_A / COI_H < 1)": ("erosion_ratio", lambda x: x < 1.0),
    "engagement pricing beats the best uniform price (held-out mean)": (
        "personalization_value",
        lambda x: x > 0.0,
    ),
    "the best defended fixed action beats the best undefended one (held-out mean)": (
        "profit_advantage",
        lambda x: x > 0.0,
    ),
    "the detector adds value beyond engagement (held-out mean)": (
        "detector_value",
        lambda x: x > 0.0,
    ),
    "the fixed-action gate certifies the defence": ("certified", lambda x: x),
}
"""Each conclusion: the column it reads and when it holds at a grid point."""

INTERVAL_COVERS = (
    "the store's finite sample and shopper noise: each held-out seed plays one replicate of the "
    "store's sample (its sessions resampled by experiment, its demand refitted on the same "
    "resample) with fresh shoppers, and the intervals are store-sample intervals over the seeds "
    "(mean ± t·sd·√(1 + 1/n)), which cover the store's population value, not only the "
    "replicates' average"
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


def _point(spec: MarketSpec, term: str, **changes: Any) -> tuple[dict[str, Any], MarketSpec]:
    """One grid point: the market with `changes`, and its values."""
    market = dataclasses.replace(spec, **changes) if changes else spec
    values = {
        "term": term,
        "nominal": not changes,
        "cost_share": market.cost_share,
        "price_cap": market.price_cap,
        "agent_valuation": market.agent_valuation,
        "beta_human": market.beta_human,
        "in_market": market.in_market,
        "engagement_scale": market.engagement_scale,
        "markup": market.store_markup,
    }
    return values, market


def _at_point_estimate(spec: MarketSpec, **values: float) -> np.ndarray:
    """The demand replicates with the human parameters `values` fixed in every replicate (the
    sessions are still resampled)."""
    rows = spec.demand_replicates.copy()
    for name, value in values.items():
        rows[:, REPLICATE_COLUMNS.index(name)] = value
    return rows


def assumption_grid(
    spec: MarketSpec,
    config: MarketConfig,
    markup_at: Callable[[float], float],
    beta_interval: tuple[float, float] | None = None,
) -> list[tuple[dict[str, Any], MarketSpec]]:
    """The market's own point, then each declared term moved alone (module docstring): the cost
    shares and caps of `config`, the other agents' valuation laws, the demand's engagement slope
    at the ends of `beta_interval` (a fitted demand), the in-market shares (a declared demand)
    and s0 (× the market's, m refitted by `markup_at`) where the price logs do not identify it.

    Returns:
        (the point's values, its market) per point; `nominal` marks the spec's own point.
    """
    points = [_point(spec, "nominal")]
    points += [
        _point(spec, "cost_share", cost_share=c)
        for c in config.sensitivity_cost_shares
        if c != spec.cost_share
    ]
    points += [
        _point(spec, "price_cap", price_cap=c)
        for c in config.sensitivity_price_caps
        if c != spec.price_cap
    ]
    points += [
        _point(spec, "agent_valuation", agent_valuation=law)
        for law in config.sensitivity_agent_valuations
        if law != spec.agent_valuation
    ]
    if beta_interval is not None and spec.sources.get("valuation") == "logs":
        points += [
            _point(
                spec,
                "beta_human",
                beta_human=b,
                demand_replicates=_at_point_estimate(spec, beta_human=b),
            )
            for b in beta_interval
            if np.isfinite(b)
        ]
    if spec.sources.get("in_market") == "declared":
        points += [
            _point(
                spec,
                "in_market",
                in_market=share,
                demand_replicates=_at_point_estimate(spec, in_market=share),
            )
            for share in config.sensitivity_in_market
        ]
    if spec.sources.get("engagement_scale") == "declared":
        for multiple in config.sensitivity_engagement_scales:  # two points at most
            s0 = spec.engagement_scale * multiple
            markup = float(markup_at(s0))
            points.append(
                _point(
                    spec,
                    "engagement_scale",
                    engagement_scale=s0,
                    store_markup=markup,
                    markups=markup_grid(markup, config.markup_multiples),
                )
            )
    return points


def _stress_table(
    spec: MarketSpec, actions: dict[str, tuple[float, float, float]], design: SensitivityDesign
) -> pl.DataFrame:
    """The protocol's stress rows of fixed-action policies (harm against the tuned action), on
    the band α × the evasion shares θ of the declared band (`spec.evasion_band_thetas`)."""
    bands = {a0: stress_alphas(a0, design.radius) for a0 in design.alpha_grid}
    alphas = np.unique(np.concatenate(list(bands.values())))
    names, values = list(actions), list(actions.values())
    frames = []
    for split, seeds in (
        (SELECTION_SPLIT, design.selection_seeds),
        (TEST_SPLIT, design.test_seeds),
    ):
        for theta, detector in itertools.product(spec.evasion_band_thetas, DETECTOR_MODES):
            totals = action_totals(
                spec.evaded(theta),
                values,
                alphas,
                design.k,
                seeds,
                detector,
                reference=actions[TUNED][:2],
            )
            total = {name: totals[..., i] for i, name in enumerate(STEP_COLUMNS)}
            humans = spec.shoppers_per_step * spec.episode_steps - total["agents"]
            metrics = totals_metrics(total, humans)  # each (policies, seeds, alphas)
            p, s, a = (i.ravel() for i in np.indices(totals.shape[:3]))
            cells = pl.DataFrame(
                {
                    "policy": np.asarray(names)[p],
                    "split": split,
                    "detector": detector,
                    "theta": theta,
                    "seed": np.asarray(seeds, dtype=np.int64)[s],
                    "alpha": alphas[a],
                    **{name: metrics[name].ravel() for name in STRESS_METRICS},
                }
            )
            for alpha0, band in bands.items():
                frames.append(
                    cells.filter(pl.col("alpha").is_in(band.tolist())).with_columns(
                        alpha0=pl.lit(float(alpha0))
                    )
                )
    return pl.concat(frames)


def _action_text(action: tuple[float, float, float]) -> str:
    level, markup, delta = action
    return f"level {level:.3g}, m {markup:.3g}, δ {delta:.3g}"


def _personalization(spec: MarketSpec, design: SensitivityDesign) -> float:
    """Held-out mean of the best engagement pricing − the best uniform price at α = 0."""
    objective = cell_objective(spec, 0.0, design.k, design.selection_seeds)
    actions = [best_action(spec, objective, family).action for family in ("undefended", "uniform")]
    totals = action_totals(spec, actions, [0.0], design.k, design.test_seeds)
    profit = totals[:, :, 0, STEP_COLUMNS.index("profit")].mean(axis=1)
    return float(profit[0] - profit[1])


def sensitivity_point(
    spec: MarketSpec, design: SensitivityDesign, rng: np.random.Generator
) -> dict[str, Any]:
    """Erosion, the value of engagement pricing and the fixed-action gate on one market."""
    stress = stress_objective(
        spec, design.alpha_grid, design.radius, design.k, design.selection_seeds
    )
    undefended = best_action(spec, stress, "undefended").action
    defended = best_action(spec, stress, "defended", also=[undefended]).action
    erosion = coi_erosion(spec, [0.0, 1.0], [design.k], design.selection_seeds, detectors=[0.0])
    static = spec.action_values(spec.undefended_action)
    actions = {STATIC: static, TUNED: undefended, DEFENDED: defended}
    decision = promotion_gate(
        _stress_table(spec, actions, design),
        baseline=TUNED,
        static=STATIC,
        failed_checks={DEFENDED: ()},
        rng=rng,
        max_human_harm=design.max_human_harm,
    )
    profit, detector, harm = decision.tests
    return {
        "erosion_ratio": coi_a_share(erosion, design.k),
        "personalization_value": _personalization(spec, design),
        "undefended_action": _action_text(undefended),
        "defended_action": _action_text(defended),
        "profit_advantage": profit.mean,
        "detector_value": detector.mean,
        "human_harm": None if harm is None else harm.mean,
        "false_positive_rate": decision.reported.get("false_positive_rate_at_alpha_0"),
        "p_profit": profit.p_value,
        "p_detector": detector.p_value,
        "p_harm": None if harm is None else harm.p_value,
        "certified": decision.certified,
    }


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
        verdict = (
            "robust"
            if n_holds == points
            else "never"
            if n_holds == 0
            else "depends on the assumptions"
        )
        rows.append((conclusion, n_holds, points, nominal[0] if nominal else None, verdict))
    return pl.DataFrame(
        rows, schema=["conclusion", "holds_at", "points", "nominal", "verdict"], orient="row"
    )


def sensitivity_markdown(table: pl.DataFrame, conclusions: pl.DataFrame, store: str) -> str:
    """The conclusions and every grid point, as markdown."""
    lines = [
        f"# Market sensitivity: {store}",
        "",
        "Each declared term moved alone from the market's own point (cost share, quote cap, what "
        "agents' principals pay, the demand's engagement slope at its interval's ends, and the "
        "in-market share and s0 where the logs do not identify them). A conclusion is robust "
        "only if it holds at every point.",
        "",
        "| conclusion | holds at | at the market's own point | verdict |",
        "|---|---:|---|---|",
        *[
            f"| {r['conclusion']} | {r['holds_at']}/{r['points']} | {r['nominal']} | "
            f"**{r['verdict']}** |"
            for r in conclusions.iter_rows(named=True)
        ],
        "",
        "| term moved | value | COI_A/COI_H | engagement pricing | best undefended | "
        "best defended | profit adv. | detector value | harm | FPR α=0 | certified |",
        "|---|---|---:|---:|---|---|---:|---:|---:|---:|---|",
    ]

    def num(value: object, spec: str = ".3g") -> str:
        return "—" if value is None else format(value, spec)

    for r in table.iter_rows(named=True):
        term = r["term"]
        value = (
            ""
            if term == "nominal"
            else str(
                r[term] if term != "engagement_scale" else f"{r[term]:.3g} (m {r['markup']:.3g})"
            )
        )
        lines.append(
            f"| {term} | {value} | {num(r['erosion_ratio'])} "
            f"| {num(r['personalization_value'], ',.0f')} | {r['undefended_action']} "
            f"| {r['defended_action']} | {num(r['profit_advantage'], ',.0f')} "
            f"| {num(r['detector_value'], ',.0f')} | {num(r['human_harm'])} "
            f"| {num(r['false_positive_rate'])} | {r['certified']} |"
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
        **out,
        "grid_points": table.height,
        "fixed_action_gate_certified_at": int(table["certified"].sum()),
        "decision_holds_on_whole_grid": bool(agree.all()),
        "robust": conclusions.filter(pl.col("verdict") == "robust")["conclusion"].to_list(),
        "never": conclusions.filter(pl.col("verdict") == "never")["conclusion"].to_list(),
        "depends": conclusions.filter(pl.col("verdict").str.starts_with("depends"))[
            "conclusion"
        ].to_list(),
    }
