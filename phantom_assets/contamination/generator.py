"""Contamination generator G(α): real human sessions plus synthetic agent sessions
(docs/method.md#contamination-generator).

For α in [0, 1) G keeps the n_H real human sessions and adds n_A = round(α·n_H/(1 − α)) synthetic
agent sessions sampled from the agent kernel (α = 1: only synthetic agents, n_A = n_H). Synthetic
sessions get fresh deterministic ids, products drawn from the store's product mix, timestamps from
resampled empirical agent inter-event gaps and the detector score of the caller's (out-of-fold)
`score_fn`; real sessions keep the f they came with.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from phantom_assets.constants import DEMAND_WEIGHTS, END_TOKEN, KERNEL_STATES, START_TOKEN
from phantom_assets.contamination.chains import sample_chains

ScoreFn = Callable[[pl.DataFrame], np.ndarray]
OUTPUT_COLUMNS: tuple[str, ...] = (
    "session_id",
    "source",
    "actor",
    "alpha",
    "n_events",
    "f",
    "trajectory",
    "product_ids",
    "ts",
)
TS_DTYPE = pl.Datetime("ms", "UTC")
OUTPUT_SCHEMA: dict[str, pl.DataType] = {
    "session_id": pl.String(),
    "source": pl.String(),
    "actor": pl.String(),
    "alpha": pl.Float64(),
    "n_events": pl.Int64(),
    "f": pl.Float64(),
    "trajectory": pl.List(pl.String()),
    "product_ids": pl.List(pl.String()),
    "ts": pl.List(TS_DTYPE),
}


@dataclass(frozen=True)
class ContaminationParams:
    """Inputs of G(α) besides the sessions and the kernel.

    Attributes:
        product_mix: product id -> share (non-negative, renormalised) of the store's product mix.
        agent_gaps_s: empirical agent inter-event gaps in seconds (resampled with replacement).
        origin: earliest synthetic session start (UTC); starts are uniform over `window_s` after it.
        window_s: width of the window synthetic sessions start in.
        max_len: maximum events per synthetic session.
    """

    product_mix: Mapping[str, float]
    agent_gaps_s: np.ndarray
    origin: dt.datetime = field(default=dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    window_s: float = 86_400.0
    max_len: int = 64

    def __post_init__(self) -> None:
        """Validate the mix and the gaps."""
        shares = np.asarray(list(self.product_mix.values()), dtype=np.float64)
        if shares.size == 0 or np.any(shares < 0) or shares.sum() <= 0:
            raise ValueError(f"product_mix needs non-negative shares with a positive sum: {shares}")
        gaps = np.asarray(self.agent_gaps_s, dtype=np.float64)
        if gaps.size == 0 or np.any(~np.isfinite(gaps)) or np.any(gaps < 0):
            raise ValueError("agent_gaps_s must be a non-empty array of finite gaps >= 0")
        if self.window_s < 0 or self.max_len < 1:
            raise ValueError(f"bad window_s={self.window_s!r} or max_len={self.max_len!r}")


def n_synthetic(n_human: int, alpha: float) -> int:
    """n_A = round(α·n_H/(1 − α)) (half up); n_H at α = 1."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    if n_human < 0:
        raise ValueError(f"n_human must be >= 0, got {n_human}")
    if alpha == 1.0:
        return n_human
    return math.floor(alpha * n_human / (1.0 - alpha) + 0.5)


def _list_series(name: str, values: pa.Array, lengths: np.ndarray) -> pl.Series:
    """A list column from flat values and per-row lengths (vectorized, empty lists allowed)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pl.Series(name, pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values))


def synthesize_agents(
    agent_kernel: np.ndarray,
    n: int,
    alpha: float,
    params: ContaminationParams,
    rng: np.random.Generator,
) -> pl.DataFrame:
    """`n` synthetic agent sessions (without f) as a frame of `OUTPUT_COLUMNS` minus `f`."""
    codes, lengths = sample_chains(agent_kernel, n, rng, params.max_len)
    valid = codes >= 0
    events = np.asarray(KERNEL_STATES, dtype=object)[codes[valid]]  # row-major = session order
    total = int(lengths.sum())
    ids = np.asarray(list(params.product_mix.keys()), dtype=object)
    shares = np.asarray(list(params.product_mix.values()), dtype=np.float64)
    products = ids[rng.choice(ids.size, size=total, p=shares / shares.sum())]
    gaps = rng.choice(np.asarray(params.agent_gaps_s, dtype=np.float64), size=total)
    session_of = np.repeat(np.arange(n), lengths)
    nonempty = lengths > 0
    first = (np.cumsum(lengths) - lengths)[nonempty]
    gaps[first] = 0.0  # the first event happens at the session start
    elapsed = np.cumsum(gaps)
    elapsed -= np.repeat(elapsed[first], lengths[nonempty])  # time since the session start
    starts_ms = rng.uniform(0.0, params.window_s * 1e3, size=n)
    origin_ms = params.origin.timestamp() * 1e3
    ts_ms = np.round(origin_ms + starts_ms[session_of] + elapsed * 1e3).astype(np.int64)
    return pl.DataFrame(
        [
            pl.Series("session_id", [f"syn-{alpha:g}-{i}" for i in range(n)], pl.String),
            pl.Series("source", ["synthetic"] * n, pl.String),
            pl.Series("actor", ["agent"] * n, pl.String),
            pl.Series("alpha", np.full(n, alpha), pl.Float64),
            pl.Series("n_events", lengths, pl.Int64),
            _list_series("trajectory", pa.array(events.tolist(), pa.string()), lengths),
            _list_series("product_ids", pa.array(products.tolist(), pa.string()), lengths),
            _list_series("ts", pa.array(ts_ms, pa.timestamp("ms", "UTC")), lengths),
        ]
    )


def _real_sessions(human_sessions: pl.DataFrame, alpha: float) -> pl.DataFrame:
    required = {"session_id", "trajectory", "f"}
    missing = required - set(human_sessions.columns)
    if missing:
        raise ValueError(f"human_sessions lacks columns {sorted(missing)}")
    optional = {
        name: pl.col(name) if name in human_sessions.columns else pl.lit(None)
        for name in ("product_ids", "ts")
    }
    return human_sessions.select(
        pl.col("session_id").cast(pl.String),
        pl.lit("real").alias("source"),
        pl.lit("human").alias("actor"),
        pl.lit(alpha, pl.Float64).alias("alpha"),
        pl.col("trajectory").list.len().cast(pl.Int64).alias("n_events"),
        pl.col("f").cast(pl.Float64),
        pl.col("trajectory").cast(pl.List(pl.String)),
        optional["product_ids"].cast(pl.List(pl.String)).alias("product_ids"),
        optional["ts"].cast(pl.List(TS_DTYPE)).alias("ts"),
    )


def contaminate(
    human_sessions: pl.DataFrame,
    agent_kernel: np.ndarray,
    alpha: float,
    params: ContaminationParams,
    rng: np.random.Generator,
    score_fn: ScoreFn,
) -> pl.DataFrame:
    """G(α): the real human sessions plus n_A synthetic agent sessions, one row per session.

    Args:
        human_sessions: real human sessions with `session_id`, `trajectory` (list of event names,
            no `<start>`/`<end>`), `f` (out-of-fold score) and optionally `product_ids`, `ts`.
        agent_kernel: (S, S) agent kernel over `KERNEL_STATES`, rows = sources.
        alpha: contamination level in [0, 1].
        params: product mix, agent gaps and timing.
        rng: the only source of randomness.
        score_fn: frame of synthetic sessions (`session_id`, `trajectory`, `n_events`, ...) ->
            f array (the caller's out-of-fold detector).

    Returns:
        Frame with `OUTPUT_COLUMNS` (schema `OUTPUT_SCHEMA`): real rows first, then synthetic.
    """
    n_human = human_sessions.height
    n_agent = n_synthetic(n_human, alpha)
    real = _real_sessions(human_sessions, alpha).head(0 if alpha == 1.0 else n_human)
    synthetic = synthesize_agents(agent_kernel, n_agent, alpha, params, rng)
    scores = np.asarray(score_fn(synthetic) if n_agent else np.zeros(0), dtype=np.float64)
    if (
        scores.shape != (n_agent,)
        or np.any(~np.isfinite(scores))
        or np.any(np.abs(scores - 0.5) > 0.5)
    ):
        raise ValueError(
            f"score_fn must return {n_agent} finite scores in [0, 1], got {scores.shape}"
        )
    synthetic = synthetic.with_columns(pl.Series("f", scores, pl.Float64))
    return pl.concat([real.select(OUTPUT_COLUMNS), synthetic.select(OUTPUT_COLUMNS)]).cast(
        OUTPUT_SCHEMA  # type: ignore[arg-type]
    )


def demand_proxy(frame: pl.DataFrame) -> dict[str, float]:
    """q̂_i = Σ_sessions Σ_events w(event)·1[product = i], weights `constants.DEMAND_WEIGHTS`.

    `<start>`/`<end>` tokens weigh 0; events without a product count for none. Unknown event names
    raise (weights are keyed by the real event names: pitfall 7 of
    docs/method.md#pitfalls-this-method-avoids).
    """
    weights = {**DEMAND_WEIGHTS, START_TOKEN: 0.0, END_TOKEN: 0.0}
    events = (
        frame.lazy()
        .select("trajectory", "product_ids")
        .drop_nulls("product_ids")  # sessions without product ids demand no product
        .explode("trajectory", "product_ids")
        .drop_nulls("trajectory")
        .collect()
    )
    unknown = sorted(set(events["trajectory"].unique().to_list()) - set(weights))
    if unknown:
        raise ValueError(f"no demand weight for events {unknown}")
    demand = (
        events.lazy()
        .drop_nulls("product_ids")
        .with_columns(
            pl.col("trajectory").replace_strict(weights, return_dtype=pl.Float64).alias("w")
        )
        .group_by("product_ids")
        .agg(pl.col("w").sum())
        .sort("product_ids")
        .collect()
    )
    return dict(zip(demand["product_ids"].to_list(), demand["w"].to_list(), strict=True))


def mean_f_is_monotone(mean_f_by_alpha: Mapping[float, float], tol: float) -> bool:
    """True when mean f never drops by more than `tol` as α increases."""
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol!r}")
    values = np.asarray([mean_f_by_alpha[a] for a in sorted(mean_f_by_alpha)], dtype=np.float64)
    return bool(np.all(np.diff(values) >= -tol))
