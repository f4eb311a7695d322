"""One market step evaluated for K candidate α values under common random numbers (DESIGN §5).

The randomness of a step is drawn once (`draw_step`), independently of α; `evaluate_step` maps the
same draws to every candidate, vectorized over (K, N, products). Candidates therefore differ only
through α, so the worst case is not noise (pitfall §10.4), and the outcome of any candidate is the
exact step that is executed when it is selected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.market.bank import ChainBank
from phantom_assets.market.spec import MarketSpec

EXACT_COUNT_EPS: float = 1e-9
"""Added before ⌊N·α⌋ so that e.g. 0.29·100 = 28.999… still counts 29 agents."""


@dataclass(frozen=True)
class StepDraws:
    """The common random numbers of one step.

    Attributes:
        u_agent: (N,) uniforms deciding which sessions are agents (u < α, or rank < ⌊Nα⌋).
        u_chain: (N,) uniforms picking a chain from the session's class bank.
        z_session: (N,) standard normals, the session-level part of every valuation.
        z: (N, P) standard normals; valuation v = μ_Y + σ_Y·(ρ·z_session + √(1−ρ²)·z).
        u_choice: (N,) uniforms for the inverse-CDF product choice ∝ max(0, v − p).
    """

    u_agent: np.ndarray
    u_chain: np.ndarray
    z_session: np.ndarray
    z: np.ndarray
    u_choice: np.ndarray


@dataclass(frozen=True)
class StepOutcome:
    """Per-candidate outcome arrays (leading axis K).

    Attributes:
        demand: (K, P) demand proxy per product (Σ chosen sessions' chain weights).
        purchases: (K, P) purchases per product.
        revenue: (K,) Σ p·purchases.
        profit: (K,) Σ (p − p_low)·purchases.
        f_mean: (K,) mean detector score f̄ over all sampled sessions (what the shop observes).
        f_leak: (K,) Σ f over the sessions that *buy*, divided by N: the information value that
            leaks through transactions, the quantity the λ penalty prices (DESIGN §5 note).
        n_agents: (K,) number of agent sessions.
        n_choosing: (K,) sessions with positive surplus on some product (as float).
    """

    demand: np.ndarray
    purchases: np.ndarray
    revenue: np.ndarray
    profit: np.ndarray
    f_mean: np.ndarray
    f_leak: np.ndarray
    n_agents: np.ndarray
    n_choosing: np.ndarray


def draw_step(rng: np.random.Generator, n_sessions: int, n_products: int) -> StepDraws:
    """Draw a step's common random numbers (in a fixed order, for reproducibility)."""
    return StepDraws(
        u_agent=rng.random(n_sessions),
        u_chain=rng.random(n_sessions),
        z=rng.standard_normal((n_sessions, n_products)),
        u_choice=rng.random(n_sessions),
        z_session=rng.standard_normal(n_sessions),
    )


def agent_mask(u_agent: np.ndarray, alphas: np.ndarray, mode: str) -> np.ndarray:
    """(K, N) bool: session n is an agent under candidate k.

    "bernoulli": u_n < α_k. "exact": the ⌊N·α_k⌋ sessions with the smallest u are agents.
    Both are monotone in α for fixed draws (a higher α only turns humans into agents).
    """
    if mode == "bernoulli":
        return u_agent[None, :] < alphas[:, None]
    if mode == "exact":
        n = u_agent.size
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(u_agent, kind="stable")] = np.arange(n)
        counts = np.floor(n * alphas + EXACT_COUNT_EPS).astype(np.int64)
        return rank[None, :] < counts[:, None]
    raise ValueError(f"unknown agent_count_mode {mode!r}")


def session_valuations(mu: float, sigma: float, rho: float, draws: StepDraws) -> np.ndarray:
    """(N, P) valuations: N(μ, σ) per product, loading ρ on the session's willingness to pay.

    z = ρ·z_session + √(1 − ρ²)·z keeps every product's marginal N(0, 1) while products of one
    session correlate with ρ² (one affordable product no longer makes demand ignore price).
    """
    z = rho * draws.z_session[:, None] + np.sqrt(1.0 - rho * rho) * draws.z
    return mu + sigma * z


def _sessions_as(
    mu: float, sigma: float, rho: float, bank: ChainBank, draws: StepDraws, prices: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every session's contribution if it were of this class: ((N, 2P + 2) counts, (N,) f).

    Columns: demand weight on the chosen product (P), purchase of it (P), chose anything (1),
    detector score if it buys, else 0 (1).
    """
    n_sessions, n_products = draws.z.shape
    idx = np.minimum((draws.u_chain * bank.size).astype(np.int64), bank.size - 1)
    surplus = np.maximum(session_valuations(mu, sigma, rho, draws) - prices, 0.0)  # (N, P)
    cum = np.cumsum(surplus, axis=1)
    threshold = draws.u_choice * cum[:, -1]
    choice = np.minimum((cum <= threshold[:, None]).sum(axis=1), n_products - 1)
    chooses = surplus[np.arange(n_sessions), choice] > 0.0
    onehot = (choice[:, None] == np.arange(n_products)) & chooses[:, None]
    bought = onehot & bank.buys[idx][:, None]
    counts = np.concatenate(
        [
            onehot * bank.weight[idx][:, None],
            bought,
            chooses[:, None],
            (bank.f[idx] * bought.any(axis=1))[:, None],
        ],
        axis=1,
        dtype=np.float64,
    )
    return counts, bank.f[idx]


def evaluate_step(
    spec: MarketSpec,
    banks: tuple[ChainBank, ChainBank],
    prices: np.ndarray,
    alphas: np.ndarray,
    draws: StepDraws,
) -> StepOutcome:
    """Map one set of draws to the outcome of every candidate α, vectorized over (K, N, P).

    A session's product choice is ∝ max(0, v − p) (inverse CDF with `u_choice`); a session with no
    positive surplus chooses nothing: it adds no demand and buys nothing (zero surplus means zero
    demand -- never a uniform fallback, pitfall §10.2). A session buys its chosen product iff its
    chain `buys`. Under common random numbers a session's outcome depends on α only through its
    class, so both versions of every session are computed once and each candidate's totals are
    `human totals + is_agent @ (agent − human)` (counts are exact; the f column is a float sum).

    Args:
        spec: the market.
        banks: (human bank, agent bank).
        prices: (P,) current prices.
        alphas: (K,) candidate agent shares.
        draws: the step's common random numbers.
    """
    n_products = prices.size
    is_agent = agent_mask(draws.u_agent, alphas, spec.agent_count_mode)  # (K, N)
    rho = spec.valuation_correlation
    counts_h, f_h = _sessions_as(spec.mu_human, spec.sigma_human, rho, banks[0], draws, prices)
    counts_a, f_a = _sessions_as(spec.mu_agent, spec.sigma_agent, rho, banks[1], draws, prices)
    mask = is_agent.astype(np.float64)
    totals = counts_h.sum(axis=0) + mask @ (counts_a - counts_h)  # (K, 2P + 2)
    f_mean = (np.where(is_agent, f_a, f_h)).mean(axis=1)
    purchases = totals[:, n_products : 2 * n_products]
    return StepOutcome(
        demand=totals[:, :n_products],
        purchases=purchases,
        revenue=purchases @ prices,
        profit=purchases @ (prices - spec.p_low),
        f_mean=f_mean,
        f_leak=totals[:, 2 * n_products + 1] / draws.u_agent.size,
        n_agents=is_agent.sum(axis=1),
        n_choosing=totals[:, 2 * n_products],
    )
