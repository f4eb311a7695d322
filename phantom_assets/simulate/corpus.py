"""`simulate_events`: a full corpus of storefront records for the configured stores."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import polars as pl

from phantom_assets.constants import INTERACTION, PRICE_LOG, STORES
from phantom_assets.schema.raw_formats import EXPERIMENT_COLUMNS
from phantom_assets.simulate.behaviour import (
    PRICED_EVENTS,
    Emissions,
    SessionPlan,
    decision_views,
    merge_emissions,
    run_sessions,
)
from phantom_assets.simulate.catalog import Catalog, catalog_for
from phantom_assets.simulate.demand import DemandWorld
from phantom_assets.simulate.layout import Layout, lay_out
from phantom_assets.simulate.params import SimulatedCorpus, SimulationParams
from phantom_assets.simulate.planning import plan_sessions
from phantom_assets.simulate.profiles import (
    AGENT_REFERRERS,
    AGENT_USER_AGENTS,
    HUMAN_REFERRERS,
    HUMAN_USER_AGENTS,
)
from phantom_assets.simulate.records import EVENT_NAMES, metadata_json, record_columns
from phantom_assets.simulate.tasks import Task, task_utilities, tasks_for
from phantom_assets.simulate.timing import PRICE_LOG_DELAY_MS, event_offsets_ms, session_starts_ms

__all__ = ["EVENT_COLUMNS", "simulate_events"]

logger = logging.getLogger(__name__)

EVENT_COLUMNS: tuple[str, ...] = (
    "session_id",
    "experiment_id",
    "store",
    "ts",
    "event",
    "page",
    "product_id",
    "price",
    "record_type",
    "user_agent",
    "metadata",
    "actor",
    "seq",
)
AGENT_SUBJECTS = ("gpt-4o-operator", "claude-computer-use", "browser-use-llama", "gemini-agent")
_PRICE_QUOTE_CODE = len(EVENT_NAMES) - 1
_PRICED_CODES = [EVENT_NAMES.index(e) for e in PRICED_EVENTS]


def simulate_events(params: SimulationParams) -> SimulatedCorpus:
    """Simulate the storefront records of every configured store.

    Each store draws from its own generator seeded by `(params.seed, store index in STORES)`,
    so a store's data does not depend on which other stores are simulated.

    Args:
        params: Simulation parameters.

    Returns:
        The corpus (events sorted by store, session, seq; experiments in the same order).
    """
    events, experiments, decisions = [], [], []
    for store in params.stores:
        rng = np.random.default_rng([params.seed, STORES.index(store)])
        store_events, store_xps, store_decisions = _simulate_store(store, params, rng)
        events.append(store_events)
        experiments.append(store_xps)
        decisions.append(store_decisions)
    corpus = SimulatedCorpus(
        pl.concat(events), pl.concat(experiments), params, pl.concat(decisions)
    )
    logger.info(
        "simulated %d records in %d sessions (seed %d, separability %.2f)",
        corpus.events.height,
        corpus.events["session_id"].n_unique(),
        params.seed,
        params.separability,
    )
    return corpus


def _pick(pool: tuple[tuple[str, float], ...], n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw `n` strings from a (string, weight) pool."""
    weights = np.array([w for _, w in pool])
    return np.array([s for s, _ in pool])[rng.choice(len(pool), size=n, p=weights / weights.sum())]


def _hex_ids(prefix: str, n: int, n_hex: int, rng: np.random.Generator) -> np.ndarray:
    """`n` random ids `<prefix><n_hex hex digits>`."""
    digits = np.array(list("0123456789abcdef"))[rng.integers(0, 16, size=(n, n_hex))]
    return np.char.add(prefix, digits.view(f"<U{n_hex}").ravel())


def _session_frame(
    layout: Layout, tasks: tuple[Task, ...], store: str, rng: np.random.Generator
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-session attributes (ids, user agent, referrer, task) and the experiments frame."""
    n_xp, n_s, xp = layout.xp_task.size, layout.n_sessions, layout.session_xp
    xp_ids = _hex_ids("xp-", n_xp, 12, rng)
    # Agents use their automation-ish pools with probability `separability` per session.
    agentish = layout.session_is_agent & (rng.random(n_s) < layout.separability)
    user_agent = np.where(
        agentish, _pick(AGENT_USER_AGENTS, n_s, rng), _pick(HUMAN_USER_AGENTS, n_xp, rng)[xp]
    )
    referrer = np.where(
        agentish, _pick(AGENT_REFERRERS, n_s, rng), _pick(HUMAN_REFERRERS, n_s, rng)
    )
    low = np.array([t.date_range[0] for t in tasks])[layout.xp_task]
    high = np.array([t.date_range[1] for t in tasks])[layout.xp_task]
    date_index = rng.integers(low, high + 1)[xp]
    subject = np.where(
        layout.xp_is_agent,
        np.char.add(_pick(tuple((a, 1.0) for a in AGENT_SUBJECTS), n_xp, rng), "_"),
        f"participant_{store}_",
    )
    sessions = pl.DataFrame(
        {
            "s": np.arange(n_s),
            "session_id": _hex_ids("s-", n_s, 20, rng),
            "experiment_id": xp_ids[xp],
            "user_agent": user_agent,
            "referrer": referrer,
            "date_index": date_index,
            "task": layout.xp_task[xp],
            "actor": np.where(layout.session_is_agent, "agent", "human"),
        }
    )
    experiments = pl.DataFrame(
        {
            "experimentId": xp_ids,
            "xp_human_only": ~layout.xp_is_agent,
            "xp_market_mode": np.full(n_xp, store),
            "xp_task_id": np.array([t.task_id for t in tasks])[layout.xp_task],
            "subject_name": np.char.add(subject, np.char.zfill(np.arange(n_xp).astype(str), 4)),
        }
    ).select(EXPERIMENT_COLUMNS)
    return sessions, experiments


def _lookup_frames(
    catalog: Catalog, tasks: tuple[Task, ...], affordable: np.ndarray
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Product attributes by catalog index and task attributes by task index."""
    products = pl.DataFrame(
        [
            {
                "prod": i,
                "product_id": p.product_id,
                "product_name": p.name,
                "roomType": p.room_type,
                "nights": p.nights,
                "cabinClass": p.cabin_class,
                "flightType": p.flight_type,
                "fareRule": p.fare_rule,
            }
            for i, p in enumerate(catalog.products)
        ],
        schema={
            "prod": pl.Int64,
            "product_id": pl.String,
            "product_name": pl.String,
            "roomType": pl.String,
            "nights": pl.Int64,
            "cabinClass": pl.String,
            "flightType": pl.String,
            "fareRule": pl.String,
        },
    )
    task_frame = pl.DataFrame(
        {
            "task": np.arange(len(tasks)),
            "n_affordable": affordable.sum(axis=1).astype(np.int64),
            "n_preferred": [len(t.preferred) for t in tasks],
            "query": [t.task_id.replace("_", " ") for t in tasks],
        }
    )
    return products, task_frame


def _run_with_principals(
    layout: Layout, plan: SessionPlan, world: DemandWorld, rng: np.random.Generator
) -> tuple[Emissions, SessionPlan]:
    """Run the store's human sessions, then its agents with their principals' valuations: each
    agent experiment's principal values like the human population, V = μ + β·g(S) + σ·ε with
    S the decision engagement of a random human session (`simulate.demand`)."""
    human = ~layout.session_is_agent
    humans = run_sessions(plan.subset(human), rng)
    quoted = decision_views(humans, int(human.sum()))
    pool = humans.interest[quoted[quoted >= 0]].astype(np.float64)
    n_xp = layout.xp_is_agent.size
    engaged = rng.choice(pool, size=n_xp) if pool.size else np.zeros(n_xp)
    principal = world.mu + world.beta * world.g(engaged) + world.sigma * rng.standard_normal(n_xp)
    base = np.where(human, plan.valuation_base, principal[layout.session_xp])
    plan = dataclasses.replace(plan, valuation_base=base)
    agents = run_sessions(plan.subset(~human), rng)
    parts = [(humans, np.flatnonzero(human)), (agents, np.flatnonzero(~human))]
    return merge_emissions(parts), plan


def _decisions(
    layout: Layout, plan: SessionPlan, em: Emissions, sessions: pl.DataFrame, store: str
) -> pl.DataFrame:
    """The world's truth per session at its quoted view (`SimulatedCorpus.decisions`)."""
    quoted = decision_views(em, layout.n_sessions)
    has_view = quoted >= 0
    engagement = np.where(has_view, em.interest[np.maximum(quoted, 0)], 0).astype(np.float64)
    quote, valuation = plan.decision_quote(np.arange(layout.n_sessions), engagement)
    missing = ~has_view
    return pl.DataFrame(
        {
            "store": store,
            "session_id": sessions["session_id"],
            "experiment_id": sessions["experiment_id"],
            "actor": sessions["actor"],
            "engagement": np.where(missing, np.nan, engagement),
            "quote": np.where(missing, np.nan, quote),
            "valuation": np.where(missing, np.nan, valuation),
            "in_market": plan.in_market,
            "decides": plan.decides,
            "price_level": plan.price_level,
        }
    ).with_columns(pl.col("engagement", "quote", "valuation").fill_nan(None))


def _simulate_store(
    store: str, params: SimulationParams, rng: np.random.Generator
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Simulate one store: layout -> plans -> state machines -> timing -> records."""
    catalog, tasks = catalog_for(store), tasks_for(store)
    utility, affordable = task_utilities(tasks, catalog)
    weights = np.array([t.weight for t in tasks])
    layout = lay_out(
        params.humans_per_store, params.agents_per_store, weights, params.separability, rng
    )
    world = params.demand
    plan = plan_sessions(
        layout, tasks, utility, affordable, world, rng, params.agents_search_before_buying
    )
    em, plan = _run_with_principals(layout, plan, world, rng)
    offset, gap = event_offsets_ms(em.session, em.event, layout, rng)
    last = np.flatnonzero(np.r_[em.session[1:] != em.session[:-1], True])
    starts = session_starts_ms(layout, offset[last], rng)
    ts = int(params.start.timestamp() * 1000) + starts[em.session] + offset

    priced = np.isin(em.event, _PRICED_CODES)
    relative, _ = plan.decision_quote(em.session, em.interest.astype(np.float64))
    quote = np.where(priced, np.round(catalog.base_prices[em.product] * relative, 2), np.nan)
    logs = np.flatnonzero(priced)
    delay = rng.integers(PRICE_LOG_DELAY_MS[0], PRICE_LOG_DELAY_MS[1] + 1, size=logs.size)
    n_int = em.event.size
    coded = pl.DataFrame(
        {
            "s": np.r_[em.session, em.session[logs]],
            "e": np.r_[em.event, np.full(logs.size, _PRICE_QUOTE_CODE)],
            "prod": np.r_[em.product, em.product[logs]],
            "page_code": np.r_[em.page, em.page[logs]],
            "ts_ms": np.r_[ts, ts[logs] + delay],
            "gap_ms": np.r_[gap, np.zeros(logs.size, dtype=np.int64)],
            "quote": np.r_[quote, quote[logs]],
            "record_type": np.r_[np.full(n_int, INTERACTION), np.full(logs.size, PRICE_LOG)],
        }
    ).sort("s", "ts_ms")
    sessions, experiments = _session_frame(layout, tasks, store, rng)
    products, task_frame = _lookup_frames(catalog, tasks, affordable)
    events = (
        coded.lazy()
        .join(sessions.lazy(), on="s", how="left")
        .join(task_frame.lazy(), on="task", how="left")
        .join(products.lazy(), on="prod", how="left")
        .sort("s", "ts_ms")
        .with_columns(
            pl.col("e")
            .replace_strict(dict(enumerate(EVENT_NAMES)), return_dtype=pl.String)
            .alias("event"),
            pl.col("quote").fill_nan(None),
            pl.when(pl.col("s").shift(1) == pl.col("s")).then(pl.col("gap_ms")).alias("gap_ms"),
            pl.lit(store).alias("store"),
            pl.col("ts_ms").cast(pl.Datetime("ms")).dt.replace_time_zone("UTC").alias("ts"),
            pl.int_range(pl.len(), dtype=pl.Int64).over("s").alias("seq"),
        )
        .with_columns(record_columns(catalog))
        .with_columns(
            metadata_json(),
            pl.when(pl.col("record_type") == PRICE_LOG).then(pl.col("quote")).alias("price"),
        )
        .select(EVENT_COLUMNS)
        .collect()
    )
    return events, experiments, _decisions(layout, plan, em, sessions, store)
