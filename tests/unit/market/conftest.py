"""Small market specs for the market tests (demo kernels, a small chain bank)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import pytest

from phantom_assets.config import MarketConfig
from phantom_assets.market import MarketSpec, demo_spec


@functools.cache
def _base_spec() -> MarketSpec:
    return demo_spec(0, MarketConfig(chain_bank_size=2_000))


def small_spec(**overrides) -> MarketSpec:
    """The demo market with a 2,000-chain bank per class (plus any `MarketSpec` field changes)."""
    return dataclasses.replace(_base_spec(), **overrides)


@pytest.fixture
def spec() -> MarketSpec:
    return small_spec()


@pytest.fixture
def make_spec() -> Callable[..., MarketSpec]:
    """Factory: `make_spec(**overrides)` -> a small demo spec with those fields changed."""
    return small_spec
