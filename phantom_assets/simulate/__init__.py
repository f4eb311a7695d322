"""Storefront session simulator (`phantom simulate`): realistic raw exports of the hotel and airline
shops, with humans and LLM agents pursuing goal-driven tasks.

Public API: `SimulationParams`, `simulate_events` -> `SimulatedCorpus`, `write_exports` in the
formats `ALL_FORMATS`, and `simulate_to_incoming` for a demo drop with one file per format.
"""

from __future__ import annotations

from phantom_assets.simulate.catalog import CATALOGS, Catalog, Product, catalog_for
from phantom_assets.simulate.corpus import EVENT_COLUMNS, simulate_events
from phantom_assets.simulate.exports import ALL_FORMATS, write_exports
from phantom_assets.simulate.incoming import simulate_to_incoming
from phantom_assets.simulate.params import SimulatedCorpus, SimulationParams, params_from
from phantom_assets.simulate.profiles import AGENT, HUMAN, BehaviourProfile, blend
from phantom_assets.simulate.records import METADATA_DTYPE
from phantom_assets.simulate.tasks import TASKS, Task, tasks_for

__all__ = [
    "AGENT",
    "ALL_FORMATS",
    "CATALOGS",
    "EVENT_COLUMNS",
    "HUMAN",
    "METADATA_DTYPE",
    "TASKS",
    "BehaviourProfile",
    "Catalog",
    "Product",
    "SimulatedCorpus",
    "SimulationParams",
    "Task",
    "blend",
    "catalog_for",
    "params_from",
    "simulate_events",
    "simulate_to_incoming",
    "tasks_for",
    "write_exports",
]
