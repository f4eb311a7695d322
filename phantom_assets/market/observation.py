"""Is the agent share a policy observes informative? Its error against the true α, and whether one
step of it tells a low agent share (α ≤ 0.2) from a high one (α ≥ 0.5) when K is unknown.

The session-share α̂ estimates αK/(αK + 1 − α): with K unknown, (α, K) = (0.2, 8) and (0.5, 2)
look alike (both ≈ 0.67), and no longer window helps because the gap is bias, not noise. The
shopper α̂ (`OBS_EXTRA`) undoes the K inflation with the step's session count. Both are measured
here on the market's own episodes, at the undefended engine's action (neither estimate depends
on prices: sessions and their scores are drawn before any quote).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import polars as pl

from phantom_assets.market.draws import agent_session_share
from phantom_assets.market.env import OBS_EXTRA, PricingMarketEnv
from phantom_assets.market.spec import MarketSpec

__all__ = [
    "ESTIMATES",
    "HIGH_ALPHAS",
    "LOW_ALPHAS",
    "OBSERVATION_SCHEMA",
    "SEPARATION_SCHEMA",
    "SEPARATION_TOLERANCE",
    "ObservationReport",
    "observation_accuracy",
    "observation_report",
    "observation_separation",
    "observation_steps",
]

ESTIMATES: tuple[str, ...] = ("alpha_hat", "shopper_alpha_hat")
"""The observation's agent-share estimates."""
LOW_ALPHAS: tuple[float, ...] = (0.0, 0.1, 0.2)
HIGH_ALPHAS: tuple[float, ...] = (0.5, 0.75, 1.0)
"""The α a one-step estimate must tell apart: a low agent share (≤ 0.2) from a high one (≥ 0.5)."""
SEPARATION_TOLERANCE = 0.05
"""An estimate separates low from high α when its best one-step threshold misreads at most this
share of steps (balanced over the two groups)."""
OBSERVATION_SCHEMA: dict[str, pl.DataType] = {
    "estimate": pl.String(),
    "alpha": pl.Float64(),
    "k": pl.Int64(),
    "session_share": pl.Float64(),
    "mean": pl.Float64(),
    "sd": pl.Float64(),
    "mae_alpha": pl.Float64(),
    "n_steps": pl.Int64(),
}
"""Per estimate and (α, K): the agent session share, the per-step mean and sd of the estimate, its
mean absolute error against α and the steps measured."""
SEPARATION_SCHEMA: dict[str, pl.DataType] = {
    "estimate": pl.String(),
    "k": pl.Int64(),
    "error": pl.Float64(),
    "threshold": pl.Float64(),
}
"""Per estimate: the balanced error of the best one-step threshold between `LOW_ALPHAS` and
`HIGH_ALPHAS`, pooled over K (null `k`: K unknown) and at each K (K known)."""


def observation_steps(
    spec: MarketSpec, ks: Sequence[int], seeds: Sequence[int], steps: int | None = None
) -> pl.DataFrame:
    """Each estimate as the policy observes it (in [0, 1]) after every step of the episodes reset
    with `seeds` at every α of `LOW_ALPHAS + HIGH_ALPHAS` and K of `ks`: `estimate, alpha, k,
    seed, step, value`."""
    env = PricingMarketEnv(spec)
    n, action = spec.n_products, spec.undefended_action
    columns = [2 * n + OBS_EXTRA.index(name) for name in ESTIMATES]
    horizon = spec.episode_steps if steps is None else steps
    rows = []
    for alpha in (*LOW_ALPHAS, *HIGH_ALPHAS):  # a few cells × seeds × steps, one env step each
        for k in ks:
            for seed in seeds:
                env.reset(seed=seed, options={"alpha": alpha, "k": k})
                for step in range(horizon):
                    values = env.step(action)[0][columns]
                    rows.extend(
                        (name, alpha, int(k), int(seed), step, float(value))
                        for name, value in zip(ESTIMATES, values, strict=True)
                    )
    return pl.DataFrame(
        rows,
        orient="row",
        schema={
            "estimate": pl.String(),
            "alpha": pl.Float64(),
            "k": pl.Int64(),
            "seed": pl.Int64(),
            "step": pl.Int64(),
            "value": pl.Float64(),
        },
    )


def observation_accuracy(steps: pl.DataFrame) -> pl.DataFrame:
    """`OBSERVATION_SCHEMA` rows of `observation_steps`, sorted by estimate, K, α."""
    out = steps.group_by("estimate", "alpha", "k").agg(
        mean=pl.col("value").mean(),
        sd=pl.col("value").std(),
        mae_alpha=(pl.col("value") - pl.col("alpha")).abs().mean(),
        n_steps=pl.len(),
    )
    share = [agent_session_share(a, k) for a, k in out.select("alpha", "k").rows()]
    out = out.with_columns(session_share=pl.Series(share, dtype=pl.Float64))
    return (
        out.select(list(OBSERVATION_SCHEMA))
        .cast(OBSERVATION_SCHEMA)
        .sort(  # type: ignore[arg-type]
            "estimate", "k", "alpha"
        )
    )


def _best_threshold(low: np.ndarray, high: np.ndarray) -> tuple[float, float]:
    """(balanced error, threshold) of the best rule "high iff value > t" over every observed t."""
    candidates = np.unique(np.concatenate([low, high]))
    errors = [0.5 * (np.mean(low > t) + np.mean(high <= t)) for t in candidates]
    best = int(np.argmin(errors))
    return float(errors[best]), float(candidates[best])


def observation_separation(steps: pl.DataFrame) -> pl.DataFrame:
    """`SEPARATION_SCHEMA` rows of `observation_steps`: K unknown first (null `k`), then each K."""
    rows = []
    for (estimate,), frame in steps.sort("estimate").group_by("estimate", maintain_order=True):
        scopes = [
            (None, frame),
            *((k, part) for (k,), part in frame.sort("k").group_by("k", maintain_order=True)),
        ]
        for k, part in scopes:  # a couple of K
            low = part.filter(pl.col("alpha").is_in(LOW_ALPHAS))["value"].to_numpy()
            high = part.filter(pl.col("alpha").is_in(HIGH_ALPHAS))["value"].to_numpy()
            rows.append((estimate, k, *_best_threshold(low, high)))
    return pl.DataFrame(rows, schema=SEPARATION_SCHEMA, orient="row")


class ObservationReport(NamedTuple):
    """`observation_accuracy` and `observation_separation` of one market's episodes."""

    accuracy: pl.DataFrame
    separation: pl.DataFrame

    def error(self, estimate: str) -> float:
        """The one-step separation error of `estimate` with K unknown."""
        rows = self.separation.filter((pl.col("estimate") == estimate) & pl.col("k").is_null())
        return float(rows["error"][0])

    def markdown(self) -> str:
        """The separation per estimate (K unknown and per K), then each estimate's mean ± sd and
        error against α per (α, K)."""
        lines = ["| estimate | K | one-step error (α ≤ 0.2 vs ≥ 0.5) |", "|---|---|---:|"]
        lines += [
            f"| {e} | {'unknown' if k is None else k} | {error:.1%} |"
            for e, k, error, _ in self.separation.rows()
        ]
        lines += [
            "",
            "| estimate | α | K | session share | mean ± sd | mean abs. error vs α |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['estimate']} | {r['alpha']:g} | {r['k']} | {r['session_share']:.2f} | "
            f"{r['mean']:.3f} ± {r['sd']:.3f} | {r['mae_alpha']:.3f} |"
            for r in self.accuracy.iter_rows(named=True)
        ]
        return "\n".join(lines)


def observation_report(
    spec: MarketSpec, ks: Sequence[int], seeds: Sequence[int]
) -> ObservationReport:
    """Accuracy and separation of the observed agent shares on `spec`'s episodes (`seeds`, K of
    `ks`; `observation_steps`)."""
    steps = observation_steps(spec, ks, seeds)
    return ObservationReport(observation_accuracy(steps), observation_separation(steps))
