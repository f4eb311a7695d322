"""`MarketSpec`: everything the pricing env needs, compiled per store (DESIGN §5, market).

Also the ambiguity set of the robust mode: a Wasserstein-1 ball of radius ε on the valuation law.
For the 1-D mixture family P_α = (1 − α)·P_H + α·P_A, W1(P_α, P_α′) = |α − α′|·W1(P_H, P_A), so the
ball is the α interval of half-width ε / W1(P_H, P_A) (W1 computed numerically), clipped to [0, 1].
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import norm

from phantom_assets.config import MarketConfig
from phantom_assets.constants import DEFAULT_TEMPERATURE, KERNEL_STATES
from phantom_assets.contamination.chains import validate_kernel
from phantom_assets.lake import SPEC_ARRAYS_FILE, SPEC_SCALARS_FILE
from phantom_assets.storage import atomic_write

_DEFAULTS = MarketConfig()
AGENT_COUNT_MODES: tuple[str, ...] = ("bernoulli", "exact")
_ARRAY_FIELDS: tuple[str, ...] = ("kernel_human", "kernel_agent", "anchor")


def _default_levels() -> tuple[float, ...]:
    grid = np.linspace(_DEFAULTS.price_scale_low, _DEFAULTS.price_scale_high, _DEFAULTS.n_actions)
    return tuple(round(float(x), 10) for x in grid)


@dataclass(frozen=True, eq=False)
class MarketSpec:
    """A compiled market: kernels, valuation laws, price bounds, reward and robustness settings.

    Attributes:
        kernel_human: (S, S) human kernel over `states`, rows = sources, columns = destinations.
        kernel_agent: (S, S) agent kernel over `states`.
        anchor: (n_products,) anchor price per product; action levels scale it.
        mu_human, sigma_human, mu_agent, sigma_agent: Normal valuation law per class (marginal,
            per product).
        valuation_correlation: ρ, the loading of every valuation on a session-level willingness
            to pay (two products' valuations of one session correlate with ρ²). With independent
            valuations (ρ = 0) one of 10 products is almost always affordable: demand ignores price.
        p_low, p_high: price bounds (p_low is the marginal cost / COI floor).
        competitive_cap: prices above it count as supra-competitive.
        price_levels: the action grid (price scale multipliers).
        smoothing: weight of the previous scale, s_t = smoothing·s_{t−1} + (1 − smoothing)·level.
        lam, info_value, eta_ux, cost_floor, supra_penalty: reward coefficients (see the env);
            these defaults are the only definition of them. `info_value` (the cost of one unit
            of f_leak) defaults to `sessions_per_step · (mean anchor − p_low)`: f_leak·N is the
            expected number of agent-like purchases and each forgoes the COI premium of an
            anchor-priced sale.
        margin_floor, patience: end after `patience` consecutive steps with margin below floor.
        sessions_per_step: N sessions drawn per step.
        agent_count_mode: "bernoulli" (each session an agent w.p. α) or "exact" (⌊Nα⌋ agents).
        ambiguity_radius_w1: ε, the Wasserstein-1 radius (valuation units).
        robust_candidates: K candidate α values evaluated per robust step.
        chain_bank_size: chains pre-sampled per class at every reset.
        max_chain_len: maximum events per sampled chain.
        f_intercept, f_slope: the store's selected agent probability f = σ(a + b·(Δ_H − Δ_A))
            (`fingerprint.calibration`: temperature T gives a = 0, b = 1/T; logistic gives the
            fit on every labeled out-of-fold gap), so chains are scored like real sessions.
        episode_steps: time limit used by `make_env`.
        states: the kernel state labels.
    """

    kernel_human: np.ndarray
    kernel_agent: np.ndarray
    anchor: np.ndarray
    mu_human: float = 120.0
    sigma_human: float = 25.0
    mu_agent: float = 100.0
    sigma_agent: float = 20.0
    valuation_correlation: float = 0.8
    p_low: float = 50.0
    p_high: float = 150.0
    competitive_cap: float = 125.0
    price_levels: tuple[float, ...] = field(default_factory=_default_levels)
    smoothing: float = 0.5
    lam: float = 1.0
    info_value: float | None = None  # None: sessions_per_step · (mean anchor − p_low)
    eta_ux: float = 50.0
    cost_floor: float = 1.0
    supra_penalty: float = 20.0
    margin_floor: float = 0.05
    patience: int = 10
    sessions_per_step: int = _DEFAULTS.sessions_per_step
    agent_count_mode: str = "bernoulli"
    ambiguity_radius_w1: float = _DEFAULTS.ambiguity_radius_w1
    robust_candidates: int = _DEFAULTS.robust_candidates
    chain_bank_size: int = _DEFAULTS.chain_bank_size
    max_chain_len: int = 64
    f_intercept: float = 0.0
    f_slope: float = 1.0 / DEFAULT_TEMPERATURE
    episode_steps: int = _DEFAULTS.episode_steps
    states: tuple[str, ...] = KERNEL_STATES

    def __post_init__(self) -> None:
        """Coerce arrays to read-only float64 and validate every field."""
        for name in _ARRAY_FIELDS:
            arr = np.array(getattr(self, name), dtype=np.float64, copy=True)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "price_levels", tuple(float(x) for x in self.price_levels))
        object.__setattr__(self, "states", tuple(self.states))
        if self.info_value is None:
            premium = float(self.anchor.mean() - self.p_low) if self.anchor.size else 0.0
            object.__setattr__(self, "info_value", self.sessions_per_step * premium)
        for name in ("kernel_human", "kernel_agent"):
            validate_kernel(getattr(self, name), name, n_states=len(self.states))
        self._validate_scalars()

    def _validate_scalars(self) -> None:
        checks: dict[str, bool] = {
            "anchor": self.anchor.ndim == 1
            and self.anchor.size >= 1
            and bool(np.all(self.anchor > 0)),
            "sigma_human": self.sigma_human > 0,
            "sigma_agent": self.sigma_agent > 0,
            "p_low": 0 <= self.p_low < self.p_high,
            "competitive_cap": self.competitive_cap > 0,
            "price_levels": len(self.price_levels) >= 2 and min(self.price_levels) > 0,
            "smoothing": 0.0 <= self.smoothing < 1.0,
            "valuation_correlation": 0.0 <= self.valuation_correlation < 1.0,
            "patience": self.patience >= 1,
            "sessions_per_step": self.sessions_per_step >= 1,
            "agent_count_mode": self.agent_count_mode in AGENT_COUNT_MODES,
            "ambiguity_radius_w1": self.ambiguity_radius_w1 >= 0,
            "robust_candidates": self.robust_candidates >= 1,
            "chain_bank_size": self.chain_bank_size >= 1,
            "max_chain_len": self.max_chain_len >= 1,
            "f_intercept": bool(np.isfinite(self.f_intercept)),
            "f_slope": bool(np.isfinite(self.f_slope)),
            "episode_steps": self.episode_steps >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"MarketSpec.{name} is invalid: {getattr(self, name)!r}")

    @property
    def n_products(self) -> int:
        """Number of products (length of `anchor`)."""
        return int(self.anchor.size)

    @property
    def n_actions(self) -> int:
        """Number of discrete price levels."""
        return len(self.price_levels)

    def _scalars(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in _ARRAY_FIELDS
        }

    def to_json(self) -> str:
        """Serialise the whole spec (arrays as nested lists) to a JSON string."""
        payload = self._scalars()
        payload.update({name: getattr(self, name).tolist() for name in _ARRAY_FIELDS})
        return json.dumps(payload, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> MarketSpec:
        """Inverse of `to_json`."""
        return cls(**json.loads(text))

    def save(self, directory: str | Path) -> tuple[Path, Path]:
        """Write `spec.npz` (arrays) and `spec.json` (scalars) atomically into `directory`."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {name: np.asarray(getattr(self, name)) for name in _ARRAY_FIELDS}
        npz_path = atomic_write(folder / SPEC_ARRAYS_FILE, lambda fh: np.savez(fh, **arrays))
        blob = json.dumps(self._scalars(), sort_keys=True, indent=2).encode()
        json_path = atomic_write(folder / SPEC_SCALARS_FILE, lambda fh: fh.write(blob))
        return npz_path, json_path

    @classmethod
    def load(cls, directory: str | Path) -> MarketSpec:
        """Read a spec written by `save`."""
        folder = Path(directory)
        scalars = json.loads((folder / SPEC_SCALARS_FILE).read_text())
        with np.load(folder / SPEC_ARRAYS_FILE) as data:
            arrays = {name: data[name] for name in _ARRAY_FIELDS}
        return cls(**scalars, **arrays)


def valuation_w1(
    mu_h: float, sigma_h: float, mu_a: float, sigma_a: float, grid: int = 200_000
) -> float:
    """W1 between Normal(mu_h, sigma_h) and Normal(mu_a, sigma_a), numerically.

    Quantile integration ∫₀¹ |F_H⁻¹(u) − F_A⁻¹(u)| du with the midpoint rule on `grid` cells.
    """
    u = (np.arange(grid, dtype=np.float64) + 0.5) / grid
    gap = norm.ppf(u, loc=mu_h, scale=sigma_h) - norm.ppf(u, loc=mu_a, scale=sigma_a)
    return float(np.mean(np.abs(gap)))


def alpha_half_width(spec: MarketSpec) -> float:
    """Half-width ε / W1(P_H, P_A) of the α ambiguity interval, at most 1.

    When the two valuation laws coincide (W1 = 0) α is not identifiable and the whole [0, 1]
    interval is ambiguous (half-width 1); likewise with ε = 0 the half-width is 0.
    """
    if spec.ambiguity_radius_w1 == 0:
        return 0.0
    w1 = valuation_w1(spec.mu_human, spec.sigma_human, spec.mu_agent, spec.sigma_agent)
    if w1 <= 0:
        return 1.0
    return float(min(spec.ambiguity_radius_w1 / w1, 1.0))


def alpha_interval(
    spec: MarketSpec, alpha: float, half_width: float | None = None
) -> tuple[float, float]:
    """The ambiguity interval [α − h, α + h] ∩ [0, 1] around nominal `alpha`.

    Args:
        spec: the market.
        alpha: nominal agent share in [0, 1].
        half_width: precomputed `alpha_half_width(spec)` (computed when None).
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    half = alpha_half_width(spec) if half_width is None else half_width
    return max(0.0, alpha - half), min(1.0, alpha + half)


def candidate_alphas(spec: MarketSpec, alpha: float, half_width: float | None = None) -> np.ndarray:
    """`spec.robust_candidates` evenly spaced α values over the ambiguity interval (float64)."""
    low, high = alpha_interval(spec, alpha, half_width)
    return np.linspace(low, high, spec.robust_candidates)
