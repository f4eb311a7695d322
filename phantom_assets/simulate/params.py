"""Parameters and result type of the storefront session simulator."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from phantom_assets.constants import STORES
from phantom_assets.simulate.demand import DEMO_DEMAND, DemandWorld

__all__ = ["DEFAULT_START", "SimulatedCorpus", "SimulationParams", "params_from"]

DEFAULT_START = datetime(2025, 6, 2, tzinfo=UTC)


@dataclass(frozen=True)
class SimulationParams:
    """Knobs of `simulate_events` (mirrors `phantom_assets.config.SimulationConfig`).

    Attributes:
        seed: Seed of the simulation; same seed, same corpus.
        humans_per_store: Human subjects per store (one experiment each).
        agents_per_store: LLM-agent subjects per store (one experiment each, several sessions).
        separability: 1 = default behavioural gap, 0 = agents identical to humans, between = blend.
        stores: Stores to simulate (subset of `constants.STORES`).
        start: UTC start date; experiments start within two weeks after it.
        demand: The stores' demand, storefront markup and price test (`simulate.demand`).
        agents_search_before_buying: An agent's buy session searches and filters before it goes
            to the product it found (else it goes straight there).
    """

    seed: int
    humans_per_store: int
    agents_per_store: int
    separability: float = 1.0
    stores: tuple[str, ...] = STORES
    start: datetime = DEFAULT_START
    demand: DemandWorld = DEMO_DEMAND
    agents_search_before_buying: bool = False

    def __post_init__(self) -> None:
        """Validate the parameters.

        Raises:
            ValueError: naming the bad value.
        """
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        for name in ("humans_per_store", "agents_per_store"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        if self.humans_per_store + self.agents_per_store == 0:
            raise ValueError("humans_per_store + agents_per_store must be > 0, got 0")
        if not 0.0 <= float(self.separability) <= 1.0:
            raise ValueError(f"separability must be in [0, 1], got {self.separability!r}")
        unknown = [s for s in self.stores if s not in STORES]
        if not self.stores or unknown or len(set(self.stores)) != len(self.stores):
            raise ValueError(f"stores must be distinct values of {STORES}, got {self.stores!r}")
        if self.start.tzinfo is None or self.start.utcoffset() != timedelta(0):
            raise ValueError(f"start must be a UTC datetime, got {self.start!r}")


@dataclass(frozen=True)
class SimulatedCorpus:
    """A simulated corpus.

    Attributes:
        events: One row per record (interactions and price logs): session_id, experiment_id,
            store, ts (Datetime ms UTC), event, page, product_id, price, record_type,
            user_agent, metadata (JSON text), actor, seq; sorted by store, session, seq.
        experiments: One row per experiment with `raw_formats.EXPERIMENT_COLUMNS`.
        params: The parameters that produced it.
        decisions: The world's truth per session (never exported): store, session_id,
            experiment_id, actor, engagement (product views before its quoted view, null
            without one), quote and valuation there (× base price), in_market, decides,
            price_level (its price-test arm × its quote noise).
    """

    events: pl.DataFrame
    experiments: pl.DataFrame
    params: SimulationParams
    decisions: pl.DataFrame | None = None


def params_from(settings_like: Any) -> SimulationParams:
    """Build `SimulationParams` from params, a `SimulationConfig` or a `Settings`.

    Args:
        settings_like: A `SimulationParams` (returned as is), anything with the fields seed,
            humans_per_store, agents_per_store, separability, price_test_arms, engagement_slope,
            agents_search_before_buying
            (a `SimulationConfig`), or anything with such a `.simulation` attribute (a
            `Settings`).

    Raises:
        ValueError: if the object carries no simulation settings.
    """
    if isinstance(settings_like, SimulationParams):
        return settings_like
    config = getattr(settings_like, "simulation", settings_like)
    try:
        return SimulationParams(
            seed=config.seed,
            humans_per_store=config.humans_per_store,
            agents_per_store=config.agents_per_store,
            separability=float(config.separability),
            agents_search_before_buying=bool(config.agents_search_before_buying),
            demand=dataclasses.replace(
                DEMO_DEMAND,
                arms=tuple(float(a) for a in config.price_test_arms),
                beta=float(config.engagement_slope),
            ),
        )
    except AttributeError as e:
        raise ValueError(
            f"{type(settings_like).__name__} carries no simulation settings "
            "(expected SimulationParams, SimulationConfig or Settings)"
        ) from e
