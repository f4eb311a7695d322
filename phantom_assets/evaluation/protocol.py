"""The one evaluation protocol for every policy, and its stress view
(docs/method.md#evaluation-protocol, pitfall 5 of docs/method.md#pitfalls-this-method-avoids).

Every policy, baseline or defended, is evaluated on the *nominal* market (no adversary, the spec's
λ so that the reported reward is comparable) at every (α, K) of the grid, with the fitted detector
and with the permuted-f ablation, for E episodes. Episode i is reset with seed `seed + i` in every
cell and for every policy (common random numbers): policies and both detectors see identical
shoppers, so differences pair one-to-one on (α, K, seed). The stress view adds agents that adapt
to the detector (evasion share θ of the declared band): the same shoppers, only the agents'
scores differ. An `EpisodeRunner` runs each (α, K, detector, θ, seed) episode of a policy once;
the nominal rows, the stress view and the action traces all read from it, so a stress candidate
that is also a grid cell costs nothing.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from phantom_assets.constants import SELECTION_SPLIT, TEST_SPLIT
from phantom_assets.market import DETECTOR_MODES, OBS_EXTRA, MarketSpec, engine_of, make_env
from phantom_assets.market.metrics import totals_metrics
from phantom_assets.market.response import stress_alphas
from phantom_assets.policies import BatchPolicy

if TYPE_CHECKING:
    import gymnasium as gym

    from phantom_assets.policies import Policy

logger = logging.getLogger(__name__)

EPISODE_METRICS: tuple[str, ...] = (
    "revenue",
    "profit",
    "reward",
    "purchases",
    "human_purchases",
    "agent_purchases",
    "coi_h",
    "coi_a",
    "coi",
    "leak",
    "human_harm",
    "human_lost",
    "human_surplus_change",
    "human_quoted_up",
    "false_positive_rate",
    "mean_level",
    "mean_markup",
    "mean_detector",
    "mean_alpha_hat",
    "mean_shopper_alpha_hat",
)
"""Per-episode metrics of the protocol (the `metric` values of the benchmark curves)."""
ROW_KEYS: tuple[str, ...] = ("alpha", "k", "detector", "episode", "seed", "steps")
"""Design columns of a protocol row, before its `EPISODE_METRICS`."""
FITTED, PERMUTED = DETECTOR_MODES
OBSERVED: tuple[str, ...] = ("alpha_hat", "shopper_alpha_hat")
"""The observation's two agent-share estimates (`market.OBS_EXTRA`) an episode records."""
TRACE_COLUMNS: tuple[str, ...] = ("action", "level", "markup", "detector_strength", *OBSERVED)
"""Per-step columns of the action traces (after `alpha, k, seed, step`)."""
# Per-step `info` entries an episode keeps, then the reward and the observed α̂ (STEP_FIELDS).
_INFO_KEYS: tuple[str, ...] = (
    "revenue",
    "profit",
    "human_purchases",
    "agent_purchases",
    "human_premium",
    "agent_premium",
    "leak",
    "human_lost",
    "human_overpay",
    "human_lost_spend",
    "human_spend_reference",
    "human_surplus",
    "human_surplus_reference",
    "human_quoted_up",
    "human_flagged",
    "agents",
    "level",
    "markup",
    "detector",
    "alpha",
    "k",
)
STEP_FIELDS: tuple[str, ...] = (*_INFO_KEYS, "reward", *OBSERVED, "action")
"""Columns of `EpisodeRunner.run`'s per-step arrays: the step's `info` entries, the reward, the
observed agent-share estimates after the step and the action the policy chose."""
_AT = {name: i for i, name in enumerate(STEP_FIELDS)}


class EpisodeRunner:
    """Episodes of one policy on the nominal market (its agents as logged, or adapting with an
    evasion share θ), each (α, K, detector, θ, seed) run once.

    The episodes of one (α, K, detector, θ) run in lockstep, one env per seed, when the policy is
    stateless and acts on a batch (`base.BatchPolicy`, the SB3 tiers): one batched `act_batch`
    per step instead of one call per episode and step. Every env replays its own seed's stream,
    so an episode is the same whether it ran alone or in a batch. A policy with per-episode
    state is reset before each of its episodes, which run one at a time, so an episode never
    depends on which ran before and a cached one equals a rerun.
    """

    def __init__(
        self,
        policy: Policy,
        spec: MarketSpec,
        max_steps: int | None = None,
        reference_action: int | None = None,
    ) -> None:
        """Roll `policy` out on `spec` (episodes of `max_steps`, default `spec.episode_steps`),
        human harm measured against `reference_action` (the best undefended response; None:
        each action against itself at δ = 0)."""
        self.policy, self.spec = policy, spec
        self._env_options = {"reference_action": reference_action, "max_episode_steps": max_steps}
        self._markets: dict[float, Callable[..., gym.Env]] = {}
        self._envs: dict[tuple[str, float], list[gym.Env]] = {}
        self._observed = [2 * spec.n_products + OBS_EXTRA.index(name) for name in OBSERVED]
        self._episodes: dict[tuple[float, int, str, float, int], np.ndarray] = {}

    def _pool(self, detector: str, theta: float, size: int) -> list[gym.Env]:
        """`size` envs of `detector` on the market whose agents adapt with evasion share θ
        (`spec.evaded`; built once, reused by every later batch)."""
        if theta not in self._markets:
            market = self.spec.evaded(theta)
            engine = engine_of(market)  # its read-only step tables, shared by every env
            self._markets[theta] = functools.partial(
                make_env, market, engine=engine, **self._env_options
            )
        envs = self._envs.setdefault((detector, theta), [])
        envs.extend(self._markets[theta](detector=detector) for _ in range(size - len(envs)))
        return envs[:size]

    def _lockstep(
        self,
        alpha: float,
        k: int,
        detector: str,
        theta: float,
        seeds: Sequence[int],
        choose: Callable[[np.ndarray], Sequence[int]],
    ) -> list[np.ndarray]:
        """The (steps, `STEP_FIELDS`) arrays of the episodes reset with `seeds`, stepped
        together: `choose` maps the (episodes, obs) observations to one action per episode."""
        envs, keys, observed = self._pool(detector, theta, len(seeds)), _INFO_KEYS, self._observed
        obs = np.stack(
            [
                env.reset(seed=seed, options={"alpha": alpha, "k": k})[0]
                for env, seed in zip(envs, seeds, strict=True)
            ]
        )
        rows: list[list[list[float]]] = [[] for _ in seeds]
        done = False
        while not done:  # an episode is sequential: each action sees the last step
            actions = choose(obs)
            for i, (env, action) in enumerate(zip(envs, actions, strict=True)):
                obs[i], reward, terminated, truncated, info = env.step(int(action))
                rows[i].append([*map(info.__getitem__, keys), reward, *obs[i, observed], action])
                done = terminated or truncated  # one time limit: the episodes end together
        episodes = [np.asarray(episode, dtype=np.float64) for episode in rows]
        for steps in episodes:
            if np.any(steps[:, _AT["alpha"]] != alpha) or np.any(steps[:, _AT["k"]] != k):
                raise RuntimeError(
                    f"a nominal episode at alpha={alpha}, k={k} ran at another "
                    f"(alpha, k): an adversary in the evaluation env"
                )
        return episodes

    def _rollouts(
        self, alpha: float, k: int, detector: str, theta: float, seeds: list[int]
    ) -> list[np.ndarray]:
        """The episodes of `seeds`: in one lockstep batch when the policy acts on batches, else
        one at a time after a reset of the policy."""
        policy, cell = self.policy, (alpha, k, detector, theta)
        if isinstance(policy, BatchPolicy):
            return self._lockstep(*cell, seeds, policy.act_batch)
        episodes = []
        for seed in seeds:  # a policy with per-episode state plays one episode at a time
            policy.reset()
            episodes += self._lockstep(*cell, [seed], lambda o: [policy.act(o[0])])
        return episodes

    def run(
        self, alpha: float, k: int, detector: str, seeds: Sequence[int], theta: float = 0.0
    ) -> np.ndarray:
        """(episodes, steps, `STEP_FIELDS`) arrays of the episodes reset with `seeds`, agents
        adapting to the detector with evasion share θ (`spec.evaded`; 0: as logged).

        Raises:
            RuntimeError: if a step ran at another (α, K) than asked (an adversary).
            ValueError: for an unknown detector or a θ the market did not sweep.
        """
        if detector not in DETECTOR_MODES:
            raise ValueError(f"detector must be one of {DETECTOR_MODES}, got {detector!r}")
        cell = (float(alpha), int(k), detector, float(theta))
        missing = [int(s) for s in dict.fromkeys(seeds) if (*cell, int(s)) not in self._episodes]
        if missing:
            episodes = self._rollouts(*cell, missing)
            self._episodes.update({(*cell, s): e for s, e in zip(missing, episodes, strict=True)})
        return np.stack([self._episodes[(*cell, int(seed))] for seed in seeds])


def episode_metrics(steps: np.ndarray, shoppers_per_step: int) -> dict[str, np.ndarray]:
    """`EPISODE_METRICS` of (episodes, steps, `STEP_FIELDS`) arrays, one value per episode:
    `totals_metrics` of the episode sums, the reward, and the step means mean_level,
    mean_markup, mean_detector, mean_alpha_hat and mean_shopper_alpha_hat (the agent-share
    estimates the shop observed)."""
    total = {name: steps[..., i].sum(axis=-1) for name, i in _AT.items()}
    humans = shoppers_per_step * steps.shape[-2] - total["agents"]
    metrics = {
        **totals_metrics(total, humans),
        "reward": total["reward"],
        **{
            f"mean_{name}": steps[..., _AT[name]].mean(axis=-1)
            for name in ("level", "markup", "detector", *OBSERVED)
        },
    }
    return {name: metrics[name] for name in EPISODE_METRICS}


def _rows(
    runner: EpisodeRunner,
    alpha: float,
    k: int,
    detector: str,
    seeds: Sequence[int],
    theta: float = 0.0,
) -> pl.DataFrame:
    steps = runner.run(alpha, k, detector, seeds, theta)
    n = len(seeds)
    keys = {
        "alpha": np.full(n, float(alpha)),
        "k": np.full(n, int(k)),
        "detector": [detector] * n,
        "episode": np.arange(n),
        "seed": np.asarray(seeds),
        "steps": np.full(n, steps.shape[1]),
    }
    metrics = episode_metrics(steps, runner.spec.shoppers_per_step)
    return pl.DataFrame({**keys, **metrics}).with_columns(
        pl.col("k", "episode", "seed", "steps").cast(pl.Int64)
    )


def _check_grid(alphas: Sequence[float], ks: Sequence[int], seeds: Sequence[int]) -> None:
    grid = np.asarray(alphas, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or np.any((grid < 0) | (grid > 1)):
        raise ValueError(f"alphas must be a non-empty 1-D grid in [0, 1], got {alphas!r}")
    if not ks or min(ks) < 1:
        raise ValueError(f"ks (clean sessions per agent) must be a non-empty grid >= 1: {ks!r}")
    if not seeds:
        raise ValueError("need at least one episode seed")


def nominal_rows(
    runner: EpisodeRunner,
    alphas: Sequence[float],
    ks: Sequence[int],
    seeds: Sequence[int],
    detectors: Sequence[str] = DETECTOR_MODES,
) -> pl.DataFrame:
    """One row per (α, K, detector, episode): `ROW_KEYS` and the `EPISODE_METRICS`; episode i is
    reset with `seeds[i]` in every cell.

    Raises:
        RuntimeError: if any step ran at another (α, K) than its cell's (pitfall 5, docs/method.md).
    """
    _check_grid(alphas, ks, seeds)
    return pl.concat([_rows(runner, a, k, d, seeds) for a in alphas for k in ks for d in detectors])


def evaluate_policy(
    policy: Policy,
    spec: MarketSpec,
    alphas: Sequence[float],
    episodes: int,
    seed: int,
    *,
    ks: Sequence[int] | None = None,
    detectors: Sequence[str] = DETECTOR_MODES,
    max_steps: int | None = None,
) -> pl.DataFrame:
    """`nominal_rows` of `policy` for episode seeds `seed … seed + episodes − 1` at every α of
    `alphas` and K of `ks` (default: the spec's nominal K), both detectors by default."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    runner = EpisodeRunner(policy, spec, max_steps)
    seeds = range(seed, seed + episodes)
    rows = nominal_rows(runner, alphas, ks or (spec.agents.nominal_k,), seeds, detectors)
    logger.info("evaluated %s: %d rows", getattr(policy, "tier", "policy"), rows.height)
    return rows


def stress_rows(
    runner: EpisodeRunner,
    alpha0: float,
    radius: float,
    k: int,
    selection_seeds: Sequence[int],
    test_seeds: Sequence[int],
    thetas: Sequence[float] = (0.0,),
) -> pl.DataFrame:
    """The protocol over the stress band at K = `k` (the same band for every policy): every α
    of `stress_alphas(α0, r)` × every evasion share θ of `thetas` (agents adapting to the
    detector, `spec.evaded`; docs/detector.md#agents-that-adapt), both detectors, on the
    selection seeds and on the held-out test seeds.

    Every band cell (α, θ) is evaluated on both splits, so a comparison of two policies pairs
    them at the same (α, θ, K, seed) and takes the worst case of the *paired difference* over the
    band, its cell chosen on the selection seeds alone (`audit.pairs`;
    docs/method.md#promotion-gate) -- never each policy at its own worst cell. Rows: `ROW_KEYS`,
    the metrics, then `split` ("selection" | "test"), `theta`, `alpha0` and `radius`.

    Raises:
        ValueError: if the selection and test seeds overlap, `thetas` is empty or the market
            did not sweep one of them.
    """
    if set(selection_seeds) & set(test_seeds):
        raise ValueError(
            f"selection seeds {list(selection_seeds)} and test seeds {list(test_seeds)} overlap"
        )
    if not thetas:
        raise ValueError("thetas (the evasion band) must hold at least one share, e.g. (0.0,)")
    band = stress_alphas(alpha0, radius).tolist()
    for seeds in (selection_seeds, test_seeds):
        _check_grid(band, [k], seeds)
    return pl.concat(
        [
            _rows(runner, alpha, k, detector, seeds, theta).with_columns(
                split=pl.lit(split), theta=pl.lit(float(theta))
            )
            for split, seeds in ((SELECTION_SPLIT, selection_seeds), (TEST_SPLIT, test_seeds))
            for theta in thetas
            for alpha in band
            for detector in DETECTOR_MODES
        ]
    ).with_columns(alpha0=pl.lit(float(alpha0)), radius=pl.lit(float(radius)))


def action_traces(
    runner: EpisodeRunner, alphas: Sequence[float], ks: Sequence[int], seeds: Sequence[int]
) -> pl.DataFrame:
    """Per-step action (index, level, markup, detector strength) and the observed agent-share
    estimates of the fitted-detector episodes reset with `seeds` at every (α, K): `alpha, k,
    seed, step` + `TRACE_COLUMNS` (what the adaptivity of a policy is measured on)."""
    fields = ("action", "level", "markup", "detector", *OBSERVED)
    frames = []
    for alpha in alphas:  # a handful of grid cells
        for k in ks:
            steps = runner.run(alpha, k, FITTED, seeds)  # (episodes, steps, fields)
            episodes, n = steps.shape[:2]
            frames.append(
                pl.DataFrame(
                    {
                        "alpha": np.full(episodes * n, float(alpha)),
                        "k": np.full(episodes * n, int(k), dtype=np.int64),
                        "seed": np.repeat(np.asarray(seeds, dtype=np.int64), n),
                        "step": np.tile(np.arange(n, dtype=np.int64), episodes),
                        **{
                            column: steps[..., _AT[field]].ravel()
                            for column, field in zip(TRACE_COLUMNS, fields, strict=True)
                        },
                    }
                ).with_columns(pl.col("action").cast(pl.Int64))
            )
    return pl.concat(frames)
