"""`PricingMarketEnv`: the simulated storefront market as a Gymnasium env (DESIGN §5)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import TimeLimit

from phantom_assets.market.bank import ChainBank, bank_tables, build_chain_bank
from phantom_assets.market.outcome import StepOutcome, draw_step, evaluate_step
from phantom_assets.market.spec import MarketSpec, alpha_half_width, candidate_alphas


class PricingMarketEnv(gym.Env):
    """Agent-aware dynamic pricing of `n` products against a human/agent session mix.

    ## Action Space
    `Discrete(n_actions)`: action `a` sets the target price scale `spec.price_levels[a]`
    (default 9 levels in [0.8, 1.2]); the executed scale is smoothed,
    `s_t = smoothing·s_{t−1} + (1 − smoothing)·level`, and prices are
    `clip(anchor·s_t, p_low, p_high)`.

    ## Observation Space
    `Box(0, 1, (2·n + 1,), float32)`, in this order:
    `[0:n]` demand-proxy shares per product of the last step (zeros when nothing was demanded),
    `[n:2n]` current prices normalised as (p − p_low)/(p_high − p_low),
    `[2n]` mean detector score f̄ of the last step's sampled sessions (estimated from their chains
    with the fitted kernels). The true α is never observed (pitfall §10.3).

    ## Rewards
    `profit − λ·f̄_buy·info_value·B − η_ux·B·(volatility + ½·upward volatility)
    − supra_penalty·B·supra_share` with `B = max(cost_floor, 1)`, where f̄_buy = Σ f over the
    sessions that buy / N: the detector-weighted share of transactions, i.e. the information
    value that actually leaks (reported as `info["leakage"]`). Unlike the all-session f̄, it
    depends on prices -- pricing above agents' valuations keeps them from buying at the floor --
    so λ can steer a policy (the all-session f̄ of DESIGN §5 is the same for every action).
    `profit = Σ (p − p_low)·purchases`, volatility the mean relative price change |Δp|/anchor
    (upward: positive changes only), and supra_share the share of products priced above the
    competitive cap.
    In robust mode the step is executed at the worst (minimum-reward) candidate α of the ambiguity
    interval, all candidates evaluated with common random numbers; `info["candidate_rewards"]` lists
    them and the executed reward is exactly the selected one.

    ## Starting State
    Prices at the anchor (scale 1). Fresh chain banks are sampled per class and one warm-up step at
    the nominal α (no reward) fills the demand shares and f̄.

    ## Episode End
    Terminated after `spec.patience` consecutive steps with margin profit/revenue below
    `spec.margin_floor`. Truncation comes from `max_episode_steps` (see `make_env`).

    ## Arguments
    `spec` (MarketSpec), `alpha` (nominal agent share in [0, 1]), `robust` (adversarial α),
    `lam` (overrides `spec.lam`). `reset(options={"alpha": a})` overrides α for one episode.
    """

    metadata = {"render_modes": []}  # noqa: RUF012 -- Gymnasium's class attribute

    def __init__(
        self,
        spec: MarketSpec,
        alpha: float = 0.0,
        *,
        robust: bool = False,
        lam: float | None = None,
    ) -> None:
        """Build the env; see the class docstring for the arguments."""
        super().__init__()
        self.market = spec
        self.base_alpha = _check_alpha(alpha)
        self.robust = bool(robust)
        self.lam = float(spec.lam if lam is None else lam)
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam!r}")
        n = spec.n_products
        self.action_space = spaces.Discrete(spec.n_actions)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2 * n + 1,), dtype=np.float32)
        self._levels = np.asarray(spec.price_levels, dtype=np.float64)
        self._b = max(spec.cost_floor, 1.0)
        self.half_width = alpha_half_width(spec)
        fitted = (spec.kernel_human, spec.kernel_agent)
        self._tables = tuple(bank_tables(k, *fitted, spec.states) for k in fitted)
        self.alpha = self.base_alpha
        self._candidates = np.array([self.alpha])
        self._banks: tuple[ChainBank, ChainBank] | None = None
        self._scale = 1.0
        self._prices = self._price(1.0)
        self._obs = np.zeros(2 * n + 1, dtype=np.float32)
        self._below_floor = 0

    def _price(self, scale: float) -> np.ndarray:
        spec = self.market
        return np.clip(spec.anchor * scale, spec.p_low, spec.p_high)

    def _observe(self, outcome: StepOutcome, k: int) -> np.ndarray:
        spec = self.market
        demand = outcome.demand[k]
        total = demand.sum()
        shares = demand / total if total > 0 else np.zeros_like(demand)
        normed = (self._prices - spec.p_low) / (spec.p_high - spec.p_low)
        obs = np.concatenate([shares, normed, [outcome.f_mean[k]]])
        return np.clip(obs, 0.0, 1.0).astype(np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: resample chain banks, reset prices, run one warm-up step."""
        super().reset(seed=seed)
        spec = self.market
        override = (options or {}).get("alpha")
        self.alpha = self.base_alpha if override is None else _check_alpha(override)
        self._candidates = (
            candidate_alphas(spec, self.alpha, self.half_width)
            if self.robust
            else np.array([self.alpha])
        )
        rng = self.np_random
        self._banks = tuple(  # type: ignore[assignment]
            build_chain_bank(
                tables,
                spec.chain_bank_size,
                rng,
                spec.max_chain_len,
                (spec.f_intercept, spec.f_slope),
            )
            for tables in self._tables
        )
        self._scale = 1.0
        self._prices = self._price(1.0)
        self._below_floor = 0
        draws = draw_step(rng, spec.sessions_per_step, spec.n_products)
        warm = evaluate_step(spec, self._banks, self._prices, np.array([self.alpha]), draws)
        self._obs = self._observe(warm, 0)
        info = {"alpha": self.alpha, "candidate_alphas": self._candidates.copy()}
        return self._obs.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Set prices from `action` and simulate N sessions: (obs, reward, term, trunc, info)."""
        if self._banks is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        spec = self.market
        previous = self._prices
        smooth = spec.smoothing
        self._scale = smooth * self._scale + (1.0 - smooth) * self._levels[int(action)]
        self._prices = self._price(self._scale)
        change = (self._prices - previous) / spec.anchor
        volatility = float(np.abs(change).mean())
        upward = float(np.maximum(change, 0.0).mean())
        supra_share = float((self._prices > spec.competitive_cap).mean())

        draws = draw_step(self.np_random, spec.sessions_per_step, spec.n_products)
        out = evaluate_step(spec, self._banks, self._prices, self._candidates, draws)
        penalty = self._b * (
            self.lam * out.f_leak * spec.info_value
            + spec.eta_ux * (volatility + 0.5 * upward)
            + spec.supra_penalty * supra_share
        )
        rewards = out.profit - penalty
        k = int(np.argmin(rewards)) if self.robust else 0
        self._obs = self._observe(out, k)

        revenue = float(out.revenue[k])
        profit = float(out.profit[k])
        n_bought = float(out.purchases[k].sum())
        margin = profit / revenue if revenue > 0 else 0.0
        self._below_floor = self._below_floor + 1 if margin < spec.margin_floor else 0
        terminated = self._below_floor >= spec.patience
        info = {
            "revenue": revenue,
            "profit": profit,
            "purchases": n_bought,
            "coi_level": profit / n_bought if n_bought > 0 else 0.0,
            "leakage": float(out.f_leak[k] * spec.info_value),
            "f_mean": float(out.f_mean[k]),
            "volatility": volatility,
            "supra_share": supra_share,
            "margin": margin,
            "mean_price": float(self._prices.mean()),
            "alpha": float(self._candidates[k]),
            "alpha_nominal": self.alpha,
            "alpha_adv": float(self._candidates[k]),
            "n_agents": int(out.n_agents[k]),
            "candidate_alphas": self._candidates.copy(),
            "candidate_rewards": rewards.copy(),
        }
        return self._obs.copy(), float(rewards[k]), terminated, False, info


def _check_alpha(alpha: float) -> float:
    value = float(alpha)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    return value


def make_env(
    spec: MarketSpec,
    alpha: float = 0.0,
    *,
    robust: bool = False,
    lam: float | None = None,
    max_episode_steps: int | None = None,
) -> gym.Env:
    """A `PricingMarketEnv` wrapped in `TimeLimit(max_episode_steps or spec.episode_steps)`."""
    env = PricingMarketEnv(spec, alpha, robust=robust, lam=lam)
    return TimeLimit(env, max_episode_steps=max_episode_steps or spec.episode_steps)
