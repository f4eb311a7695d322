"""Builders shared by asset, integration and e2e tests."""

from __future__ import annotations

from pathlib import Path

from phantom_assets.config import Settings, SimulationConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = REPO_ROOT / "dbt_project" / "target" / "manifest.json"

# A `PHANTOM_CONFIG` file with budgets small enough for tests; every stage and tier still runs.
TINY_CONFIG = """
[simulation]
seed = 7
humans_per_store = 12
agents_per_store = 4

[fingerprint]
bootstrap_draws = 200
permutation_draws = 100

[market]
episode_steps = 12
chain_bank_size = 400
shoppers_per_step = 40

[training]
timesteps = 96

[evaluation]
alphas = [0.0, 0.5, 1.0]
agent_sessions = [2, 8]
episodes = 3
test_episodes = 3
"""

# Small enough for seconds-long pipelines, large enough for every store × actor cell to be filled.
TINY_SIMULATION = SimulationConfig(seed=7, humans_per_store=12, agents_per_store=4)


def simulation_params(settings: Settings):
    """The simulator's parameters for `settings.simulation`."""
    from phantom_assets.simulate import SimulationParams

    sim = settings.simulation
    return SimulationParams(
        seed=sim.seed,
        humans_per_store=sim.humans_per_store,
        agents_per_store=sim.agents_per_store,
        separability=sim.separability,
    )


def tiny_settings(data_dir: Path) -> Settings:
    """Demo settings with the tiny simulation, rooted at `data_dir` (for module-scoped fixtures)."""
    import dataclasses

    from phantom_assets.config import load_settings

    return dataclasses.replace(load_settings("demo", data_dir=data_dir), simulation=TINY_SIMULATION)


def _demo_definitions():
    from orchestration.definitions import build_definitions
    from phantom_assets.config import load_settings

    return build_definitions(load_settings("demo"))


# The demo profile's graph, for tests that need asset definitions but no particular settings.
DEMO_DEFS = _demo_definitions()
