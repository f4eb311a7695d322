"""Regret against the oracle and how much a policy adapts to the agent share it observes, with
what adapting earns (docs/method.md#benchmark-curves, docs/method.md#policy-tiers).

The market's steps are independent given (α, K) and a step's reward depends only on its action
and draws, so no policy beats the best fixed action of each (α, K) -- the oracle -- in
expectation: adapting to α̂ can earn at most the oracle's profit over one fixed action. Over the
tuned-static tier that bound is tuned-static's own regret, so its regret row is the market's
α-aware switching bound.

All statistics are over the fitted-detector nominal episodes, paired by (α, K, episode seed):
the episode seed is the unit, training seeds are averaged first (`benchmark.episode_seed_means`)
and intervals are Student-t over seeds (`benchmark.CI_METHOD`). Fixed actions are evaluated with
`market.oracle.fixed_action_totals` on exactly the policies' episodes.

- *regret*: the oracle's action's episode profit − the policy's, per (α, K) (the oracle's action
  refined on the continuous action space: `market.optimize.market_oracle`);
- *variation*: per (α, K) the policy's most played (modal) action and its share of the steps;
  over the grid (rows with null α and K) its overall modal action and share;
- *adaptation gain*: the policy's profit − its own best fixed action's, the action it plays with
  the best mean profit over the whole grid (chosen on the same seeds: an optimistic comparator),
  per (α, K) and over the grid (per seed, the mean over cells).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from phantom_assets.evaluation.benchmark import episode_seed_means, t_intervals
from phantom_assets.evaluation.protocol import FITTED
from phantom_assets.market import Column, MarketSpec
from phantom_assets.market.oracle import action_totals, fixed_action_totals

_STATS: dict[str, pl.DataType] = {
    "mean": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "n": pl.Int64(),
}
_LABELS: dict[str, pl.DataType] = {"policy": pl.String(), "tier": pl.String(), "mode": pl.String()}
_CELL: dict[str, pl.DataType] = {"alpha": pl.Float64(), "k": pl.Int64()}
FIXED_SCHEMA: dict[str, pl.DataType] = {
    "action": pl.Int64(),
    **_CELL,
    "seed": pl.Int64(),
    "profit": pl.Float64(),
}
"""Episode profit of a fixed action on one episode of the protocol."""
REGRET_SCHEMA: dict[str, pl.DataType] = {
    **_LABELS,
    **_CELL,
    "profit": pl.Float64(),
    "oracle_profit": pl.Float64(),
    "regret": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "relative_regret": pl.Float64(),
    "n": pl.Int64(),
}
"""Contract of `benchmark_curves/regret.parquet` (fitted detector, nominal profit): `regret` is
the mean paired difference, `relative_regret` that over the oracle's mean profit (NaN where it is
not positive)."""
ADAPTIVITY_SCHEMA: dict[str, pl.DataType] = {
    **_LABELS,
    **_CELL,
    "modal_action": pl.Int64(),
    "modal_label": pl.String(),
    "modal_share": pl.Float64(),
    "actions_played": pl.Int64(),
    "fixed_action": pl.Int64(),
    "fixed_label": pl.String(),
    **_STATS,
}
"""Contract of `benchmark_curves/adaptivity.parquet`: per policy and (α, K), and over the grid
(null α and K), its modal action and share of steps, the number of distinct actions it plays,
its own best fixed action (actions also as "(level, m, δ)" labels) and the adaptation gain
(mean, CI, n seeds)."""


def fixed_action_profits(
    spec: MarketSpec, actions: Sequence[int], nominal: pl.DataFrame
) -> pl.DataFrame:
    """`FIXED_SCHEMA` rows of every action of `actions` on every (α, K, seed) of the protocol
    rows `nominal`, every action on the same draws."""
    alphas = sorted(set(nominal["alpha"].to_list()))
    seeds = sorted(set(nominal["seed"].to_list()))
    frames = []
    for k in sorted(set(nominal["k"].to_list())):  # the draws depend on K
        profit = fixed_action_totals(spec, actions, alphas, k, seeds)[..., Column.PROFIT]
        action, seed, alpha = np.meshgrid(actions, seeds, alphas, indexing="ij")
        frames.append(
            pl.DataFrame(
                {
                    "action": action.ravel(),
                    "alpha": alpha.ravel(),
                    "k": k,
                    "seed": seed.ravel(),
                    "profit": profit.ravel(),
                }
            )
        )
    return pl.concat(frames).cast(FIXED_SCHEMA)  # type: ignore[arg-type]


def _policy_profits(nominal: pl.DataFrame) -> pl.DataFrame:
    """Fitted-detector episode profit per (policy, α, K, seed), training seeds averaged."""
    fitted = nominal.filter(pl.col("detector") == FITTED).drop("detector")
    means = episode_seed_means(fitted, ["profit"])
    return means.select(*_LABELS, *_CELL, "seed", "profit").cast({**_LABELS, **_CELL})


def oracle_profits(spec: MarketSpec, oracle: pl.DataFrame, nominal: pl.DataFrame) -> pl.DataFrame:
    """`alpha, k, seed, profit`: the episode profit of each (α, K)'s oracle action (`oracle`'s
    `level, markup, delta`, refined on the continuous action space) on every seed of the
    protocol rows `nominal`, on the same draws."""
    if missing := {"alpha", "k", "level", "markup", "delta"} - set(oracle.columns):
        raise ValueError(f"the oracle table lacks columns {sorted(missing)}")
    seeds = sorted(set(nominal["seed"].to_list()))
    frames = []
    for row in oracle.iter_rows(named=True):  # one row per (α, K)
        action = (row["level"], row["markup"], row["delta"])
        totals = action_totals(spec, [action], [row["alpha"]], row["k"], seeds)
        frames.append(
            pl.DataFrame(
                {
                    "alpha": row["alpha"],
                    "k": row["k"],
                    "seed": seeds,
                    "profit": totals[0, :, 0, Column.PROFIT],
                }
            )
        )
    return pl.concat(frames).cast({**_CELL, "seed": pl.Int64(), "profit": pl.Float64()})


def regret_table(nominal: pl.DataFrame, oracle: pl.DataFrame, level: float = 0.95) -> pl.DataFrame:
    """Regret of every policy at every (α, K): the oracle's best fixed action − the policy,
    paired per episode seed (`oracle`: `oracle_profits`), with a t CI; `REGRET_SCHEMA`, sorted
    by policy, K, α."""
    best = oracle.select(*_CELL, "seed", "profit").cast(_CELL)
    paired = _policy_profits(nominal).join(
        best, on=[*_CELL, "seed"], suffix="_oracle", validate="m:1"
    )
    if paired.is_empty():
        raise ValueError("no profits of the oracle's actions on the policies' seeds")
    long = paired.with_columns(value=pl.col("profit_oracle") - pl.col("profit"))
    out = t_intervals(long, [*_LABELS, *_CELL], level).join(
        long.group_by(*_LABELS, *_CELL).agg(pl.col("profit", "profit_oracle").mean()),
        on=[*_LABELS, *_CELL],
    )
    relative = pl.when(pl.col("profit_oracle") > 0).then(pl.col("mean") / pl.col("profit_oracle"))
    return (
        out.select(
            *_LABELS,
            *_CELL,
            "profit",
            oracle_profit="profit_oracle",
            regret="mean",
            ci_low="ci_low",
            ci_high="ci_high",
            relative_regret=relative.otherwise(float("nan")),
            n="n",
        )
        .cast(REGRET_SCHEMA)
        .sort("policy", "k", "alpha")
    )  # type: ignore[arg-type]


def _modal(steps: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per group: the most played action (ties: the lowest index), its share of the steps and
    the number of distinct actions played."""
    counts = steps.group_by(*by, "action").agg(n=pl.len())
    ranked = counts.sort([*by, "n", "action"], descending=[*([False] * len(by)), True, False])
    return ranked.group_by(by, maintain_order=True).agg(
        modal_action=pl.col("action").first(),
        modal_share=pl.col("n").first() / pl.col("n").sum(),
        actions_played=pl.len().cast(pl.Int64),
    )


def adaptivity_table(
    traces: pl.DataFrame, nominal: pl.DataFrame, fixed: pl.DataFrame, level: float = 0.95
) -> pl.DataFrame:
    """`ADAPTIVITY_SCHEMA` rows of every policy of `traces` (per-step actions of the fitted
    nominal episodes) and `nominal` (their episode profits); `fixed` must hold every action the
    policies play (module docstring)."""
    steps = traces.select(*_LABELS, *_CELL, "action").cast({**_LABELS, **_CELL})
    labels = traces.group_by("action").agg(pl.col("level", "markup", "detector_strength").first())
    labels = labels.select(
        "action",
        label=pl.format(
            "({}, {}, {})",
            *(pl.col(c).round_sig_figs(3) for c in ("level", "markup", "detector_strength")),
        ),
    )
    played = steps.select("policy", "action").unique()
    scores = played.join(
        fixed.group_by("action").agg(score=pl.col("profit").mean()), on="action", how="left"
    )
    if scores["score"].null_count():
        raise ValueError("`fixed` lacks actions the policies play")
    own = (
        scores.sort("policy", "score", "action", descending=[False, True, False])
        .group_by("policy", maintain_order=True)
        .agg(fixed_action=pl.col("action").first())
    )
    gains = (
        _policy_profits(nominal)
        .join(own, on="policy")
        .join(
            fixed.rename({"action": "fixed_action", "profit": "fixed_profit"}),
            on=["fixed_action", *_CELL, "seed"],
        )
        .with_columns(value=pl.col("profit") - pl.col("fixed_profit"))
    )
    pooled = gains.group_by(*_LABELS, "fixed_action", "seed").agg(pl.col("value").mean())
    per_cell = t_intervals(gains, [*_LABELS, "fixed_action", *_CELL], level).join(
        _modal(steps, ["policy", *_CELL]), on=["policy", *_CELL]
    )
    over_grid = (
        t_intervals(pooled, [*_LABELS, "fixed_action"], level)
        .join(_modal(steps, ["policy"]), on="policy")
        .with_columns(pl.lit(None, pl.Float64).alias("alpha"), pl.lit(None, pl.Int64).alias("k"))
    )
    columns = list(ADAPTIVITY_SCHEMA)
    out = pl.concat([per_cell, over_grid], how="diagonal_relaxed")
    for action in ("modal", "fixed"):
        out = out.join(
            labels.rename({"action": f"{action}_action", "label": f"{action}_label"}),
            on=f"{action}_action",
            how="left",
        )
    out = out.select(columns)
    return out.cast(ADAPTIVITY_SCHEMA).sort("policy", "k", "alpha", nulls_last=True)  # type: ignore[arg-type]
