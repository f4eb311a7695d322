"""`PricingMarketEnv`: the market as a Gymnasium env (docs/method.md#the-market)."""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import TimeLimit

from phantom_assets.market.ambiguity import alpha_half_width, robust_candidates
from phantom_assets.market.columns import DETECTOR_MODES, STEP_COLUMNS, Column
from phantom_assets.market.draws import agent_session_share, decoy_scores, draw_step
from phantom_assets.market.engine import Engine, simulate_step
from phantom_assets.market.law import EpisodeLaw
from phantom_assets.market.spec import MarketSpec
from phantom_assets.market.world import draw_world, point_world

OBS_EXTRA: tuple[str, ...] = (
    "score_mean",
    "alpha_hat",
    "shopper_alpha_hat",
    "low_engagement_share",
    "markup",
    "detector",
)
"""Observation entries after the per-product demand shares and base prices."""


def engine_of(spec: MarketSpec) -> Engine:
    """The spec's quoting rule and constants."""
    return Engine(
        anchor=np.asarray(spec.anchor),
        p_low=spec.p_low,
        p_high=spec.p_high,
        noise=spec.quote_noise,
        s0=spec.engagement_scale,
        s_ref=spec.reference_engagement,
        tau=spec.detector_threshold,
        valuation_scale=spec.valuation_scale,
        demand=point_world(spec).demand,
        banks=spec.banks,
    )


class PricingMarketEnv(gym.Env):
    """Session-based pricing of `n` products against shoppers, a share α of whom send agents.

    ## Action Space
    `Discrete(levels × markups × strengths)` (default 5 × 3 × 3): `spec.action_values(a)` gives
    (base level, engagement markup m, detector strength δ). Every session that reaches the quote
    is quoted `clip(anchor·level·(1 + m·g(s_eff))·(1 + w·u), p_low, p_high)`,
    `g(s) = 1 − exp(−s/s0)`, s the session's engagement before the quote; a session whose prefix
    agent score f (`market.bank`) exceeds the detector's threshold τ is flagged and quoted at
    `s_eff = max(s, δ·s_ref)`, any other at `s_eff = s`.

    ## Observation Space
    `Box(0, 1, (2n + 6,), float32)`: `[0:n]` demand-proxy shares per product of the last step,
    `[n:2n]` current base prices as (p − p_low)/(p_high − p_low), then mean f of the last step's
    sessions, the debiased α̂ = (f̄ − E[f|H])/(E[f|A] − E[f|H]) (it estimates the agent *session*
    share αK/(αK + 1 − α), which K inflates), the shopper-share estimate 1 − n_s·(1 − α̂)/N
    (n_s·(1 − α̂) estimates the step's human sessions, one per human shopper, of the N shoppers
    per step: the store's arrival rate, which it knows from its traffic; unlike α̂ it does not
    confound α with K), the share of last step's purchases made in low-engagement sessions
    (s < s0), and the current m and δ as fractions of their grid maxima. Never the true α or K.

    ## Rewards
    `profit − η_ux·|Δ level| − λ·leak`, profit = Σ (p_paid − p_low) over purchases. λ = 0 by
    default: the leak is measured (`info["leak"]`), not charged. In robust mode the step is
    executed at the worst (minimum-reward) (α, K) candidate, all candidates on the same draws;
    `info["candidate_rewards"]` lists them.

    ## Starting State
    Base level, markup at the grid middle, δ = 0 (the undefended engine); one warm-up step there
    (no reward) fills the observation. Each episode plays one replicate of the store's sample
    (its resampled session banks and its refitted demand: `world.draw_world`), drawn at reset.

    ## Episode End
    Never terminates; truncation comes from `max_episode_steps` (see `make_env`).

    ## Arguments
    `spec`; `alpha` (share of shoppers sending an agent); `k` (clean sessions per agent, default
    `spec.agents.nominal_k`); `robust`; `lam` (default `spec.lam`); `detector` ("fitted" or the
    "permuted" ablation, nominal only); `reference_action` (the response human harm is measured
    against, e.g. the best undefended action; default: the action itself at δ = 0);
    `law` (an `EpisodeLaw`: each reset without α and K in its options draws them from it, as
    training does); `engine` (the spec's `engine_of`, shared by envs of one spec so that its
    read-only step tables are built once; default: the env's own).
    `reset(options={"alpha": a, "k": k})` sets α and K for one episode.
    """

    metadata = {"render_modes": []}  # noqa: RUF012 -- Gymnasium's class attribute

    def __init__(
        self,
        spec: MarketSpec,
        alpha: float = 0.0,
        k: int | None = None,
        *,
        robust: bool = False,
        lam: float | None = None,
        detector: str = "fitted",
        reference_action: int | None = None,
        law: EpisodeLaw | None = None,
        engine: Engine | None = None,
    ) -> None:
        """Build the env; see the class docstring for the arguments."""
        super().__init__()
        if detector not in DETECTOR_MODES:
            raise ValueError(f"detector must be one of {DETECTOR_MODES}, got {detector!r}")
        if robust and detector != "fitted":
            raise ValueError("the permuted-f ablation is a nominal evaluation (robust=False)")
        self.market = spec
        self.default_alpha = _check_alpha(alpha)
        self.default_k = _check_k(spec.agents.nominal_k if k is None else k)
        self.robust, self.detector, self.law = bool(robust), detector, law
        self.lam = float(spec.lam if lam is None else lam)
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam!r}")
        n = spec.n_products
        self._n_actions = spec.n_actions
        self.action_space = spaces.Discrete(self._n_actions)
        self.observation_space = spaces.Box(
            0.0, 1.0, shape=(2 * n + len(OBS_EXTRA),), dtype=np.float32
        )
        self.engine = engine_of(spec) if engine is None else engine
        # Only the robust mode reads the ambiguity set (its radius is an `[agents]` setting).
        self.half_width = alpha_half_width(spec) if self.robust else 0.0
        human, agent = spec.banks
        self._score_means = (float(human.score.mean()), float(agent.score.mean()))
        self._world = point_world(spec)
        self._price_span = spec.p_high - spec.p_low
        self._product_cdf = spec.product_cdf
        self._maxima = (max(max(spec.markups), 1e-12), max(max(spec.detector_strengths), 1e-12))
        self.alpha, self.k = self.default_alpha, self.default_k
        self._candidates = Candidates(np.array([self.alpha]), np.array([self.k]))
        self._decoy_rng: np.random.Generator | None = None
        self._undefended_action = self._action = spec.undefended_action
        self._action_values = [spec.action_values(a) for a in range(spec.n_actions)]
        # Human harm is measured against this response's level and markup (δ = 0); None: each
        # action against itself at δ = 0 (the harm of the detector alone).
        self._reference = (
            None if reference_action is None else self._action_values[reference_action][:2]
        )
        # Each action's base prices as observed: (anchor·level − p_low)/(p_high − p_low) in [0, 1].
        self._level_prices = [
            np.clip((spec.anchor * level - spec.p_low) / self._price_span, 0, 1)
            for level, _, _ in self._action_values
        ]
        self._obs = np.zeros(self.observation_space.shape, dtype=np.float32)

    def _simulate(self, action: int, candidates: Candidates) -> np.ndarray:
        """(C, columns) totals of one step under `action` for every candidate (`simulate_step`)."""
        level, m, delta = self._action_values[action]
        alphas, ks = candidates
        k_max = int(ks.max())
        draws = draw_step(
            self.np_random, self.market.shoppers_per_step, self._product_cdf, k_max, self._world
        )
        decoys = None
        if self.detector == "permuted":
            share = agent_session_share(self.alpha, self.k)
            human, agent = self.engine.banks
            engagement = (human.engagement[draws.human_chain], agent.engagement[draws.agent_chain])
            decoys = decoy_scores(self._decoy_rng, self.engine.strata, share, engagement)
        return simulate_step(
            self.engine,
            (level, m, delta),
            draws,
            alphas,
            ks,
            decoys,
            self._reference,
            self._world.demand,
        )

    def _observe(self, totals: np.ndarray, action: int) -> tuple[np.ndarray, dict[str, Any]]:
        """The observation after a step with these totals, and the totals by column name."""
        n = self.market.n_products
        demand = totals[len(STEP_COLUMNS) :]
        total = float(demand.sum())
        step = dict(zip(STEP_COLUMNS, totals.tolist(), strict=False))
        score_mean = step["score_sum"] / max(step["sessions"], 1.0)
        f_h, f_a = self._score_means
        alpha_hat = (score_mean - f_h) / (f_a - f_h) if f_a - f_h > 1e-9 else 0.0
        # Unclipped α̂: clipping it first would bias the human-session count it implies.
        shopper_hat = 1.0 - step["sessions"] * (1.0 - alpha_hat) / self.market.shoppers_per_step
        bought = step["human_purchases"] + step["agent_purchases"]
        low = step["low_engagement_purchases"] / bought if bought > 0 else 0.0
        _, m, delta = self._action_values[action]
        extra = (
            score_mean,
            alpha_hat,
            shopper_hat,
            low,
            m / self._maxima[0],
            delta / self._maxima[1],
        )
        obs = np.empty(2 * n + len(OBS_EXTRA), dtype=np.float32)
        obs[:n] = demand / total if total > 0 else 0.0
        obs[n : 2 * n] = self._level_prices[action]
        obs[2 * n :] = [min(max(x, 0.0), 1.0) for x in extra]
        return obs, step

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode at the undefended engine's action and run one warm-up step; α and K
        come from `options`, else from the law (drawn from `np_random`), else the env's own."""
        super().reset(seed=seed)
        options = options or {}
        alpha, k = options.get("alpha"), options.get("k")
        drawn = (self.default_alpha, self.default_k)
        if self.law is not None and (alpha is None or k is None):
            drawn = self.law.draw(self.np_random)
        self.alpha = drawn[0] if alpha is None else _check_alpha(alpha)
        self.k = drawn[1] if k is None else _check_k(k)
        nominal = Candidates(np.array([self.alpha]), np.array([self.k]))
        self._candidates = nominal
        if self.robust:  # the ambiguity set around this episode's α (a few numpy operations)
            self._candidates = Candidates(
                *robust_candidates(self.market, self.alpha, self.half_width)
            )
        # The ablation's own stream, drawn in every mode so both modes share the main stream;
        # then the replicate of the store's sample this episode plays (`world.draw_world`).
        self._decoy_rng = np.random.default_rng(int(self.np_random.integers(2**63)))
        self._world = draw_world(self.market, self.np_random)
        self._action = self._undefended_action
        warm = self._simulate(self._action, nominal)[0]  # the warm-up: nominal (α, K)
        self._obs, _ = self._observe(warm, self._action)
        info = {
            "alpha": self.alpha,
            "k": self.k,
            "candidate_alphas": self._candidates.alphas.copy(),
            "candidate_ks": self._candidates.ks.copy(),
        }
        return self._obs.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Quote every session under `action`, let shoppers and agents buy: (obs, reward, term,
        trunc, info) with every `STEP_COLUMNS` total of the executed candidate in `info`."""
        if self._decoy_rng is None:
            raise RuntimeError("call reset() before step()")
        if not 0 <= int(action) < self._n_actions or int(action) != action:
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        action = int(action)
        spec = self.market
        level, m, delta = self._action_values[action]
        volatility = abs(level - self._action_values[self._action][0])
        candidates = self._candidates
        totals = self._simulate(action, candidates)
        rewards = (
            totals[:, Column.PROFIT] - spec.eta_ux * volatility - self.lam * totals[:, Column.LEAK]
        )
        chosen = int(np.argmin(rewards)) if self.robust else 0
        self._action = action
        self._obs, info = self._observe(totals[chosen], action)
        info.update(
            volatility=volatility,
            level=level,
            markup=m,
            detector=delta,
            alpha=float(candidates.alphas[chosen]),
            k=int(candidates.ks[chosen]),
            nominal_alpha=self.alpha,
            nominal_k=self.k,
            candidate_alphas=candidates.alphas.copy(),
            candidate_ks=candidates.ks.copy(),
            candidate_rewards=rewards,
        )
        return self._obs.copy(), float(rewards[chosen]), False, False, info


class Candidates(NamedTuple):
    """The (α, K) pairs a step is simulated for (aligned arrays)."""

    alphas: np.ndarray
    ks: np.ndarray


def _check_alpha(alpha: float) -> float:
    value = float(alpha)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    return value


def _check_k(k: int) -> int:
    if int(k) != k or k < 1:
        raise ValueError(f"k (clean sessions per agent) must be an integer >= 1, got {k!r}")
    return int(k)


def make_env(
    spec: MarketSpec,
    alpha: float = 0.0,
    k: int | None = None,
    *,
    robust: bool = False,
    lam: float | None = None,
    detector: str = "fitted",
    reference_action: int | None = None,
    max_episode_steps: int | None = None,
    law: EpisodeLaw | None = None,
    engine: Engine | None = None,
) -> gym.Env:
    """A `PricingMarketEnv` wrapped in `TimeLimit(max_episode_steps or spec.episode_steps)`."""
    env = PricingMarketEnv(
        spec,
        alpha,
        k,
        robust=robust,
        lam=lam,
        detector=detector,
        reference_action=reference_action,
        law=law,
        engine=engine,
    )
    return TimeLimit(env, max_episode_steps=max_episode_steps or spec.episode_steps)
