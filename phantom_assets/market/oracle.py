"""The oracle: the best fixed action per (α, K), by exhaustive search over the action grid under
common random numbers (DESIGN §5 "Oracle"), the clairvoyant bound every policy's regret is
measured against.

Episode draws: episode seed s is the stream `make_env(spec, α, K).reset(seed=s)` plays — a
generator `default_rng(s)` (what Gymnasium's `reset` seeds), the env's ablation-stream seed and its
warm-up step skipped, then one `draw_step` per step at K_max = K. So the oracle's profit of action a
on seed s is exactly the episode `profit` the evaluation records for the constant policy a on
seed s, and regret can be paired by seed. The episode is treated as starting at the action: a
fixed action pays no volatility (the env's first step charges η_ux·|Δlevel| in the reward, never
in `profit`). A fixed action's episode profit is additive over steps and shoppers, so the steps
are concatenated into one batch of steps·N shoppers and every action is evaluated on it once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy import stats

from phantom_assets.market.engine import Column, Engine, StepDraws, draw_step, simulate_step
from phantom_assets.market.env import engine_of
from phantom_assets.market.spec import MarketSpec

ORACLE_SCHEMA: dict[str, pl.DataType] = {
    "alpha": pl.Float64(), "k": pl.Int64(), "action": pl.Int64(), "level": pl.Float64(),
    "markup": pl.Float64(), "delta": pl.Float64(), "profit": pl.Float64(),
    "profit_se": pl.Float64(), "n_seeds": pl.Int64(), "undefended_profit": pl.Float64(),
}  # fmt: skip
"""Contract of `market_oracle/oracle.parquet` (DESIGN §12): one row per (alpha, k). `profit_se`
is descriptive: the best action is chosen on the same seeds, so its mean is optimistic and no
interval is claimed for it."""

ENV_PREFIX_DRAWS = 1
"""Steps the env draws in `reset` before the first action (the warm-up step)."""


def episode_draws(spec: MarketSpec, seed: int, k_max: int, steps: int) -> StepDraws:
    """The common random numbers of `steps` steps of episode `seed` at K_max = `k_max` (module
    docstring), concatenated: step t's shoppers are rows t·N … (t + 1)·N − 1."""
    if steps < 1 or k_max < 1:
        raise ValueError(f"need steps >= 1 and k_max >= 1, got {steps}, {k_max}")
    rng = np.random.default_rng(seed)
    rng.integers(2**63)  # the env's ablation-stream seed, drawn first in `reset`
    sizes = tuple(bank.size for bank in spec.banks)
    n, cdf = spec.shoppers_per_step, spec.product_cdf
    draws = [draw_step(rng, n, cdf, k_max, sizes) for _ in range(ENV_PREFIX_DRAWS + steps)]
    return StepDraws(*(np.concatenate(field) for field in zip(*draws[1:], strict=True)))


def subset_draws(draws: StepDraws, rows: np.ndarray) -> StepDraws:
    """The draws of the shoppers selected by `rows` (a boolean mask or indices)."""
    return StepDraws(*(field[rows] for field in draws))


def seed_t_interval(
    values: np.ndarray, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Student-t interval of the mean over seeds (axis 0), NaN values (undefined per-seed
    ratios) left out: (mean, se, ci_low, ci_high, n). Bounds are NaN where n < 2."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    values = np.asarray(values, dtype=np.float64)
    n = np.sum(~np.isnan(values), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(values, axis=0) / n
        sd = np.sqrt(np.nansum((values - mean) ** 2, axis=0) / (n - 1))
        se = sd / np.sqrt(n)
    quantile = np.where(n >= 2, stats.t.ppf(0.5 + level / 2.0, np.maximum(n - 1, 1)), np.nan)
    return mean, se, mean - quantile * se, mean + quantile * se, n


def _profits(
    spec: MarketSpec, engine: Engine, alphas: np.ndarray, k: int, seeds: Sequence[int], steps: int
) -> np.ndarray:
    """(seeds, actions, alphas) episode profit of every fixed action, all on each seed's draws."""
    actions = [spec.action_values(a) for a in range(spec.n_actions)]
    ks = np.full(alphas.size, k)
    out = np.empty((len(seeds), len(actions), alphas.size))
    for i, seed in enumerate(seeds):  # seeds × actions engine calls, each over every shopper
        draws = episode_draws(spec, int(seed), k, steps)
        for a, action in enumerate(actions):
            out[i, a] = simulate_step(engine, action, draws, alphas, ks)[:, Column.PROFIT]
    return out


def check_grid(alphas: Sequence[float], ks: Sequence[int], seeds: Sequence[int]) -> None:
    """Raise ValueError unless α ∈ [0, 1], K are integers >= 1 and every grid is non-empty."""
    if not alphas or not ks or not seeds:
        raise ValueError(f"need non-empty alphas, ks, seeds; got {alphas}, {ks}, {seeds}")
    if any(not 0.0 <= a <= 1.0 for a in alphas):
        raise ValueError(f"alphas must lie in [0, 1], got {list(alphas)}")
    if any(int(k) != k or k < 1 for k in ks):
        raise ValueError(f"ks (clean sessions per agent) must be integers >= 1, got {list(ks)}")


def fixed_action_profits(
    spec: MarketSpec, alpha: float, k: int, seeds: Sequence[int], steps: int | None = None
) -> np.ndarray:
    """(n_seeds, n_actions) episode profit of every fixed action at (α, K), every action on the
    same draws of each seed (module docstring); `steps` defaults to `spec.episode_steps`."""
    check_grid([alpha], [k], seeds)
    steps = spec.episode_steps if steps is None else steps
    return _profits(spec, engine_of(spec), np.array([float(alpha)]), int(k), seeds, steps)[..., 0]


def market_oracle(
    spec: MarketSpec,
    alphas: Sequence[float],
    ks: Sequence[int],
    seeds: Sequence[int],
    steps: int | None = None,
) -> pl.DataFrame:
    """Best fixed action per (α, K): the argmax over the action grid of the mean episode profit
    over `seeds` (ties: the lowest action index), with its level, markup m and detector δ, its
    mean `profit` and standard error over seeds (the seed is the unit), and the undefended
    engine's (`spec.undefended_action`) mean profit on the same draws.

    The oracle is the best fixed action in hindsight on these seeds, the bound a policy evaluated
    on the same seeds is compared with (so no interval is claimed: see `ORACLE_SCHEMA`).

    Returns:
        `ORACLE_SCHEMA` frame, one row per (alpha, k), sorted by k then alpha.
    """
    check_grid(alphas, ks, seeds)
    steps = spec.episode_steps if steps is None else steps
    engine, grid = engine_of(spec), np.asarray(alphas, dtype=np.float64)
    frames = []
    for k in sorted({int(k) for k in ks}):  # the env's draws depend on K_max = K
        profits = _profits(spec, engine, grid, k, seeds, steps)  # (seeds, actions, alphas)
        mean, se, _, _, n = seed_t_interval(profits)
        best = np.argmax(mean, axis=0)
        cells = np.arange(grid.size)
        values = np.array([spec.action_values(a) for a in best]).reshape(-1, 3)
        frames.append(pl.DataFrame({
            "alpha": grid, "k": np.full(grid.size, k), "action": best, "level": values[:, 0],
            "markup": values[:, 1], "delta": values[:, 2], "profit": mean[best, cells],
            "profit_se": se[best, cells], "n_seeds": n[best, cells],
            "undefended_profit": mean[spec.undefended_action],
        }, schema=ORACLE_SCHEMA))  # fmt: skip
    return pl.concat(frames).sort("k", "alpha")


def oracle_markdown(oracle: pl.DataFrame) -> str:
    """Markdown table of a `market_oracle` frame: the best action per (α, K), its mean episode
    profit with CI, and the undefended engine's profit and regret (oracle − undefended)."""
    head = ("| α | K | best (level, m, δ) | profit (± SE) | undefended | regret |\n"
            "|---:|---:|---|---|---:|---:|")  # fmt: skip
    rows = [
        f"| {r['alpha']:g} | {r['k']} | ({r['level']:g}, {r['markup']:g}, {r['delta']:g}) "
        f"| {r['profit']:,.0f} ± {r['profit_se']:,.0f} "
        f"| {r['undefended_profit']:,.0f} | {r['profit'] - r['undefended_profit']:,.0f} "
        f"({(r['profit'] - r['undefended_profit']) / max(abs(r['profit']), 1e-9):.1%}) |"
        for r in oracle.iter_rows(named=True)
    ]  # a handful of (α, K) cells
    return "\n".join([head, *rows])
