"""What one computation reads: the lake assets whose paths it builds and the settings fields it
looks at, recorded while `recording_reads` is active (docs/architecture.md#inputs-and-settings).

The lake layout (`storage.partition_dir`, `storage.read_partitions`) and the settings sections
report every access here; outside a recording nothing is kept and the cost is one context-variable
lookup. The Dagster layer records each asset's body and compares what it read with what the asset
declares -- its upstream assets and the settings its code version hashes -- so a read without an
edge, an edge without a read and a setting outside the code version each fail the run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["Reads", "not_recorded", "record_asset_read", "record_setting_read", "recording_reads"]


@dataclass
class Reads:
    """What a recorded computation read.

    Attributes:
        assets: lake assets (and warehouse tables) whose paths or rows it touched, its own included.
        settings: settings fields it looked at, as `section.field` (`accept_legacy_store` for the
            top-level one).
    """

    assets: set[str] = field(default_factory=set)
    settings: set[str] = field(default_factory=set)


_ACTIVE: ContextVar[Reads | None] = ContextVar("phantom_reads", default=None)


@contextlib.contextmanager
def recording_reads() -> Iterator[Reads]:
    """Record every read in this context (nested recordings each see their own)."""
    reads = Reads()
    token = _ACTIVE.set(reads)
    try:
        yield reads
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def not_recorded() -> Iterator[None]:
    """Record nothing in this context: building settings validates every field, which is not
    computing with them."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def record_asset_read(asset: str) -> None:
    """Note that the active computation touched `asset`'s stored data."""
    reads = _ACTIVE.get()
    if reads is not None:
        reads.assets.add(asset)


def record_setting_read(name: str) -> None:
    """Note that the active computation looked at the setting `name` (`section.field`)."""
    reads = _ACTIVE.get()
    if reads is not None:
        reads.settings.add(name)
