"""One typed configuration for PHANTOM, with the `demo` and `study` profiles
(docs/architecture.md#configuration).

Pure: this module never reads the environment; the top floor turns environment variables
(`PHANTOM_PROFILE`, `PHANTOM_DATA_DIR`, `PHANTOM_CONFIG`) into a `Settings` via `load_settings`
and passes it down.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from phantom_assets.constants import (
    DEFAULT_FOLDS,
    DEFAULT_KAPPA,
    DEFAULT_TEMPERATURE,
    GATE_REFERENCE_TIERS,
    HEURISTIC_TIERS,
    LEARNABLE_TIERS,
)
from phantom_assets.lake import Lake
from phantom_assets.reads import not_recorded, record_setting_read
from phantom_assets.simulate.demand import DEMO_DEMAND

PROFILES = ("demo", "study")
MARKET_BANKS = ("empirical", "kernel")
MARKET_DETECTORS = ("v2", "kernel")
AGENT_VALUATIONS = ("human_marginal", "human_unengaged", "agent_fit")
"""What an agent's principal will pay (`MarketConfig.agent_valuation`)."""
TRAINING_LAWS = ("uniform", "grid")
"""How a training episode's α is drawn from its band: uniform on the interval, or uniform over the
α grid's points inside it (`AgentsConfig.train_law`)."""
DEFAULT_PROFILE = "demo"
DEFAULT_DATA_DIR = Path("data")


@dataclass(frozen=True)
class Bounds:
    """The range of a numeric setting, or of each element of a tuple setting: above `low`
    (strictly if `low_open`) and below `high` (strictly if `high_open`); None: unbounded."""

    low: float | None = 0.0
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def admits(self, value: float) -> bool:
        low, high = self.low, self.high
        above = low is None or (value > low if self.low_open else value >= low)
        below = high is None or (value < high if self.high_open else value <= high)
        return above and below

    def __str__(self) -> str:
        parts = [] if self.low is None else [f"{'>' if self.low_open else '>='} {self.low:g}"]
        parts += [] if self.high is None else [f"{'<' if self.high_open else '<='} {self.high:g}"]
        return " and ".join(parts)


NONNEGATIVE = Bounds()
"""Every numeric setting without bounds of its own: counts, seeds, sizes and shares are >= 0."""
COUNT, POSITIVE, SHARE = Bounds(low=1), Bounds(low_open=True), Bounds(high=1)
BOUNDS_KEY = "bounds"


def bounded(default: Any, bounds: Bounds) -> Any:
    """A dataclass field with its range (checked when settings are loaded: `_apply`)."""
    return field(default=default, metadata={BOUNDS_KEY: bounds})


def bounds_of(section: type, name: str) -> Bounds:
    """The range of `section.name` (`NONNEGATIVE` unless the field declares its own)."""
    found = next(f for f in dataclasses.fields(section) if f.name == name)
    return found.metadata.get(BOUNDS_KEY, NONNEGATIVE)


class SettingsSection:
    """Base of the settings sections: reading one of a section's fields reports `section.field`
    to `reads` (recorded only while an asset's body runs), so what an asset reads can be held
    against what its code version hashes."""

    SECTION: ClassVar[str] = ""
    UNRECORDED: ClassVar[frozenset[str]] = frozenset()
    """Fields that are not logic (where the data lives, the profile's name)."""

    def __init_subclass__(cls, section: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.SECTION = section

    def __getattribute__(self, name: str) -> Any:
        cls = type(self)
        if name in cls.__dataclass_fields__ and name not in cls.UNRECORDED:  # type: ignore[attr-defined]
            value = object.__getattribute__(self, name)
            if not isinstance(value, SettingsSection):  # a section's own fields report themselves
                record_setting_read(f"{cls.SECTION}.{name}" if cls.SECTION else name)
            return value
        return object.__getattribute__(self, name)


@dataclass(frozen=True)
class SimulationConfig(SettingsSection, section="simulation"):
    """Knobs of `phantom simulate` (the storefront session simulator).

    Attributes:
        seed: seed of the simulated demo corpus.
        humans_per_store: human subjects simulated per store; each does one task in one
            session or two (a first look, then a return visit).
        agents_per_store: LLM-agent subjects per store; each splits its task over several clean
            sessions and buys from a fresh one.
        separability: 1.0 = the default behavioural gap between the classes; 0.0 = agents
            behave exactly like humans (the honesty setting: nothing may certify).
        price_test_arms: the demo storefront's randomized price test, one level per experiment
            (× its prices); [1.0]: no price test (the demand is then not identified).
        engagement_slope: β of the demo world's valuation μ + β·g(s) + σ·ε; 0: engagement says
            nothing about willingness to pay (`simulate.demand`).
        agents_search_before_buying: an agent's buy session searches and filters again before it
            goes to the product its reconnaissance found: its engagement at the quote stays 0,
            but its behaviour before it is there for the detector to see -- the planted world
            where a detector finds what engagement cannot (false: it goes straight there).
    """

    seed: int = 20251130
    humans_per_store: int = bounded(600, COUNT)
    agents_per_store: int = 60
    separability: float = bounded(1.0, SHARE)
    price_test_arms: tuple[float, ...] = bounded(DEMO_DEMAND.arms, POSITIVE)
    engagement_slope: float = DEMO_DEMAND.beta
    agents_search_before_buying: bool = False


@dataclass(frozen=True)
class FingerprintConfig(SettingsSection, section="fingerprint"):
    """Transition kernels, divergence scores and the separability report
    (docs/method.md#transition-kernels).

    Attributes:
        kappa: κ, additive smoothing of the transition kernels; 0 = the pure maximum-likelihood
            estimate.
        folds: cross-fitting folds, assigned by experiment (one subject's sessions share a fold).
        temperature: T of the agent probability f = σ(gap / T).
        calibration: the f every downstream asset uses: "temperature" (σ(gap / T)) or
            "logistic" (the out-of-fold logistic calibration of the gap); both are reported.
        max_prefix: longest prefix, in events, of the accuracy-by-prefix curve.
        quote_prefix_events: the prefix lengths, in events, of the quote-time detectors' recall
            table (`quote_detector`; the quote itself is always reported).
        bootstrap_draws: resamples of the separability report's AUC interval and of every
            contaminated dataset's α̂ interval.
        permutation_draws: permutations B of the separability test (its smallest p is
            1/(B + 1)).
        seed: seed of the separability report's permutations and resamples.
    """

    kappa: float = DEFAULT_KAPPA
    folds: int = bounded(DEFAULT_FOLDS, Bounds(low=2))
    temperature: float = bounded(DEFAULT_TEMPERATURE, POSITIVE)
    calibration: str = "temperature"
    max_prefix: int = bounded(12, COUNT)
    quote_prefix_events: tuple[int, ...] = bounded((1, 2, 3, 5, 8), COUNT)
    bootstrap_draws: int = bounded(1000, COUNT)
    permutation_draws: int = bounded(1000, COUNT)
    seed: int = 11


@dataclass(frozen=True)
class AgentsConfig(SettingsSection, section="agents"):
    """Agent traffic: the share α of shoppers who send an LLM agent, and the clean sessions K each
    agent reconnoitres in. The one home of every α and K grid of the pipeline.

    Attributes:
        alpha_grid: α of the contaminated datasets, the COI erosion, the oracle and the evaluation.
        train_alphas: the nominal α of a policy's training band (they name the policy keys).
        train_alpha_radius: r of the training band α0 ± r ∩ [0, 1] around a training α0: every
            training episode runs at an α drawn from it (and a K from `k_grid`), so a policy
            does well only by reading α̂ (docs/method.md#policy-tiers). 0: one training α.
        train_law: how the episode's α is drawn from the band (`TRAINING_LAWS`): "uniform" on
            the interval, or "grid": uniform over the `alpha_grid` points inside it; K is
            uniform over `k_grid` either way.
        nominal_k: K of the market's nominal env (training, the headline COI_A(K), stress rows).
        k_grid: K of the oracle and of the evaluation.
        erosion_k_grid: K of the COI-erosion curve (the nominal K is always added).
        robust_k_set: K candidates of the robust adversary.
        robust_alpha_candidates: α candidates of the adversary, evenly spaced over the ambiguity
            interval around the nominal α.
        ambiguity_radius_w1: ε of that interval, in engagement units (see `market.spec`).
        stress_radius: r of the stress band α0 ± r of the evaluation
            (docs/method.md#evaluation-protocol).
        evasion_thetas: the evasion shares θ the ledger sweeps: agents that draw a share θ of
            their transitions and timing from the human law (docs/detector.md#agents-that-adapt;
            0 is always included).
        evasion_band: θ up to which agents are assumed to adapt (declared; one of
            `evasion_thetas`, so the band's edge is evaluated): the ledger's worst-case value
            beyond engagement and the certificate's gate are over the swept θ in [0, band].
    """

    alpha_grid: tuple[float, ...] = bounded((0.0, 0.5, 1.0), SHARE)
    train_alphas: tuple[float, ...] = bounded((0.5,), SHARE)
    train_alpha_radius: float = bounded(0.5, SHARE)
    train_law: str = "uniform"
    nominal_k: int = bounded(8, COUNT)
    k_grid: tuple[int, ...] = bounded((2, 8), COUNT)
    erosion_k_grid: tuple[int, ...] = bounded((1, 2, 4, 8, 16), COUNT)
    robust_k_set: tuple[int, ...] = bounded((2, 8, 16), COUNT)
    robust_alpha_candidates: int = bounded(3, COUNT)
    ambiguity_radius_w1: float = 4.0
    stress_radius: float = bounded(0.2, SHARE)
    evasion_thetas: tuple[float, ...] = bounded((0.0, 0.25, 0.5, 1.0), SHARE)
    evasion_band: float = bounded(0.25, SHARE)

    def __post_init__(self) -> None:
        grids = {
            "alpha_grid": self.alpha_grid,
            "train_alphas": self.train_alphas,
            "evasion_thetas": self.evasion_thetas,
        }
        for name, grid in grids.items():
            if not grid or any(not 0.0 <= a <= 1.0 for a in grid):
                raise ValueError(f"[agents] {name} must be a non-empty list in [0, 1]: {grid!r}")
        if len(set(self.alpha_grid)) < 2:
            raise ValueError(
                f"[agents] alpha_grid needs at least two values: the benchmark measures how "
                f"every metric moves with α, got {self.alpha_grid!r}"
            )
        ks = {
            "k_grid": self.k_grid,
            "erosion_k_grid": self.erosion_k_grid,
            "robust_k_set": self.robust_k_set,
        }
        for name, grid in ks.items():
            if not grid or any(int(k) != k or k < 1 for k in grid):
                raise ValueError(f"[agents] {name} must be a non-empty list of K >= 1: {grid!r}")
        if self.nominal_k < 1 or self.robust_alpha_candidates < 1:
            raise ValueError(
                f"[agents] nominal_k and robust_alpha_candidates must be >= 1: "
                f"{self.nominal_k!r}, {self.robust_alpha_candidates!r}"
            )
        radii = (self.ambiguity_radius_w1, self.stress_radius, self.train_alpha_radius)
        if min(radii) < 0:
            raise ValueError(
                f"[agents] ambiguity_radius_w1, stress_radius and train_alpha_radius "
                f"must be >= 0: {radii!r}"
            )
        if self.train_law not in TRAINING_LAWS:
            raise ValueError(
                f"[agents] train_law must be one of {TRAINING_LAWS}, got {self.train_law!r}"
            )
        if 0.0 not in self.evasion_thetas:
            raise ValueError(
                f"[agents] evasion_thetas must include 0 (agents as logged), got "
                f"{self.evasion_thetas!r}"
            )
        if self.evasion_band not in self.evasion_thetas:
            raise ValueError(
                f"[agents] evasion_band {self.evasion_band!r} must be one of evasion_thetas "
                f"{self.evasion_thetas!r}: the stress band's edge is evaluated, not interpolated"
            )


@dataclass(frozen=True)
class ContaminationConfig(SettingsSection, section="contamination"):
    """Generator G(α) (docs/method.md#contamination-generator); its α grid is
    `AgentsConfig.alpha_grid`.

    Attributes:
        monotonic_tolerance: how far mean f may drop from one α to the next before the
            `mean_f_rises_with_alpha` check warns.
        seed: seed of the synthetic agent sessions (each store × α partition adds its offset).
    """

    monotonic_tolerance: float = bounded(0.02, SHARE)
    seed: int = 13


@dataclass(frozen=True)
class MarketConfig(SettingsSection, section="market"):
    """The simulated market compiled per store (docs/method.md#the-market): session-based quoting,
    agents that reconnoitre in K sessions, detector-aware quoting, robustness over (α, K) (the K
    and α sets are `AgentsConfig`'s).

    The store's products, anchors, markup curve and quote noise come from its price logs
    (`store_prices`), its demand from its purchase decisions (`store_demand`), its shoppers from
    its labelled sessions. What the logs cannot identify is *declared* here -- the marginal
    cost, the quote cap, the agents' valuation law, the demand where the store runs no price
    test -- and `market_sensitivity` sweeps it over the `sensitivity_*` grids. A store without
    usable price logs gets the declared defaults (`declared_*`; its reports say so).

    Attributes:
        bank: "empirical" (the store's real labelled sessions, out-of-fold prefix f) or "kernel"
            (chains sampled from the fitted kernels and scored by them: in-model detection).
        detector: the quote-time detector the market quotes with: "v2" (kernel statistic,
            inter-event timing and dwell in a classifier, `quote_detector`) or "kernel" (the
            kernel statistic alone); the ledger reports both. A kernel bank has no timing: it
            always quotes with "kernel".
        shoppers_per_step: shoppers arriving per step (a pricing period).
        base_levels: the starting action grid's base price levels, × each product's anchor (the
            compiled grid is centred on the store's best responses: docs/method.md#the-action-grid).
        markup_multiples: the starting grid's engagement markups, × the store's fitted markup m
            (1 = the store's own pricing, the undefended engine's).
        detector_strengths: δ; 0 = the undefended engine.
        agent_valuation: what an agent's principal will pay: "human_marginal" (like the store's
            humans: the valuation the shopper would have had browsing herself; declared),
            "human_unengaged" (like a human who does not engage: μ + σ·ε) or "agent_fit" (the
            agents' own fitted law, where the logs identify it).
        valuation_sd: σ of the valuation where the demand is declared (revealed preference).
        declared_in_market: π where the demand is declared and no human decision was logged.
        store_replicates: replicates of the store's sample (a Poisson bootstrap by experiment):
            the demand's refits, and what every episode draws its session bank and demand from.
        min_price_variation: least SD of log(price / anchor) at equal engagement for the demand
            to count as identified (a price test).
        cost_share: marginal cost p_low as a share of the anchor (declared).
        price_cap: highest quote p_high as a multiple of the anchor (declared).
        reference_engagement_share: s_ref, the engagement a flagged session is quoted as, × the
            mean human engagement at the quote (a policy scale, declared).
        detector_fpr: the detector flags a session whose quote-time f exceeds the threshold τ
            that flags this share of the store's human sessions (its false-positive rate).
        engagement_scale_share: s0 of the markup curve, × the mean human engagement at the quote,
            where the price logs cannot identify it (declared).
        declared_markup, declared_quote_noise, declared_products, declared_anchor_range: the
            store without price logs (anchors uniform in the range).
        sensitivity_cost_shares, sensitivity_price_caps: the other cost shares and caps
            `market_sensitivity` tries (one declared term at a time).
        sensitivity_agent_valuations: the other principals' valuation laws it tries.
        sensitivity_in_market: the π values it tries where the demand is declared.
        sensitivity_engagement_scales: s0 values (× the declared s0) it tries when s0 is
            declared (not identified by the price logs).
        lam: leakage charge in the reward; 0 = leakage measured, not charged.
        episode_steps: steps per episode.
        chain_bank_size: chains per class of a kernel bank.
    """

    bank: str = "empirical"
    detector: str = "v2"
    shoppers_per_step: int = bounded(100, COUNT)
    base_levels: tuple[float, ...] = bounded((0.7, 0.85, 1.0, 1.15, 1.3), POSITIVE)
    markup_multiples: tuple[float, ...] = (0.0, 1.0, 2.0)
    detector_strengths: tuple[float, ...] = bounded((0.0, 0.5, 1.0), SHARE)
    agent_valuation: str = "human_marginal"
    valuation_sd: float = bounded(0.25, POSITIVE)
    declared_in_market: float = bounded(0.5, Bounds(low_open=True, high=1))
    store_replicates: int = bounded(200, Bounds(low=2))
    min_price_variation: float = 0.03
    cost_share: float = bounded(0.5, Bounds(high=1, high_open=True))
    price_cap: float = bounded(2.5, Bounds(low=1, low_open=True))
    reference_engagement_share: float = bounded(3.0, POSITIVE)
    detector_fpr: float = bounded(0.02, Bounds(low_open=True, high=1, high_open=True))
    engagement_scale_share: float = bounded(3.0, POSITIVE)
    declared_markup: float = 0.5
    declared_quote_noise: float = 0.2
    declared_products: int = bounded(10, COUNT)
    declared_anchor_range: tuple[float, float] = (90.0, 110.0)
    sensitivity_cost_shares: tuple[float, ...] = bounded((0.3, 0.7), Bounds(high=1, high_open=True))
    sensitivity_price_caps: tuple[float, ...] = bounded((2.0, 3.0), Bounds(low=1, low_open=True))
    sensitivity_agent_valuations: tuple[str, ...] = ("human_unengaged",)
    sensitivity_in_market: tuple[float, ...] = bounded((0.25, 1.0), Bounds(low_open=True, high=1))
    sensitivity_engagement_scales: tuple[float, ...] = bounded((1.0 / 3.0, 2.0), POSITIVE)
    lam: float = 0.0
    episode_steps: int = bounded(25, COUNT)
    chain_bank_size: int = bounded(20_000, COUNT)

    def __post_init__(self) -> None:
        if self.bank not in MARKET_BANKS:
            raise ValueError(f"[market] bank must be one of {MARKET_BANKS}, got {self.bank!r}")
        if self.detector not in MARKET_DETECTORS:
            raise ValueError(
                f"[market] detector must be one of {MARKET_DETECTORS}, got {self.detector!r}"
            )
        if not 0.0 <= self.cost_share < 1.0 < self.price_cap:
            raise ValueError(
                f"[market] need 0 <= cost_share < 1 < price_cap, got "
                f"{self.cost_share!r}, {self.price_cap!r}"
            )
        laws = (self.agent_valuation, *self.sensitivity_agent_valuations)
        if any(law not in AGENT_VALUATIONS for law in laws):
            raise ValueError(
                f"[market] agent_valuation and sensitivity_agent_valuations must be "
                f"in {AGENT_VALUATIONS}, got {laws!r}"
            )
        if self.valuation_sd <= 0 or not 0 < self.declared_in_market <= 1:
            raise ValueError(
                f"[market] need valuation_sd > 0 and 0 < declared_in_market <= 1, "
                f"got {self.valuation_sd!r}, {self.declared_in_market!r}"
            )
        if self.store_replicates < 2 or self.min_price_variation < 0:
            values = (self.store_replicates, self.min_price_variation)
            raise ValueError(
                f"[market] need store_replicates >= 2 and min_price_variation >= 0, got {values!r}"
            )
        costs, caps = self.sensitivity_cost_shares, self.sensitivity_price_caps
        shares = self.sensitivity_in_market
        if (
            any(not 0 <= c < 1 for c in costs)
            or any(c <= 1 for c in caps)
            or any(not 0 < p <= 1 for p in shares)
        ):
            raise ValueError(
                "[market] sensitivity cost shares must be in [0, 1), caps > 1 and "
                "in-market shares in (0, 1]"
            )


@dataclass(frozen=True)
class TrainingConfig(SettingsSection, section="training"):
    """Policy tiers and budgets (docs/method.md#policy-tiers).

    The ablation tier also trains in the two charged modes (λ = `ablation_lam`, with and without
    the adversary), so the effects of λ and of the adversary can be separated.

    Attributes:
        tiers: the policy tiers trained per store; the static engine and the tuned-static tier
            are required (the certificate compares every candidate with them).
        timesteps: environment steps of training per learnable policy and training seed.
        seeds: training seeds; each policy is trained once per seed, and the seeds are averaged
            within an episode seed before any interval.
        device: torch device of the SB3 tiers ("cpu" or "cuda").
        torch_threads: torch intra-op threads while training and evaluating the SB3 tiers
            (fixed, so a rerun reproduces the weights).
        envs: markets an SB3 tier collects experience from in step (one batched network call
            per step for all of them; `TrainingParams.envs`): 1 on the demo, 5 in the study.
        ablation_tier: the tier also trained in the two charged modes (the λ × adversary
            factorial).
        ablation_lam: λ, the leak charged in the reward of the charged modes.
    """

    tiers: tuple[str, ...] = (
        "static",
        "tuned",
        "defended",
        "surge",
        "linear",
        "qtable",
        "ppo",
        "dqn",
    )
    timesteps: int = bounded(10_000, COUNT)
    seeds: tuple[int, ...] = (0,)
    device: str = "cpu"
    torch_threads: int = bounded(1, COUNT)
    envs: int = bounded(1, COUNT)
    ablation_tier: str = "dqn"
    ablation_lam: float = 1.0

    def __post_init__(self) -> None:
        if self.envs < 1:
            raise ValueError(f"[training] envs must be >= 1, got {self.envs!r}")
        missing = [tier for tier in GATE_REFERENCE_TIERS if tier not in self.tiers]
        if missing:
            raise ValueError(
                f"[training] tiers must include {missing}: the certificate compares "
                f"every candidate with them"
            )
        unknown = [tier for tier in self.tiers if tier not in HEURISTIC_TIERS + LEARNABLE_TIERS]
        if unknown:
            raise ValueError(
                f"[training] tiers {unknown} are unknown: the tiers are "
                f"{HEURISTIC_TIERS + LEARNABLE_TIERS}"
            )
        learnable = [tier for tier in self.tiers if tier in LEARNABLE_TIERS]
        if self.ablation_tier not in learnable:
            raise ValueError(
                f"[training] ablation_tier {self.ablation_tier!r} must be one of the learnable "
                f"tiers trained here, {learnable} (it is also trained in the charged modes)"
            )


@dataclass(frozen=True)
class EvaluationConfig(SettingsSection, section="evaluation"):
    """Evaluation protocol (docs/method.md#evaluation-protocol) and the gate's disjoint seed sets
    (docs/method.md#certification); its α and K grids and stress band are `AgentsConfig`'s.

    Episode seeds `seed … seed+episodes−1` serve the curves and the gate's *selection*; the
    held-out seeds `test_seed … test_seed+test_episodes−1` are used only to test the selected
    candidate, so the two ranges must not overlap.

    Attributes:
        episodes: selection episode seeds per (α, K), common to every policy: the curves' n and
            the gate's selection.
        test_episodes: held-out episode seeds, used only to test the gate's candidates (the
            gate certifies only from 24).
        seed: first selection episode seed.
        test_seed: first held-out episode seed.
        gate_candidates: candidates the gate tests on the held-out seeds (Holm-corrected).
        max_human_harm: the gate's bound on humans' total harm: what they overpay plus the spend
            of purchases lost, as a share of their spend under the best undefended response.
    """

    episodes: int = bounded(8, COUNT)
    test_episodes: int = bounded(24, COUNT)
    seed: int = 17
    test_seed: int = 100_017
    gate_candidates: int = bounded(1, COUNT)
    max_human_harm: float = 0.02

    def __post_init__(self) -> None:
        if self.episodes < 1 or self.test_episodes < 1 or self.gate_candidates < 1:
            counts = (self.episodes, self.test_episodes, self.gate_candidates)
            raise ValueError(f"episodes, test_episodes, gate_candidates must be >= 1: {counts}")
        selection = range(self.seed, self.seed + self.episodes)
        test = range(self.test_seed, self.test_seed + self.test_episodes)
        if selection.start < test.stop and test.start < selection.stop:
            raise ValueError(
                f"evaluation seeds {selection} and held-out test seeds {test} "
                f"overlap; move test_seed"
            )

    @property
    def selection_seeds(self) -> tuple[int, ...]:
        """Episode seeds of the curves and of the gate's selection."""
        return tuple(range(self.seed, self.seed + self.episodes))

    @property
    def test_seeds(self) -> tuple[int, ...]:
        """Held-out episode seeds, used only by the gate's test."""
        return tuple(range(self.test_seed, self.test_seed + self.test_episodes))


@dataclass(frozen=True)
class Settings(SettingsSection):
    """Everything a PHANTOM run is parameterised by. Frozen; `config_hash` identifies it.

    Attributes:
        profile: the profile the values were resolved from ("demo" or "study").
        data_dir: the storage root: lake, warehouse, reports, logs (`PHANTOM_DATA_DIR`).
        accept_legacy_store: keep rows of the legacy store `shop` instead of quarantining them.
        simulation: `[simulation]`: the demo corpus of `phantom simulate`.
        agents: `[agents]`: the share α of shoppers who send an agent and the clean sessions K
            each agent runs; every α and K grid.
        fingerprint: `[fingerprint]`: transition kernels, divergence scores, separability.
        contamination: `[contamination]`: the contaminated datasets G(α).
        market: `[market]`: the simulated market compiled per store.
        training: `[training]`: policy tiers and training budgets.
        evaluation: `[evaluation]`: the evaluation protocol and the certification gate.
    """

    UNRECORDED: ClassVar[frozenset[str]] = frozenset({"profile", "data_dir"})

    profile: str = DEFAULT_PROFILE
    data_dir: Path = DEFAULT_DATA_DIR
    accept_legacy_store: bool = False
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    agents: AgentsConfig = field(default_factory=AgentsConfig)
    fingerprint: FingerprintConfig = field(default_factory=FingerprintConfig)
    contamination: ContaminationConfig = field(default_factory=ContaminationConfig)
    market: MarketConfig = field(default_factory=MarketConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)

    # --- storage layout (docs/architecture.md#lake-layout) ---------------------------------------
    @property
    def incoming_dir(self) -> Path:
        return self.data_dir / "incoming"

    @property
    def lake_dir(self) -> Path:
        return self.data_dir / "lake"

    @property
    def lake(self) -> Lake:
        """Where every lake artifact lives (the one owner of the layout)."""
        return Lake(self.lake_dir)

    @property
    def warehouse_path(self) -> Path:
        # Never name the DuckDB file like a schema inside it ("main", "phantom", ...).
        return self.data_dir / "warehouse.duckdb"

    @property
    def reports_dir(self) -> Path:
        return self.data_dir / "reports"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def publish_dir(self) -> Path:
        return self.data_dir / "publish"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view of the settings (paths as strings)."""
        return json.loads(json.dumps(dataclasses.asdict(self), default=str))

    @property
    def config_hash(self) -> str:
        """Short content hash of everything except the storage root (which is not semantics)."""
        payload = {k: v for k, v in self.as_dict().items() if k != "data_dir"}
        blob = json.dumps(payload, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


_STUDY_OVERRIDES: dict[str, dict[str, Any]] = {
    "simulation": {"humans_per_store": 600, "agents_per_store": 200},
    "agents": {
        "alpha_grid": tuple(round(0.1 * i, 1) for i in range(11)),
        "train_alphas": (0.0, 0.3, 0.5, 0.7, 1.0),
        "k_grid": (1, 2, 4, 8, 16),
    },
    "training": {
        "tiers": ("static", "tuned", "defended", "surge", "linear", "qtable", "ppo", "a2c", "dqn"),
        "timesteps": 60_000,
        "seeds": (0, 1, 2),
        "envs": 5,
    },
    "evaluation": {
        "episodes": 32,
        "test_episodes": 32,
    },
}


# What a value of each annotated field type must be, as the error message names it.
_EXPECTED = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    Path: "a path (a string)",
}
_ACCEPTED: dict[Any, Any] = {bool: bool, int: int, float: int | float, str: str, Path: str | Path}


def _type_problem(annotation: Any, value: Any) -> str | None:
    """What is wrong with `value` for a field annotated `annotation` (None: it fits).

    Scalars are bool, int, float (an int is a number too), str and Path; `tuple[T, ...]` is given
    as a TOML array of T. `true` is not a number. Sections are checked field by field by the caller.
    """
    if typing.get_origin(annotation) is tuple:
        if not isinstance(value, list | tuple):
            return f"expected a list, got {value!r}"
        item = typing.get_args(annotation)[0]
        problems = ((i, _type_problem(item, element)) for i, element in enumerate(value))
        return next((f"item {i}: {problem}" for i, problem in problems if problem), None)
    if annotation not in _ACCEPTED:
        return None
    is_bool = isinstance(value, bool)
    fits = (
        is_bool if annotation is bool else isinstance(value, _ACCEPTED[annotation]) and not is_bool
    )
    return None if fits else f"expected {_EXPECTED[annotation]}, got {value!r}"


def _range_problem(section: type, name: str, value: Any) -> str | None:
    """Why a (type-checked) value is outside its field's `Bounds`, or None."""
    values = value if isinstance(value, list | tuple) else [value]
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if not numbers:
        return None
    bounds = bounds_of(section, name)
    outside = next((v for v in numbers if not bounds.admits(v)), None)
    return None if outside is None else f"{outside!r} is out of range: must be {bounds}"


def _apply(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """Return `settings` with nested `{section: {field: value}}` overrides applied and checked.

    Each value is checked against its field's annotation and range (`Bounds`), so `kappa =
    "half"` fails here (`[fingerprint] kappa: expected a number, got 'half'`), as does `folds = -3`
    (`[fingerprint] folds: -3 is out of range: must be >= 2`), instead of deep inside a run.
    """
    changes: dict[str, Any] = {}
    hints = typing.get_type_hints(Settings)
    for key, value in overrides.items():
        if not hasattr(settings, key):
            raise ValueError(f"unknown configuration key {key!r}")
        current = getattr(settings, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise ValueError(f"configuration section {key!r} must be a table, got {value!r}")
            fields = {f.name for f in dataclasses.fields(current)}
            unknown = set(value) - fields
            if unknown:
                raise ValueError(f"unknown keys in [{key}]: {sorted(unknown)}")
            section_hints = typing.get_type_hints(type(current))
            for name, item in value.items():
                if (problem := _type_problem(section_hints[name], item)) is not None:
                    raise ValueError(f"[{key}] {name}: {problem}")
                if (problem := _range_problem(type(current), name, item)) is not None:
                    raise ValueError(f"[{key}] {name}: {problem}")
            coerced = {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
            changes[key] = dataclasses.replace(current, **coerced)
        else:
            if (problem := _type_problem(hints[key], value)) is not None:
                raise ValueError(f"{key}: {problem}")
            changes[key] = Path(value) if key == "data_dir" else value
    return dataclasses.replace(settings, **changes)


def load_settings(
    profile: str = DEFAULT_PROFILE,
    data_dir: str | Path | None = None,
    config_file: str | Path | None = None,
) -> Settings:
    """Build the settings: profile defaults, then the optional TOML file, then `data_dir`.

    Raises:
        ValueError: for an unknown profile, a missing or unparsable config file, an unknown key
            in it or a value of the wrong type (the message names the file, section and key).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    settings = Settings(profile=profile)
    if profile == "study":
        settings = _apply(settings, _STUDY_OVERRIDES)
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ValueError(f"config file {path} does not exist")
        try:
            with path.open("rb") as handle:
                file_overrides = tomllib.load(handle)
            settings = _apply(settings, file_overrides.get(profile, file_overrides))
        except (ValueError, TypeError) as error:  # TOMLDecodeError is a ValueError
            raise ValueError(f"config file {path}: {error}") from error
    if data_dir is not None:
        settings = dataclasses.replace(settings, data_dir=Path(data_dir))
    return settings


def settings_from_dict(values: dict[str, Any]) -> Settings:
    """Inverse of `Settings.as_dict` (validated like a config file; not a read of the settings)."""
    values = dict(values)
    with not_recorded():
        return _apply(Settings(profile=values.pop("profile", DEFAULT_PROFILE)), values)
