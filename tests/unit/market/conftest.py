"""Small market specs for the env tests (demo kernels, a small chain bank)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from phantom_assets.market import MarketSpec, demo_spec


def small_spec(**overrides) -> MarketSpec:
    """The demo market with a 2,000-chain bank (plus any field overrides)."""
    return demo_spec(0, **{"chain_bank_size": 2_000, **overrides})


@pytest.fixture
def spec() -> MarketSpec:
    return small_spec()


@pytest.fixture
def make_spec() -> Callable[..., MarketSpec]:
    """Factory: `make_spec(**overrides)` -> a small demo spec with those fields changed."""
    return small_spec
