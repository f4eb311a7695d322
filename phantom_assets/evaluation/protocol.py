"""The one evaluation protocol for every policy, and its stress view (DESIGN §5, pitfall §10.5).

Every policy, baseline or robust, is evaluated on the *nominal* market (no adversary, the spec's λ
so that the reported reward and leakage are comparable) at every α of the grid, for E episodes;
episode i is reset with seed `seed + i` at every α and for every policy (common random numbers), so
policies are compared on identical sessions and differences can be paired by seed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import polars as pl

from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.market import MarketSpec, make_env
from phantom_assets.policies import Policy

logger = logging.getLogger(__name__)

EPISODE_METRICS: tuple[str, ...] = (
    "revenue",
    "profit",
    "reward",
    "mean_price",
    "coi_level",
    "margin",
    "leakage",
    "volatility",
    "supra_share",
)
"""Per-episode metrics of the protocol (the `metric` values of the benchmark curves)."""
TRACE_COLUMNS: tuple[str, ...] = (
    "price_first",
    "price_last",
    "price_min",
    "price_max",
    "price_std",
)
_STEP_KEYS: tuple[str, ...] = ("revenue", "profit", "purchases", "leakage", "volatility",
                               "supra_share", "mean_price", "alpha")  # fmt: skip


def _check_grid(alphas: Sequence[float], episodes: int) -> np.ndarray:
    grid = np.asarray(alphas, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or np.any((grid < 0) | (grid > 1)):
        raise ValueError(f"alphas must be a non-empty 1-D grid in [0, 1], got {alphas!r}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    return grid


def nominal_env(spec: MarketSpec, alpha: float, max_steps: int | None = None) -> gym.Env:
    """The evaluation market at `alpha`: no adversary, the spec's λ, the spec's episode length."""
    return make_env(spec, alpha, robust=False, lam=spec.lam, max_episode_steps=max_steps)


def run_episode(policy: Policy, env: gym.Env, seed: int) -> dict[str, np.ndarray]:
    """Roll `policy` out for one episode from `env.reset(seed=seed)`: per-step arrays.

    Returns:
        `{"reward", "revenue", "profit", "purchases", "leakage", "volatility", "supra_share",
        "mean_price", "alpha", "terminated"}`, each of length `steps` (terminated: 1 element).
    """
    obs, _ = env.reset(seed=seed)
    policy.reset()
    rewards: list[float] = []
    rows: list[tuple[float, ...]] = []
    terminated = truncated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs))
        rewards.append(float(reward))
        rows.append(tuple(float(info[k]) for k in _STEP_KEYS))
    table = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(_STEP_KEYS))
    trace: dict[str, np.ndarray] = {k: table[:, i] for i, k in enumerate(_STEP_KEYS)}
    trace["reward"] = np.asarray(rewards)
    trace["terminated"] = np.asarray([terminated])
    return trace


def episode_metrics(trace: dict[str, np.ndarray]) -> dict[str, Any]:
    """Aggregate one episode's step arrays into the protocol metrics and a price-trace summary.

    Sums: revenue, profit, reward. Purchase-weighted: coi_level = mean transacted price − p_low
    (= profit / purchases), margin = profit / revenue. Step means: mean_price, leakage,
    volatility, supra_share.
    """
    revenue, profit = float(trace["revenue"].sum()), float(trace["profit"].sum())
    bought = float(trace["purchases"].sum())
    prices = trace["mean_price"]
    return {
        "steps": int(prices.size),
        "terminated": bool(trace["terminated"][0]),
        "revenue": revenue,
        "profit": profit,
        "reward": float(trace["reward"].sum()),
        "mean_price": float(prices.mean()),
        "coi_level": profit / bought if bought > 0 else 0.0,
        "margin": profit / revenue if revenue > 0 else 0.0,
        "leakage": float(trace["leakage"].mean()),
        "volatility": float(trace["volatility"].mean()),
        "supra_share": float(trace["supra_share"].mean()),
        "purchases": bought,
        "alpha_executed": float(trace["alpha"].mean()),
        "price_first": float(prices[0]),
        "price_last": float(prices[-1]),
        "price_min": float(prices.min()),
        "price_max": float(prices.max()),
        "price_std": float(prices.std()),
    }


def evaluate_policy(
    policy: Policy,
    spec: MarketSpec,
    alphas: Sequence[float],
    episodes: int,
    seed: int,
    *,
    max_steps: int | None = None,
) -> pl.DataFrame:
    """Evaluate `policy` by the protocol: one row per (α, episode).

    Args:
        policy: any `Policy`.
        spec: the market (its λ is used for the reported reward).
        alphas: the evaluation grid.
        episodes: E, episodes per α.
        seed: episode i uses seed `seed + i` (identical for every policy and every α).
        max_steps: episode length (default `spec.episode_steps`).

    Returns:
        Columns `alpha, episode, seed`, the `EPISODE_METRICS`, `steps, terminated, purchases,
        alpha_executed` and the `TRACE_COLUMNS` summary of the per-step mean price.

    Raises:
        RuntimeError: if any step was executed at an α other than the grid α (an adversary in
            the evaluation env would confound the comparison, pitfall §10.5).
    """
    grid = _check_grid(alphas, episodes)
    rows: list[dict[str, Any]] = []
    for alpha in grid:  # loop over the α grid and episodes: each episode is sequential
        env = nominal_env(spec, float(alpha), max_steps)
        for episode in range(episodes):
            trace = run_episode(policy, env, seed + episode)
            if np.any(trace["alpha"] != alpha):
                raise RuntimeError(f"evaluation at alpha={alpha} executed alpha {trace['alpha']}")
            metrics = episode_metrics(trace)
            rows.append({"alpha": float(alpha), "episode": episode, "seed": seed + episode,
                         **metrics})  # fmt: skip
    logger.info("evaluated %s: %d alphas x %d episodes", policy.tier, grid.size, episodes)
    return pl.DataFrame(rows).with_columns(pl.col("episode", "seed").cast(pl.Int64))


def price_traces(
    policy: Policy,
    spec: MarketSpec,
    alphas: Sequence[float],
    seed: int,
    *,
    max_steps: int | None = None,
) -> pl.DataFrame:
    """Per-step mean price of episode 0 (seed `seed`) at each α: `alpha, step, mean_price`."""
    grid = _check_grid(alphas, 1)
    frames = []
    for alpha in grid:
        trace = run_episode(policy, nominal_env(spec, float(alpha), max_steps), seed)
        steps = trace["mean_price"].size
        frames.append(pl.DataFrame({"alpha": np.full(steps, float(alpha)),
                                    "step": np.arange(steps, dtype=np.int64),
                                    "mean_price": trace["mean_price"]}))  # fmt: skip
    return pl.concat(frames)


def stress_alphas(alpha0: float, radius: float, candidates: int = 5) -> np.ndarray:
    """`candidates` evenly spaced α over [α0 − r, α0 + r] ∩ [0, 1] (duplicates removed)."""
    if not 0 <= alpha0 <= 1 or radius < 0 or candidates < 1:
        raise ValueError(f"need alpha0 in [0, 1], radius >= 0, candidates >= 1: "
                         f"{alpha0!r}, {radius!r}, {candidates!r}")  # fmt: skip
    return np.unique(np.linspace(max(0.0, alpha0 - radius), min(1.0, alpha0 + radius), candidates))


def worst_case(evaluations: pl.DataFrame, metric: str = "reward") -> pl.DataFrame:
    """Rows of the α whose mean `metric` over episodes is lowest (ties: the smallest α)."""
    if metric not in evaluations.columns:
        raise ValueError(f"metric {metric!r} is not a column of the evaluations")
    means = evaluations.group_by("alpha").agg(pl.col(metric).mean()).sort(metric, "alpha")
    worst = means["alpha"][0]
    return evaluations.filter(pl.col("alpha") == worst).with_columns(
        pl.lit(worst, dtype=pl.Float64).alias("worst_alpha")
    )


def stress_evaluate(
    policy: Policy,
    spec: MarketSpec,
    alpha0: float,
    radius: float,
    episodes: int,
    seed: int,
    *,
    test_episodes: int,
    test_seed: int,
    candidates: int = 5,
    metric: str = "reward",
    max_steps: int | None = None,
) -> pl.DataFrame:
    """Worst case of the protocol over α ∈ [α0 − r, α0 + r] (same r for every policy).

    Every candidate α is evaluated nominally on the selection seeds `seed …`; the worst α (lowest
    mean `metric`) is chosen on them alone and the held-out seeds `test_seed …` are evaluated at
    that α only, so the gate's test never sees a seed that chose anything (DESIGN §8). Rows carry
    `split` ("selection" | "test"), `alpha0, radius, worst_alpha`, paired by seed across policies.

    Raises:
        ValueError: if the selection and test seed ranges overlap.
    """
    if seed < test_seed + test_episodes and test_seed < seed + episodes:
        raise ValueError(f"selection seeds from {seed} and test seeds from {test_seed} overlap")
    grid = stress_alphas(alpha0, radius, candidates)
    frame = evaluate_policy(policy, spec, grid.tolist(), episodes, seed, max_steps=max_steps)
    selection = worst_case(frame, metric)
    worst = float(selection["worst_alpha"][0])
    test = evaluate_policy(policy, spec, [worst], test_episodes, test_seed, max_steps=max_steps)
    return pl.concat(
        [
            selection.with_columns(pl.lit(SELECTION_SPLIT).alias("split")),
            test.with_columns(
                pl.lit(worst).alias("worst_alpha"), pl.lit(TEST_SPLIT).alias("split")
            ),
        ]
    ).with_columns(pl.lit(float(alpha0)).alias("alpha0"), pl.lit(float(radius)).alias("radius"))
