"""COI erosion: what each class pays over the engine's floor as agents reconnoitre in more clean
sessions — the thesis' headline figure (docs/method.md#agents-and-coi-erosion).

Per (δ, α, K) and episode seed (the unit of inference), at the undefended engine's level and
markup: COI_H = human premium / human purchases, COI_A = agent premium / agent purchases, COI =
both premiums / all purchases (premium = p_paid − p_min, purchase-weighted within the episode, as
the evaluation's episode metrics), the mean price each class paid, purchases by class and the
leak; then means with Student-t intervals over seeds. Every (α, K, δ) of a seed uses the same
draws (`oracle.episode_draws` at K_max = max K): a shopper is an agent under α iff u < α, and an
agent with K sessions sees the first K of the same K_max quotes, so the curves differ by the
mechanism, not by noise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from phantom_assets.market.columns import COLUMN
from phantom_assets.market.draws import StepDraws
from phantom_assets.market.engine import Engine, simulate_step
from phantom_assets.market.env import engine_of
from phantom_assets.market.oracle import (
    check_grid,
    episode_draws,
    seed_t_interval,
    subset_draws,
)
from phantom_assets.market.quoting import expected_min_quote, price_floor
from phantom_assets.market.spec import MarketSpec
from phantom_assets.market.world import DemandLaw

EROSION_METRICS: tuple[str, ...] = (
    "coi_h",
    "coi_a",
    "coi",
    "human_price_paid",
    "agent_price_paid",
    "human_purchases",
    "agent_purchases",
    "leak",
)
"""Per-episode metrics of the erosion table (ratios NaN where their class bought nothing)."""

EROSION_SCHEMA: dict[str, pl.DataType] = {
    "detector": pl.Float64(),
    "alpha": pl.Float64(),
    "k": pl.Int64(),
    "metric": pl.String(),
    "mean": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "n": pl.Int64(),
}
"""Every erosion metric (`erosion_metrics.parquet`); `n` = seeds where the metric is defined."""
CLASS_METRICS: dict[str, str] = {"coi_h": "human", "coi_a": "agent", "coi": "all"}
"""The COI metric of each class of the `coi_erosion.parquet` contract
(docs/architecture.md#column-contracts)."""

CI_METHOD = "student_t_over_episode_seeds"

_TOTALS = (
    "revenue",
    "human_purchases",
    "agent_purchases",
    "human_premium",
    "agent_premium",
    "leak",
)


def erosion_detectors(spec: MarketSpec, detectors: Sequence[float] | None) -> tuple[float, ...]:
    """`detectors`, by default (0, max δ): the undefended engine and its most defended variant
    (same level and markup)."""
    return (0.0, max(spec.detector_strengths)) if detectors is None else tuple(detectors)


def _class_totals(
    engine: Engine,
    action: tuple[float, float, float],
    draws: StepDraws,
    alpha: float,
    ks: np.ndarray,
    demand: DemandLaw,
) -> np.ndarray:
    """(K, len(_TOTALS)) episode totals of `draws`' shoppers, all agents (α = 1) or all humans
    (α = 0), per K (zeros when there are none), under the episode's demand."""
    if draws.z.size == 0:
        return np.zeros((ks.size, len(_TOTALS)))
    totals = simulate_step(engine, action, draws, np.full(ks.size, alpha), ks, demand=demand)
    return totals[:, [COLUMN[name] for name in _TOTALS]]


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def seed_metrics(
    spec: MarketSpec,
    alphas: Sequence[float],
    ks: Sequence[int],
    seeds: Sequence[int],
    steps: int | None = None,
    detectors: Sequence[float] | None = None,
) -> np.ndarray:
    """(seeds, detectors, alphas, ks, `EROSION_METRICS`) episode metrics (module docstring) at
    detector strengths `erosion_detectors(spec, detectors)`."""
    check_grid(alphas, ks, seeds)
    steps = spec.episode_steps if steps is None else steps
    deltas = erosion_detectors(spec, detectors)
    engine, grid = engine_of(spec), np.asarray(ks, dtype=np.int64)
    level, markup, _ = spec.action_values(spec.undefended_action)
    col = {name: i for i, name in enumerate(_TOTALS)}
    out = np.empty((len(seeds), len(deltas), len(alphas), grid.size, len(EROSION_METRICS)))
    for i, seed in enumerate(seeds):  # seeds × δ × α × class engine calls
        draws, world = episode_draws(spec, int(seed), int(grid.max()), steps)
        for d, delta in enumerate(deltas):
            action = (level, markup, delta)
            for j, alpha in enumerate(alphas):
                agent = draws.u_agent < alpha
                a = _class_totals(
                    engine, action, subset_draws(draws, agent), 1.0, grid, world.demand
                )
                # Humans do not depend on K: one candidate, the same for every K.
                humans = subset_draws(draws, ~agent)
                h = np.broadcast_to(
                    _class_totals(engine, action, humans, 0.0, grid[:1], world.demand), a.shape
                )
                bought_h, bought_a = h[:, col["human_purchases"]], a[:, col["agent_purchases"]]
                premium_h, premium_a = h[:, col["human_premium"]], a[:, col["agent_premium"]]
                out[i, d, j] = np.stack(
                    [
                        _ratio(premium_h, bought_h),
                        _ratio(premium_a, bought_a),
                        _ratio(premium_h + premium_a, bought_h + bought_a),
                        _ratio(h[:, col["revenue"]], bought_h),
                        _ratio(a[:, col["revenue"]], bought_a),
                        bought_h,
                        bought_a,
                        a[:, col["leak"]],
                    ],
                    axis=-1,
                )
    return out


def coi_erosion(
    spec: MarketSpec,
    alphas: Sequence[float],
    ks: Sequence[int],
    seeds: Sequence[int],
    steps: int | None = None,
    detectors: Sequence[float] | None = None,
    level: float = 0.95,
) -> pl.DataFrame:
    """The erosion table: per (detector δ, α, K, metric) the mean over episode seeds with a
    Student-t CI (`seed_metrics` for the arguments; the asset's K grid is
    `AgentsConfig.erosion_k_grid`). Cells
    where a metric is undefined on every seed (COI_A at α = 0, COI_H at α = 1) are left out.

    Returns:
        `EROSION_SCHEMA` frame sorted by detector, metric, alpha, k.
    """
    deltas = erosion_detectors(spec, detectors)
    values = seed_metrics(spec, alphas, ks, seeds, steps, deltas)
    mean, _, low, high, n = seed_t_interval(values, level)
    d, a, k, m = (idx.ravel() for idx in np.indices(mean.shape))
    table = pl.DataFrame(
        {
            "detector": np.asarray(deltas, dtype=np.float64)[d],
            "alpha": np.asarray(alphas, dtype=np.float64)[a],
            "k": np.asarray(ks)[k],
            "metric": np.asarray(EROSION_METRICS)[m],
            "mean": mean.ravel(),
            "ci_low": low.ravel(),
            "ci_high": high.ravel(),
            "n": n.ravel(),
        },
        schema=EROSION_SCHEMA,
    )
    return table.filter(pl.col("n") > 0).sort("detector", "metric", "alpha", "k")


def closed_form_coi_a(spec: MarketSpec, ks: Sequence[int]) -> pl.DataFrame:
    """The erosion theorem's line for m = 0 at the undefended level: E[min of K quotes] − p_min
    = 2w·base/(K + 1), averaged over products (shoppers want each product alike). Exact for
    COI_A when every agent buys and no quote is clipped; a reference for the plot.

    Returns:
        Columns `k, coi_a`.
    """
    base = spec.anchor * spec.action_values(spec.undefended_action)[0]
    grid = np.asarray(ks, dtype=np.int64)
    floor = price_floor(base, spec.quote_noise, spec.p_low)
    premium = expected_min_quote(base[None, :], spec.quote_noise, grid[:, None]) - floor
    return pl.DataFrame({"k": grid, "coi_a": premium.mean(axis=1)})


def coi_a_share(table: pl.DataFrame, k: int, detector: float = 0.0) -> float:
    """Headline ratio COI_A / COI_H: agents with K sessions at the largest α of the table (agents
    only at α = 1) over humans at its smallest α (humans only at α = 0), at detector δ.

    Under common random numbers these are the same shoppers as agents and as humans.

    Raises:
        ValueError: when the table lacks the COI_A or COI_H cell.
    """
    rows = table.filter(pl.col("detector") == detector)

    def cell(metric: str, pick: str) -> float:
        part = rows.filter(pl.col("metric") == metric)
        if part.is_empty():
            raise ValueError(f"erosion table has no {metric} rows at detector {detector}")
        alpha = part["alpha"].max() if pick == "max" else part["alpha"].min()
        found = part.filter((pl.col("alpha") == alpha) & (pl.col("k") == k))["mean"]
        if found.is_empty():
            raise ValueError(f"erosion table has no {metric} row at alpha {alpha}, k {k}")
        return float(found[0])

    return cell("coi_a", "max") / cell("coi_h", "min")


def coi_by_class(table: pl.DataFrame) -> pl.DataFrame:
    """The contract (docs/architecture.md#column-contracts) of `coi_erosion.parquet`: `alpha, k,
    class (human|agent|all), coi, ci_low, ci_high, n` (+ `detector`) from the erosion table's COI
    rows."""
    rows = table.filter(pl.col("metric").is_in(list(CLASS_METRICS)))
    return rows.select(
        "alpha",
        "k",
        pl.col("metric").replace_strict(CLASS_METRICS).alias("class"),
        pl.col("mean").alias("coi"),
        "ci_low",
        "ci_high",
        "n",
        "detector",
    ).sort("detector", "class", "alpha", "k")


def agent_coi_by_k(table: pl.DataFrame, detector: float = 0.0) -> pl.DataFrame:
    """COI_A against K at the table's largest α (agents only at α = 1) and detector δ: columns
    `k, mean, ci_low, ci_high, n` sorted by k (empty when the table has no COI_A rows)."""
    rows = table.filter((pl.col("detector") == detector) & (pl.col("metric") == "coi_a"))
    rows = rows.filter(pl.col("alpha") == rows["alpha"].max())
    return rows.select("k", "mean", "ci_low", "ci_high", "n").sort("k")
