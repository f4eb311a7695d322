"""Compile one store's market (docs/method.md#the-market): its class kernels, its detector, its
price model, its demand, its session banks and the market settings -> a `MarketSpec`.

Every term the logs identify comes from them, with its source recorded in `MarketSpec.sources`:
the products and their anchors, the share of shoppers wanting each, the markup curve and the
quote noise (`store_prices`), the engagement signal the store prices on, the demand -- what
shoppers pay given their engagement, and the share in the market (`store_demand`) -- and the
shoppers (the store's labelled sessions, out-of-fold f: the empirical bank), with the store's
replicates of its sample (`market.replicates`). What they cannot identify is declared in
`MarketConfig` -- marginal cost, quote cap, what agents' principals pay, the reference engagement
of a flagged session, s0 where the curve does not saturate, the demand where the store runs no
price test (revealed preference: its own pricing optimal for its humans) -- and
`market_sensitivity` sweeps it. A store without usable price logs gets the declared anchors
(uniform in `declared_anchor_range`), markup and noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phantom_assets.config import MARKET_DETECTORS, AgentsConfig, MarketConfig
from phantom_assets.constants import ACTORS, ENGAGEMENT_SIGNALS, KERNEL_STATES
from phantom_assets.market.bank import ChainBank, bank_tables, build_chain_bank
from phantom_assets.market.demand import DemandRecord, revealed_preference
from phantom_assets.market.prices import PriceModel
from phantom_assets.market.quoting import markup_factor
from phantom_assets.market.replicates import session_multiplicities
from phantom_assets.market.spec import BANK_FIELDS, MarketSpec

# Streams of `default_rng(anchor_seed + stream)`: anchors keep the stream the first compiler used.
ANCHOR_STREAM = 1
BANK_STREAM = 2
MAX_CHAIN_LEN = 64
VOLATILITY_COST_SHARE = 0.05
"""η_ux: a unit change of the base level costs this share of a step's anchor revenue (shoppers ×
mean anchor; declared, as in v2: 500 at 100 shoppers and anchors of 100)."""


def anchor_prices(
    n_products: int, anchor_seed: int, price_range: tuple[float, float]
) -> np.ndarray:
    """Declared anchors of a store without price logs: uniform over `price_range`, in cents."""
    rng = np.random.default_rng(anchor_seed + ANCHOR_STREAM)
    return np.round(rng.uniform(*price_range, n_products), 2)


def chain_banks(
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    size: int,
    seed: int,
    f_coef: tuple[float, float],
    signal: str = "demand_proxy",
    states: tuple[str, ...] = KERNEL_STATES,
) -> tuple[ChainBank, ChainBank]:
    """(human, agent) kernel banks of `size` chains each, scored by the fitted pair with f_coef,
    their engagement in `signal` (`constants.ENGAGEMENT_SIGNALS`)."""
    rng = np.random.default_rng(seed)
    weights = ENGAGEMENT_SIGNALS[signal]
    tables = [
        bank_tables(k, kernel_human, kernel_agent, states, weights)
        for k in (kernel_human, kernel_agent)
    ]
    human, agent = (build_chain_bank(t, size, rng, MAX_CHAIN_LEN, f_coef) for t in tables)
    return human, agent


def markup_grid(markup: float, multiples: tuple[float, ...]) -> tuple[float, ...]:
    """The action grid's engagement markups: the store's m times each multiple, sorted, unique."""
    return tuple(sorted({round(multiple * markup, 12) for multiple in multiples}))


def detector_threshold(human_scores: np.ndarray, fpr: float) -> float:
    """τ flagging a share `fpr` of the store's human sessions: the (1 − fpr) quantile of their
    quote-time f (a session is flagged iff f > τ)."""
    if not 0.0 <= fpr < 1.0:
        raise ValueError(f"the detector's false-positive rate must be in [0, 1), got {fpr!r}")
    return float(np.quantile(human_scores, 1.0 - fpr, method="higher"))


def _store_terms(
    prices: PriceModel | None, config: MarketConfig, anchor_seed: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """Products, anchors, demand shares, markup, noise and signal: from the price model when its
    source is the logs, else declared; and the source of each."""
    if prices is not None and prices.source == "logs":
        anchors = prices.anchors.sort("product_id")
        counts = anchors["n_quotes"].to_numpy().astype(np.float64)
        terms = {
            "product_ids": tuple(anchors["product_id"]),
            "anchor": anchors["anchor"].to_numpy(),
            "product_weights": counts / counts.sum(),
            "markup": prices.markup,
            "quote_noise": prices.quote_noise,
            "signal": prices.signal,
        }
        return terms, dict.fromkeys(("anchor", "product_weights", "markup", "quote_noise"), "logs")
    anchor = anchor_prices(config.declared_products, anchor_seed, config.declared_anchor_range)
    terms = {
        "anchor": anchor,
        "markup": config.declared_markup,
        "quote_noise": config.declared_quote_noise,
        "signal": prices.signal if prices is not None else "demand_proxy",
    }
    return terms, dict.fromkeys(("anchor", "product_weights", "markup", "quote_noise"), "declared")


def _demand_terms(
    demand: DemandRecord | None,
    human: ChainBank,
    markup: float,
    s0: float,
    config: MarketConfig,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The human demand (fitted, else revealed preference), what agents' principals pay, and
    the replicates' demand rows (NaN: the point estimate); with the source of each."""
    scale = demand.scale if demand is not None else s0
    human_actor, agent_actor = ACTORS
    if demand is not None and demand.source == "logs":
        point, rows = demand.estimates[human_actor], demand.replicates[human_actor]
        source = "logs"
    else:
        conversion = None if demand is None else demand.conversion
        point = np.array(
            revealed_preference(
                markup_factor(human.engagement, scale),
                markup,
                config.valuation_sd,
                config.cost_share,
                conversion,
                config.declared_in_market,
            )
        )
        rows = np.full((0 if demand is None else config.store_replicates, 4), np.nan)
        source = "declared"
    law, agent_point = config.agent_valuation, point[:3]
    agent_rows = np.full((rows.shape[0], 3), np.nan)
    identified = demand is not None and demand.identified.get(agent_actor, False)
    if law == "agent_fit" and identified:
        agent_point = demand.estimates[agent_actor][:3]  # type: ignore[union-attr]
        agent_rows = demand.replicates[agent_actor][: rows.shape[0], :3]  # type: ignore[union-attr]
    elif law == "agent_fit":  # not identified: the principals pay like the store's humans
        law = "human_marginal"
    terms = {
        "mu_human": point[0],
        "beta_human": point[1],
        "sigma_human": point[2],
        "in_market": point[3],
        "mu_agent": agent_point[0],
        "beta_agent": agent_point[1],
        "sigma_agent": agent_point[2],
        "agent_valuation": law,
        "valuation_scale": scale,
        "demand_replicates": np.column_stack([rows, agent_rows]),
    }
    agent_source = "logs" if law == "agent_fit" else "declared"
    return terms, {"valuation": source, "in_market": source, "agent_valuation": agent_source}


def compile_market_spec(
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    config: MarketConfig,
    anchor_seed: int,
    f_coef: tuple[float, float] = (0.0, 1.0),
    agents: AgentsConfig | None = None,
    prices: PriceModel | None = None,
    sessions: tuple[ChainBank, ChainBank] | None = None,
    demand: DemandRecord | None = None,
    experiments: tuple[Sequence[str], Sequence[str]] | None = None,
    kernel_scores: tuple[np.ndarray, np.ndarray] | None = None,
    **overrides: Any,
) -> MarketSpec:
    """The market of one store.

    Args:
        kernel_human: (S, S) full human kernel over `KERNEL_STATES` (rows = sources).
        kernel_agent: (S, S) full agent kernel.
        config: the market settings (action grid, declared assumptions, episode).
        anchor_seed: seeds the declared anchors and the kernel banks (the store's index).
        f_coef: (a, b) of the store's selected agent score f = σ(a + b·gap).
        agents: the nominal K and the robust (α, K) ambiguity set (default `AgentsConfig()`).
        prices: the store's price model (`store_prices`); None or declared: declared terms.
        sessions: the store's (human, agent) session banks (`bank.session_bank`), scored by
            `config.detector`; used when `config.bank` is "empirical" (required then).
        demand: the store's demand (`store_demand`); None or declared: revealed preference.
        experiments: the experiment id of every session of the empirical banks (the store's
            replicates resample them); None: the banks are not resampled.
        kernel_scores: (human, agent) the kernel-only f of each session of the empirical banks
            when they are scored by detector v2 (the ledger compares both); None: their scores.
        **overrides: any other `MarketSpec` field.

    Raises:
        ValueError: if the empirical bank is configured and no sessions are given.
    """
    agents = agents or AgentsConfig()
    terms, sources = _store_terms(prices, config, anchor_seed)
    signal = terms.pop("signal")
    if config.bank == "empirical":
        if sessions is None:
            raise ValueError("MarketConfig.bank is 'empirical': pass the store's session banks")
        human, agent = sessions
        detector = config.detector
    else:  # sampled chains have no timing: the kernel detector is the only one
        detector, kernel_scores = MARKET_DETECTORS[1], None
        human, agent = chain_banks(
            kernel_human,
            kernel_agent,
            config.chain_bank_size,
            anchor_seed + BANK_STREAM,
            f_coef,
            signal,
        )
    kernel_human_score, kernel_agent_score = kernel_scores or (human.score, agent.score)
    engaged = max(float(human.engagement.mean()), 1e-6)
    fitted_s0 = prices is not None and prices.source == "logs" and prices.s0 is not None
    s0 = float(prices.s0) if fitted_s0 else config.engagement_scale_share * engaged
    markup = float(terms.pop("markup"))
    markups = markup_grid(markup, config.markup_multiples)
    anchor = np.asarray(terms["anchor"], dtype=np.float64)
    banks = {
        f"{actor}_{name}": getattr(bank, name)
        for actor, bank in (("human", human), ("agent", agent))
        for name in BANK_FIELDS
    }
    demand_terms, demand_sources = _demand_terms(demand, human, markup, s0, config)
    replicates = demand_terms["demand_replicates"].shape[0]
    if experiments is not None and config.bank == "empirical" and replicates:
        human_xps, agent_xps = experiments
        demand_terms["human_multiplicity"] = session_multiplicities(human_xps, replicates)
        demand_terms["agent_multiplicity"] = session_multiplicities(agent_xps, replicates)
    sources.update(
        engagement_scale=prices.s0_source if fitted_s0 else "declared",  # type: ignore[union-attr]
        signal="logs" if sources["markup"] == "logs" else "declared",
        bank=config.bank,
        cost_share="declared",
        price_cap="declared",
        reference_engagement="declared",
        detector_threshold="empirical",
        **demand_sources,
    )
    fields: dict[str, Any] = {
        "kernel_human": kernel_human,
        "kernel_agent": kernel_agent,
        **terms,
        **banks,
        **demand_terms,
        "cost_share": config.cost_share,
        "price_cap": config.price_cap,
        "base_levels": config.base_levels,
        "markups": markups,
        "store_markup": markup,
        "detector_strengths": config.detector_strengths,
        "engagement_scale": s0,
        "reference_engagement": config.reference_engagement_share * engaged,
        "detector_threshold": detector_threshold(human.score, config.detector_fpr),
        "detector": detector,
        "human_kernel_score": kernel_human_score,
        "agent_kernel_score": kernel_agent_score,
        "kernel_detector_threshold": detector_threshold(kernel_human_score, config.detector_fpr),
        "agents": agents,
        "shoppers_per_step": config.shoppers_per_step,
        "lam": config.lam,
        "eta_ux": VOLATILITY_COST_SHARE * config.shoppers_per_step * float(anchor.mean()),
        "episode_steps": config.episode_steps,
        "f_intercept": f_coef[0],
        "f_slope": f_coef[1],
        "signal": signal,
        "bank": config.bank,
        "sources": sources,
        **overrides,
    }
    return MarketSpec(**fields)
