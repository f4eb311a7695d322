"""Which tasks of `phantom run` have nothing to do: incremental runs
(docs/architecture.md#incremental-runs).

A task (a stage's assets for one partition) is up to date when Dagster's stale status of every
one of its assets at that partition is FRESH -- materialized, with the code version it has now
and from the data versions its inputs have now (the UI's "stale" badge, the same resolver) --
and no blocking check of those materializations failed. Data versions are content hashes, so an
upstream run that rewrites the same bytes leaves its downstream up to date: the question is asked
when a task becomes ready, after its upstream tasks of this run have finished.

One change Dagster's stale status cannot see: a dropped batch. Its partition is gone, so nothing
upstream of the warehouse is newer than the warehouse; an asset reading the batches (a direct
child of a batch-partitioned asset) materialized before the last drop is therefore not up to date.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import dagster as dg

from phantom_assets.assets.dagster_internals import StaleStatus, stale_status_resolver
from phantom_assets.assets.lineage import failed_blocking_checks_of, latest_materialization
from phantom_assets.assets.partitions import is_batch_partitioned


class Freshness:
    """Stale statuses of one code location against one instance, re-read after every change."""

    def __init__(
        self, defs: dg.Definitions, instance: dg.DagsterInstance, last_drop: datetime | None
    ) -> None:
        self._graph = defs.resolve_asset_graph()
        self._instance = instance
        self._resolver: Any = None
        self._last_drop = last_drop
        self._batch_readers = {
            node.key
            for node in self._graph.asset_nodes
            if not is_batch_partitioned(node.partitions_def)
            and any(
                is_batch_partitioned(self._graph.get(p).partitions_def) for p in node.parent_keys
            )
        }

    def changed(self) -> None:
        """A run finished: the statuses read so far may be out of date."""
        self._resolver = None

    def up_to_date(self, keys: Sequence[dg.AssetKey], partition: str | None) -> bool:
        if self._resolver is None:  # the resolver caches what it read: one per instance state
            self._resolver = stale_status_resolver(self._instance, self._graph)
        if any(self._resolver.get_status(key, partition) != StaleStatus.FRESH for key in keys):
            return False
        if any(self._read_dropped_batch(key, partition) for key in keys):
            return False
        return not any(
            failed_blocking_checks_of(self._instance, self._graph, key, partition) for key in keys
        )

    def _read_dropped_batch(self, key: dg.AssetKey, partition: str | None) -> bool:
        if self._last_drop is None or key not in self._batch_readers:
            return False
        latest = latest_materialization(self._instance, key, partition)
        return latest is None or latest.timestamp < self._last_drop.timestamp()
