"""Fixed actions under common random numbers (docs/method.md#oracle): every action's episode
totals on the same draws -- what the oracle (`optimize.market_oracle`, the clairvoyant bound every
policy's regret is measured against), the best responses and the ledger are computed from.

Episode draws: episode seed s is the stream `make_env(spec, α, K).reset(seed=s)` plays — a
generator `default_rng(s)` (what Gymnasium's `reset` seeds), the env's ablation-stream seed, the
replicate of the store's sample the episode plays (`world.draw_world`) and its warm-up step
skipped, then one `draw_step` per step at K_max = K. So the oracle's profit of action a
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

from phantom_assets.market.columns import DETECTOR_MODES, Column
from phantom_assets.market.draws import (
    StepDraws,
    agent_session_share,
    decoy_scores,
    draw_step,
)
from phantom_assets.market.engine import Engine, simulate_step
from phantom_assets.market.env import engine_of
from phantom_assets.market.spec import MarketSpec
from phantom_assets.market.world import EpisodeWorld, draw_world

ORACLE_SCHEMA: dict[str, pl.DataType] = {
    "alpha": pl.Float64(),
    "k": pl.Int64(),
    "action": pl.Int64(),
    "level": pl.Float64(),
    "markup": pl.Float64(),
    "delta": pl.Float64(),
    "profit": pl.Float64(),
    "profit_se": pl.Float64(),
    "n_seeds": pl.Int64(),
    "undefended_profit": pl.Float64(),
    "on_edge": pl.Boolean(),
}
"""Contract of `market_oracle/oracle.parquet` (docs/architecture.md#column-contracts): one row per
(alpha, k): the best fixed action on the continuous action space (`optimize.market_oracle`; its
nearest grid action in `action`), `on_edge` when it sits on the action box's boundary.
`profit_se` is descriptive: the best action is chosen on the same seeds, so its mean is optimistic
and no interval is claimed for it."""

PERMUTED = DETECTOR_MODES[1]
PERFECT = "perfect"
"""A detector mode of fixed-action studies only: agents score 1, humans 0."""
KERNEL_ONLY = "kernel_only"
"""A detector mode of fixed-action studies only: the kernel-only detector's flags (its own τ for
the same false-positive rate) where the market quotes with detector v2 (the ledger's comparison)."""
STUDY_DETECTORS = (*DETECTOR_MODES, PERFECT, KERNEL_ONLY)
ENV_PREFIX_DRAWS = 1
"""Steps the env draws in `reset` before the first action (the warm-up step)."""


def _episode_streams(
    spec: MarketSpec, seed: int, k_max: int, steps: int
) -> tuple[list[StepDraws], int, EpisodeWorld]:
    """Episode `seed`'s per-step draws (the warm-up step first), the seed of its ablation stream
    and the replicate it plays, as `make_env(spec, α, K).reset(seed=seed)` draws them (module
    docstring)."""
    if steps < 1 or k_max < 1:
        raise ValueError(f"need steps >= 1 and k_max >= 1, got {steps}, {k_max}")
    rng = np.random.default_rng(seed)
    ablation_seed = int(rng.integers(2**63))  # drawn first in `reset`, then the replicate
    world = draw_world(spec, rng)
    n, cdf = spec.shoppers_per_step, spec.product_cdf
    draws = [draw_step(rng, n, cdf, k_max, world) for _ in range(ENV_PREFIX_DRAWS + steps)]
    return draws, ablation_seed, world


def _concatenated(draws: Sequence[StepDraws]) -> StepDraws:
    return StepDraws(*(np.concatenate(field) for field in zip(*draws, strict=True)))


def episode_draws(
    spec: MarketSpec, seed: int, k_max: int, steps: int
) -> tuple[StepDraws, EpisodeWorld]:
    """The common random numbers of `steps` steps of episode `seed` at K_max = `k_max` (module
    docstring), concatenated (step t's shoppers are rows t·N … (t + 1)·N − 1), and the
    replicate of the store's sample the episode plays."""
    draws, _, world = _episode_streams(spec, seed, k_max, steps)
    return _concatenated(draws[ENV_PREFIX_DRAWS:]), world


def _episode_decoys(
    engine: Engine, draws: Sequence[StepDraws], ablation_seed: int, alpha: float, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The permuted-f ablation's scores of an episode's steps after the warm-up, as the env draws
    them at (α, K) (one `decoy_scores` per step, the warm-up's included)."""
    share, ablation = agent_session_share(alpha, k), np.random.default_rng(ablation_seed)
    human, agent = engine.banks
    steps = [
        decoy_scores(
            ablation,
            engine.strata,
            share,
            (human.engagement[d.human_chain], agent.engagement[d.agent_chain]),
        )
        for d in draws
    ]
    kept = steps[ENV_PREFIX_DRAWS:]
    return np.concatenate([h for h, _ in kept]), np.concatenate([a for _, a in kept])


def fixed_action_totals(
    spec: MarketSpec,
    actions: Sequence[int],
    alphas: Sequence[float],
    k: int,
    seeds: Sequence[int],
    detector: str = "fitted",
    reference_action: int | None = None,
    steps: int | None = None,
) -> np.ndarray:
    """(actions, seeds, alphas, len(Column)) episode totals of fixed grid actions: exactly the
    sums over steps of the env's totals for a policy that always plays the action, episode
    `seed` at (α, K) with `detector` ("fitted" | "permuted", the ablation's own stream) and human
    harm against `reference_action` (None: each action against its own level and markup) -- so
    the evaluation protocol's episode metrics follow from them without stepping an env.
    """
    reference = None if reference_action is None else spec.action_values(reference_action)[:2]
    values = [spec.action_values(a) for a in actions]
    return action_totals(spec, values, alphas, k, seeds, detector, reference, steps)


def action_totals(
    spec: MarketSpec,
    actions: Sequence[tuple[float, float, float]],
    alphas: Sequence[float],
    k: int,
    seeds: Sequence[int],
    detector: str = "fitted",
    reference: tuple[float, float] | None = None,
    steps: int | None = None,
) -> np.ndarray:
    """`fixed_action_totals` of any (level, m, δ) actions, on or off the spec's grid; human harm
    against `reference` (level, m) at δ = 0. `detector` may also be "perfect": every agent
    session scores 1 and every human 0 (what a perfect detector would win back; the ledger), or
    "kernel_only": the sessions the kernel-only detector flags score 1, the others 0."""
    check_grid(list(alphas), [k], list(seeds))
    if detector not in STUDY_DETECTORS:
        raise ValueError(f"detector must be one of {STUDY_DETECTORS}, got {detector!r}")
    steps = spec.episode_steps if steps is None else steps
    engine, grid = engine_of(spec), np.asarray(alphas, dtype=np.float64)
    kernel_flags = spec.kernel_flags
    values = [tuple(float(x) for x in action) for action in actions]
    out = np.empty((len(values), len(seeds), grid.size, len(Column)))
    # The fitted detector: every α in one engine call; the ablation: one per α (its class mix).
    cells = [slice(None)] if detector != PERMUTED else [slice(j, j + 1) for j in range(grid.size)]
    for i, seed in enumerate(seeds):  # seeds × cells × actions engine calls over every shopper
        draws, ablation_seed, world = _episode_streams(spec, int(seed), int(k), steps)
        shoppers = _concatenated(draws[ENV_PREFIX_DRAWS:])
        fixed = {
            PERFECT: (np.zeros(shoppers.z.size), np.ones(shoppers.agent_chain.shape)),
            KERNEL_ONLY: (
                kernel_flags[0][shoppers.human_chain].astype(np.float64),
                kernel_flags[1][shoppers.agent_chain].astype(np.float64),
            ),
        }
        for cell in cells:
            alpha = grid[cell]
            decoys = fixed.get(detector)
            if detector == PERMUTED:
                decoys = _episode_decoys(engine, draws, ablation_seed, float(alpha[0]), int(k))
            for a, action in enumerate(values):
                harm_reference = action[:2] if reference is None else reference
                totals = simulate_step(
                    engine,
                    action,
                    shoppers,
                    alpha,
                    np.full(alpha.size, k),
                    decoys,
                    harm_reference,
                    world.demand,
                )
                out[a, i, cell] = totals[:, : len(Column)]
    return out


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
    spec: MarketSpec, alphas: np.ndarray, k: int, seeds: Sequence[int], steps: int
) -> np.ndarray:
    """(seeds, actions, alphas) episode profit of every fixed action, all on each seed's draws."""
    totals = fixed_action_totals(spec, range(spec.n_actions), alphas, k, seeds, steps=steps)
    return totals[..., Column.PROFIT].transpose(1, 0, 2)


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
    return _profits(spec, np.array([float(alpha)]), int(k), seeds, steps)[..., 0]


def oracle_markdown(oracle: pl.DataFrame) -> str:
    """Markdown table of a `market_oracle` frame: the best action per (α, K), its mean episode
    profit with CI, and the undefended engine's profit and regret (oracle − undefended)."""
    head = (
        "| α | K | best (level, m, δ) | profit (± SE) | undefended | regret |\n"
        "|---:|---:|---|---|---:|---:|"
    )
    rows = [
        f"| {r['alpha']:g} | {r['k']} | ({r['level']:g}, {r['markup']:g}, {r['delta']:g}) "
        f"| {r['profit']:,.0f} ± {r['profit_se']:,.0f} "
        f"| {r['undefended_profit']:,.0f} | {r['profit'] - r['undefended_profit']:,.0f} "
        f"({(r['profit'] - r['undefended_profit']) / max(abs(r['profit']), 1e-9):.1%}) |"
        for r in oracle.iter_rows(named=True)
    ]  # a handful of (α, K) cells
    return "\n".join([head, *rows])
