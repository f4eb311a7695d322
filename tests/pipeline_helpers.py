"""Builders shared by asset, integration and e2e tests."""

from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path

import dagster as dg
import pytest

from phantom_assets.config import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = REPO_ROOT / "dbt_project" / "target" / "manifest.json"

# A `PHANTOM_CONFIG` file with budgets small enough for tests; every stage and tier still runs, and
# the gate gets its 24 held-out seeds, so no certificate is refused for too few of them (what is
# left to refuse it are the effects).
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
store_replicates = 40

[training]
timesteps = 96

[agents]
alpha_grid = [0.0, 0.5, 1.0]
k_grid = [2, 8]

[evaluation]
episodes = 3
test_episodes = 24
"""


def tiny_settings(data_dir: Path) -> Settings:
    """Demo settings with `TINY_CONFIG`'s simulation and budgets, rooted at `data_dir` (what a
    test builds in process is what the shared build runs)."""
    from phantom_assets.config import load_settings, settings_from_dict

    values = load_settings("demo", data_dir=data_dir).as_dict()
    for section, overrides in tomllib.loads(TINY_CONFIG).items():
        values[section] = {**values[section], **overrides}
    return settings_from_dict(values)


@functools.cache
def demo_definitions() -> dg.Definitions:
    """The demo profile's graph, for tests that need asset definitions but no particular settings
    (built on first use: the dbt manifest exists only after the session's `dbt parse`)."""
    from orchestration.definitions import build_definitions
    from phantom_assets.config import load_settings

    return build_definitions(load_settings("demo"))


def skip_or_fail_without(reason: str) -> None:
    """A test whose system package is missing: skipped on a developer's machine, failed in CI
    (`CI=true`: `.ci/run` installs every package a test needs, so a missing one is a defect)."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI=true: .ci/run must install it)")
    pytest.skip(reason)
