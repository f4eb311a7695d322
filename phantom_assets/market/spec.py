"""`MarketSpec`: everything the market env needs, compiled per store (docs/method.md#the-market);
its robust mode's ambiguity set is `market.ambiguity`'s."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phantom_assets.config import AGENT_VALUATIONS, MARKET_DETECTORS, AgentsConfig, MarketConfig
from phantom_assets.constants import DEFAULT_TEMPERATURE, KERNEL_STATES
from phantom_assets.contamination.chains import validate_kernel
from phantom_assets.lake import SPEC_ARRAYS_FILE, SPEC_SCALARS_FILE
from phantom_assets.market.bank import ChainBank
from phantom_assets.storage import atomic_write

_DEFAULTS = MarketConfig()
BANK_FIELDS: tuple[str, ...] = ("engagement", "score", "weight")
_BANK_ARRAYS: tuple[str, ...] = tuple(
    f"{actor}_{name}" for actor in ("human", "agent") for name in BANK_FIELDS
)
_KERNEL_SCORE_ARRAYS: tuple[str, ...] = ("human_kernel_score", "agent_kernel_score")
_EVASION_ARRAYS: tuple[str, ...] = ("agent_evasion_score", "agent_evasion_kernel_score")
_REPLICATE_ARRAYS: tuple[str, ...] = (
    "human_multiplicity",
    "agent_multiplicity",
    "demand_replicates",
)
_ARRAY_FIELDS: tuple[str, ...] = (
    "kernel_human",
    "kernel_agent",
    "anchor",
    "product_weights",
    *_BANK_ARRAYS,
    *_KERNEL_SCORE_ARRAYS,
    *_EVASION_ARRAYS,
    *_REPLICATE_ARRAYS,
)
REPLICATE_COLUMNS: tuple[str, ...] = (
    "mu_human",
    "beta_human",
    "sigma_human",
    "in_market",
    "mu_agent",
    "beta_agent",
    "sigma_agent",
)
"""The demand parameters of a replicate row (`demand_replicates`; NaN: the point estimate)."""
_TUPLE_FIELDS: tuple[str, ...] = (
    "product_ids",
    "base_levels",
    "markups",
    "detector_strengths",
    "states",
    "evasion_time_cost_s",
)
HAND_BUILT_VALUATION_MEAN = 1.5
"""μ of a spec built by hand (tests, the env benchmark); compiled specs take the store's demand."""
SOURCES: tuple[str, ...] = ("logs", "fitted", "declared", "empirical", "kernel")
"""Where a spec term comes from: the store's logs (or a fit to them), a declared assumption, the
store's real sessions (an empirical bank) or chains sampled from its kernels."""


def swept_thetas(agents: AgentsConfig) -> tuple[float, ...]:
    """The evasion shares a compiled market sweeps: `agents.evasion_thetas`, sorted, 0 first."""
    return tuple(sorted({0.0, *(float(t) for t in agents.evasion_thetas)}))


@dataclass(frozen=True, eq=False)
class MarketSpec:
    """A compiled market: the store's products and prices, session banks, valuation law, the
    engine's quoting rule, the action grid, reward and robustness settings.

    Attributes:
        kernel_human, kernel_agent: (S, S) fitted class kernels over `states` (rows = sources).
        anchor: (P,) anchor price per product (the store's zero-engagement quote); `base =
            anchor · level`.
        product_ids: (P,) the products as the store's logs name them.
        product_weights: (P,) the share of shoppers who want each product (sums to 1).
        human_engagement, human_score, human_weight: the human `ChainBank` (quote-time
            engagement s in the store's signal, prefix agent score f, session demand weight).
        agent_engagement, agent_score, agent_weight: the agent bank (clean sessions).
        human_kernel_score, agent_kernel_score: each bank session's kernel-only f (the same
            as its score when the market quotes with the kernel detector); None: the score.
        agent_evasion_score, agent_evasion_kernel_score: (T, agent bank size) each agent
            session's score (and kernel-only score) when its agent adapts with the t-th swept
            evasion share θ (`evasion_thetas`: `agents.evasion_thetas` with 0 first;
            docs/detector.md#agents-that-adapt; `detector.evasion`); None: one row, θ = 0, the
            bank's own.
        evasion_time_cost_s: (T,) the mean extra seconds an adapting agent session takes to
            its quote at each θ (reported, not charged).
        mu_human, beta_human, sigma_human: a human's valuation μ + β·g_v(s) + σ·z at the
            engagement s of its quote (× the anchor of the wanted product; g_v with
            `valuation_scale`): the store's demand (`store_demand`), or its revealed-preference
            calibration where the logs do not identify it.
        in_market: π, the share of shoppers in the market for their product.
        mu_agent, beta_agent, sigma_agent: the agents' own law (used by `agent_fit`).
        agent_valuation: what an agent's principal pays (`config.AGENT_VALUATIONS`); by default
            what she would have browsing herself: an agent carries its principal's willingness
            to pay.
        valuation_scale: s0 of g_v (the demand was fitted with it).
        human_multiplicity, agent_multiplicity: (B, bank size) each bank session's multiplicity
            in each of the store's B replicates (`market.replicates`; (0, n) for a bank that is
            not resampled, e.g. sampled chains).
        demand_replicates: (B, len(REPLICATE_COLUMNS)) the demand refitted on each replicate
            (NaN where it is the point estimate); B = 0: no replicates (`world.draw_world`).
        cost_share: marginal cost p_low = cost_share × anchor (per product).
        price_cap: highest quote p_high = price_cap × anchor (per product).
        base_levels, markups, detector_strengths: the action grid (level × m × δ); compiled
            from the store, it holds the store's own pricing and its best responses
            (`optimize.centred_grid`).
        store_markup: the store's own engagement markup m (its pricing is level 1, m, δ = 0: the
            undefended engine); None: the grid's middle markup.
        quote_noise: w, half-width of the relative quote noise u ~ U(−1, 1).
        engagement_scale: s0 of the markup g(s) = 1 − exp(−s/s0).
        reference_engagement: s_ref, the engagement a flagged session is quoted as (at δ = 1).
        detector_threshold: τ, a session is flagged iff its prefix f exceeds it (set for a
            human false-positive rate, `MarketConfig.detector_fpr`).
        detector: the quote-time detector whose f the banks' scores are (`MARKET_DETECTORS`).
        kernel_detector_threshold: τ of the kernel-only f for the same false-positive rate
            (the ledger's comparison); None: `detector_threshold`.
        agents: the agent traffic's settings, received from `[agents]` (the one home of α and K:
            nominal K, the robust mode's K and α candidates, its radius ε), never copied: they
            are not part of the compiled market (`save` leaves them out, `load` receives them).
        shoppers_per_step: N shoppers per step (pricing period).
        lam: leakage charge per unit of leak in the reward (0: measured, not charged).
        eta_ux: cost of a unit relative change of the base level (price volatility).
        episode_steps: time limit used by `make_env`.
        f_intercept, f_slope: the store's selected agent score f = σ(a + b·gap) the banks use.
        states: the kernel state labels.
        signal: the engagement signal the store prices on (`constants.ENGAGEMENT_SIGNALS`).
        bank: "empirical" (the store's labelled sessions) or "kernel" (sampled chains).
        sources: where each term comes from (`SOURCES`), by term name; reports show it.
    """

    kernel_human: np.ndarray
    kernel_agent: np.ndarray
    anchor: np.ndarray
    human_engagement: np.ndarray
    human_score: np.ndarray
    human_weight: np.ndarray
    agent_engagement: np.ndarray
    agent_score: np.ndarray
    agent_weight: np.ndarray
    product_ids: tuple[str, ...] = ()
    product_weights: np.ndarray | None = None
    human_kernel_score: np.ndarray | None = None
    agent_kernel_score: np.ndarray | None = None
    agent_evasion_score: np.ndarray | None = None
    agent_evasion_kernel_score: np.ndarray | None = None
    evasion_time_cost_s: tuple[float, ...] = (0.0,)
    human_multiplicity: np.ndarray | None = None
    agent_multiplicity: np.ndarray | None = None
    demand_replicates: np.ndarray | None = None
    mu_human: float = HAND_BUILT_VALUATION_MEAN
    beta_human: float = 0.0
    sigma_human: float = _DEFAULTS.valuation_sd
    in_market: float = 1.0
    mu_agent: float = HAND_BUILT_VALUATION_MEAN
    beta_agent: float = 0.0
    sigma_agent: float = _DEFAULTS.valuation_sd
    agent_valuation: str = _DEFAULTS.agent_valuation
    valuation_scale: float = 10.0
    cost_share: float = _DEFAULTS.cost_share
    price_cap: float = _DEFAULTS.price_cap
    base_levels: tuple[float, ...] = _DEFAULTS.base_levels
    markups: tuple[float, ...] = tuple(
        m * _DEFAULTS.declared_markup for m in _DEFAULTS.markup_multiples
    )
    detector_strengths: tuple[float, ...] = _DEFAULTS.detector_strengths
    store_markup: float | None = None
    quote_noise: float = _DEFAULTS.declared_quote_noise
    engagement_scale: float = 10.0
    reference_engagement: float = 20.0
    detector_threshold: float = 0.5
    detector: str = "kernel"
    kernel_detector_threshold: float | None = None
    agents: AgentsConfig = dataclasses.field(default_factory=AgentsConfig)
    shoppers_per_step: int = _DEFAULTS.shoppers_per_step
    lam: float = _DEFAULTS.lam
    eta_ux: float = 500.0
    episode_steps: int = _DEFAULTS.episode_steps
    f_intercept: float = 0.0
    f_slope: float = 1.0 / DEFAULT_TEMPERATURE
    states: tuple[str, ...] = KERNEL_STATES
    signal: str = "demand_proxy"
    bank: str = "kernel"
    sources: dict[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        """Coerce arrays to read-only float64, tuples to tuples, and validate every field.

        Without `product_ids` the products are named P01, P02, …; without `product_weights`
        shoppers want every product alike."""
        n = int(np.size(self.anchor))
        if not self.product_ids:
            object.__setattr__(self, "product_ids", tuple(f"P{i + 1:02d}" for i in range(n)))
        if self.product_weights is None:
            object.__setattr__(self, "product_weights", np.full(n, 1.0 / max(n, 1)))
        sizes = (np.size(self.human_engagement), np.size(self.agent_engagement))
        empty = {
            "human_multiplicity": (0, sizes[0]),
            "agent_multiplicity": (0, sizes[1]),
            "demand_replicates": (0, len(REPLICATE_COLUMNS)),
        }
        for name, shape in empty.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.zeros(shape))
        self._default_scores()
        for name in _ARRAY_FIELDS:
            arr = np.array(getattr(self, name), dtype=np.float64, copy=True)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        for name in _TUPLE_FIELDS:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.store_markup is None:  # a hand-built grid: its middle markup
            object.__setattr__(self, "store_markup", float(self.markups[len(self.markups) // 2]))
        for name in ("kernel_human", "kernel_agent"):
            validate_kernel(getattr(self, name), name, n_states=len(self.states))
        self.banks  # noqa: B018 -- validates the bank arrays
        self._validate_scalars()

    def _default_scores(self) -> None:
        """Scores left None are the bank's own: the kernel-only f is the score, τ its τ, and the
        evasion sweep only θ = 0. A market that quotes with the kernel detector has no other
        kernel-only f (a copy with new scores keeps them one)."""
        kernel_detector = self.detector == MARKET_DETECTORS[1]
        for actor in ("human", "agent"):
            if kernel_detector or getattr(self, f"{actor}_kernel_score") is None:
                object.__setattr__(self, f"{actor}_kernel_score", getattr(self, f"{actor}_score"))
        for name, own in zip(_EVASION_ARRAYS, ("agent_score", "agent_kernel_score"), strict=True):
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.atleast_2d(getattr(self, own)))
        if kernel_detector or self.kernel_detector_threshold is None:
            object.__setattr__(self, "kernel_detector_threshold", self.detector_threshold)

    def _validate_scalars(self) -> None:
        checks: dict[str, bool] = {
            "anchor": self.anchor.ndim == 1
            and self.anchor.size >= 1
            and bool(np.all(self.anchor > 0)),
            "product_ids": len(self.product_ids) == self.anchor.size
            and len(set(self.product_ids)) == self.anchor.size,
            "product_weights": self.product_weights.shape == self.anchor.shape
            and bool(np.all(self.product_weights >= 0))
            and abs(float(self.product_weights.sum()) - 1.0) < 1e-9,
            "sigma_human": self.sigma_human > 0,
            "sigma_agent": self.sigma_agent > 0,
            "in_market": 0.0 < self.in_market <= 1.0,
            "beta_human": bool(np.isfinite(self.beta_human)),
            "beta_agent": bool(np.isfinite(self.beta_agent)),
            "agent_valuation": self.agent_valuation in AGENT_VALUATIONS,
            "valuation_scale": self.valuation_scale > 0,
            "human_multiplicity": self._replicate_shape(self.human_multiplicity, 0),
            "agent_multiplicity": self._replicate_shape(self.agent_multiplicity, 1),
            "demand_replicates": self.demand_replicates.ndim == 2
            and self.demand_replicates.shape[1] == len(REPLICATE_COLUMNS),
            "cost_share": 0 <= self.cost_share < 1.0,
            "price_cap": self.price_cap > 1.0,
            "base_levels": len(self.base_levels) >= 1 and min(self.base_levels) > 0,
            "markups": len(self.markups) >= 1 and min(self.markups) >= 0,
            "store_markup": self.store_markup >= 0,
            "detector_strengths": len(self.detector_strengths) >= 1
            and min(self.detector_strengths) == 0.0,
            "quote_noise": 0 <= self.quote_noise < 1,
            "engagement_scale": self.engagement_scale > 0,
            "reference_engagement": self.reference_engagement > 0,
            "detector_threshold": 0.0 <= self.detector_threshold <= 1.0,
            "detector": self.detector in MARKET_DETECTORS,
            "evasion_time_cost_s": len(self.evasion_time_cost_s)
            == self.agent_evasion_score.shape[0],  # type: ignore[union-attr]
            **{
                name: getattr(self, name).ndim == 2
                and getattr(self, name).shape[1] == np.size(self.agent_engagement)
                and bool(np.all((getattr(self, name) >= 0) & (getattr(self, name) <= 1)))
                for name in _EVASION_ARRAYS
            },
            "kernel_detector_threshold": 0.0 <= self.kernel_detector_threshold <= 1.0,  # type: ignore[operator]
            **{
                name: np.shape(getattr(self, name)) == np.shape(getattr(self, score))
                and bool(np.all((getattr(self, name) >= 0) & (getattr(self, name) <= 1)))
                for name, score in zip(
                    _KERNEL_SCORE_ARRAYS, ("human_score", "agent_score"), strict=True
                )
            },
            "shoppers_per_step": self.shoppers_per_step >= 1,
            "lam": self.lam >= 0,
            "eta_ux": self.eta_ux >= 0,
            "episode_steps": self.episode_steps >= 1,
            "f_intercept": bool(np.isfinite(self.f_intercept)),
            "f_slope": bool(np.isfinite(self.f_slope)),
            "bank": self.bank in ("empirical", "kernel"),
            "sources": all(v in SOURCES for v in self.sources.values()),
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"MarketSpec.{name} is invalid: {getattr(self, name)!r}")

    def _replicate_shape(self, multiplicity: np.ndarray, bank: int) -> bool:
        """A (B, bank size) array of non-negative multiplicities, B = the demand replicates'
        (or 0: the bank is not resampled)."""
        size = np.size((self.human_engagement, self.agent_engagement)[bank])
        rows = multiplicity.shape[0] if multiplicity.ndim == 2 else -1
        return (
            multiplicity.ndim == 2
            and multiplicity.shape[1] == size
            and rows in (0, self.demand_replicates.shape[0])
            and bool(np.all(multiplicity >= 0))
        )

    @property
    def replicates(self) -> int:
        """B, the replicates of the store's sample an episode draws from (0: none)."""
        return int(self.demand_replicates.shape[0])

    @property
    def banks(self) -> tuple[ChainBank, ChainBank]:
        """(human bank, agent bank)."""
        return tuple(  # type: ignore[return-value]
            ChainBank(*(getattr(self, f"{actor}_{name}") for name in BANK_FIELDS))
            for actor in ("human", "agent")
        )

    @property
    def evasion_thetas(self) -> tuple[float, ...]:
        """The evasion shares θ of the evasion arrays' rows: the swept ones
        (`swept_thetas(agents)`), or (0,) where the spec has no sweep."""
        rows = self.agent_evasion_score.shape[0]  # type: ignore[union-attr]
        if rows == 1:
            return (0.0,)
        thetas = swept_thetas(self.agents)
        if len(thetas) != rows:
            raise ValueError(
                f"the market swept {rows} evasion shares, [agents] evasion_thetas has "
                f"{thetas}: re-materialize market_simulators"
            )
        return thetas

    @property
    def evasion_band_thetas(self) -> tuple[float, ...]:
        """The swept evasion shares inside the declared band, θ <= `agents.evasion_band` (0
        first): the stress band's θ, over which the certificate's gate takes its worst case."""
        return tuple(t for t in self.evasion_thetas if t <= self.agents.evasion_band)

    def evaded(self, theta: float) -> MarketSpec:
        """The market whose agents adapt with evasion share θ (one of `evasion_thetas`): their
        sessions' scores are the θ row of the evasion arrays; humans, τ and all else unchanged."""
        if theta == 0.0:
            return self  # the agents as logged (a copy with new scores keeps its own)
        if theta not in self.evasion_thetas:
            raise ValueError(f"θ = {theta} was not swept; the spec has {self.evasion_thetas}")
        row = self.evasion_thetas.index(theta)
        return dataclasses.replace(
            self,
            agent_score=self.agent_evasion_score[row],  # type: ignore[index]
            agent_kernel_score=self.agent_evasion_kernel_score[row],  # type: ignore[index]
        )

    @property
    def kernel_flags(self) -> tuple[np.ndarray, np.ndarray]:
        """(human, agent) whether the kernel-only detector flags each bank session."""
        tau = self.kernel_detector_threshold
        return self.human_kernel_score > tau, self.agent_kernel_score > tau  # type: ignore[operator]

    @property
    def n_products(self) -> int:
        """Number of products (length of `anchor`)."""
        return int(self.anchor.size)

    @property
    def p_low(self) -> np.ndarray:
        """(P,) marginal cost per product: the lowest quote and the zero of profit."""
        return self.cost_share * self.anchor

    @property
    def p_high(self) -> np.ndarray:
        """(P,) highest quote per product."""
        return self.price_cap * self.anchor

    @property
    def mean_cost(self) -> float:
        """Marginal cost of the product a shopper wants, on average over the product shares."""
        return float(self.product_weights @ self.p_low)

    @property
    def product_cdf(self) -> np.ndarray:
        """(P,) cumulative product weights, last exactly 1 (a shopper's product is the first
        entry above its uniform draw)."""
        cdf = np.cumsum(self.product_weights)
        cdf[-1] = 1.0
        return cdf

    @property
    def action_shape(self) -> tuple[int, int, int]:
        """(levels, markups, detector strengths): the action grid's axes."""
        return len(self.base_levels), len(self.markups), len(self.detector_strengths)

    @property
    def n_actions(self) -> int:
        """Number of discrete actions (level × m × δ)."""
        return int(np.prod(self.action_shape))

    def action_index(self, level: int, markup: int, detector: int) -> int:
        """The action of grid indices (level, markup, detector strength)."""
        return int(np.ravel_multi_index((level, markup, detector), self.action_shape))

    def action_parts(self, action: int) -> tuple[int, int, int]:
        """Inverse of `action_index`: (level, markup, detector strength) grid indices."""
        parts = np.unravel_index(int(action), self.action_shape)
        return int(parts[0]), int(parts[1]), int(parts[2])

    def action_values(self, action: int) -> tuple[float, float, float]:
        """(base level, markup m, detector strength δ) of an action."""
        level, markup, detector = self.action_parts(action)
        return (self.base_levels[level], self.markups[markup], self.detector_strengths[detector])

    @property
    def undefended_action(self) -> int:
        """The undefended engine, the store's own pricing: the grid's level nearest 1, its markup
        nearest the store's own m (`store_markup`), δ = 0."""
        level = int(np.argmin(np.abs(np.asarray(self.base_levels) - 1.0)))
        markup = int(np.argmin(np.abs(np.asarray(self.markups) - self.store_markup)))
        return self.action_index(level, markup, 0)

    @property
    def reward_scale(self) -> float:
        """Spec-derived reward normalisation: 1 / (shoppers per step · mean anchor), so a step's
        profit is O(1) for learning (curves and evaluations stay in money)."""
        return 1.0 / (self.shoppers_per_step * float(self.anchor.mean()))

    def _scalars(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in (*_ARRAY_FIELDS, "agents")
        }

    def save(self, directory: str | Path) -> tuple[Path, Path]:
        """Write `spec.npz` (arrays) and `spec.json` (scalars) atomically into `directory` (the
        agent settings are not the market's: `load` receives them)."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {name: np.asarray(getattr(self, name)) for name in _ARRAY_FIELDS}
        npz_path = atomic_write(folder / SPEC_ARRAYS_FILE, lambda fh: np.savez(fh, **arrays))
        blob = json.dumps(self._scalars(), sort_keys=True, indent=2).encode()
        json_path = atomic_write(folder / SPEC_SCALARS_FILE, lambda fh: fh.write(blob))
        return npz_path, json_path

    @classmethod
    def load(cls, directory: str | Path, agents: AgentsConfig) -> MarketSpec:
        """Read a spec written by `save`, with the agent traffic `agents` (`Settings.agents`); a
        folder of an older spec layout fails naming it."""
        folder = Path(directory)
        scalars = json.loads((folder / SPEC_SCALARS_FILE).read_text())
        fields = {f.name for f in dataclasses.fields(cls)}
        with np.load(folder / SPEC_ARRAYS_FILE) as data:
            missing = [name for name in _ARRAY_FIELDS if name not in data]
            unknown = sorted(set(scalars) - fields)
            if missing or unknown:
                raise ValueError(
                    f"{folder} holds an older market spec layout (arrays missing: "
                    f"{missing}, fields unknown: {unknown}); re-materialize "
                    f"market_simulators"
                )
            arrays = {name: data[name] for name in _ARRAY_FIELDS}
        return cls(**scalars, **arrays, agents=agents)
