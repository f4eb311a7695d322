"""Which results a `phantom run` did not rebuild, for its summary: the summary re-reads the files
in the lake, and after a failed run some of them are the previous run's.

A result (an asset partition the summary reads) is *not rebuilt* when its task in this run failed
or was skipped, or when Dagster's stale status of it or of any asset partition upstream of it is
STALE -- the case of a result outside the run's selection whose inputs (or code, or settings)
changed. Dagster's own status looks one level up only: a certificate over a market rebuilt since
is FRESH while the evaluations between them are STALE, so the whole lineage is asked. Each is
named with where its files are from: the run of its latest materialization.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import dagster as dg

from orchestration.runner import PipelineReport, Status
from phantom_assets.assets.dagster_internals import StaleStatus, stale_status_resolver
from phantom_assets.assets.lineage import latest_materialization, upstream_partitions

__all__ = ["not_rebuilt"]

NOT_REBUILT = (Status.FAILED, Status.SKIPPED)


def _origin(latest: dg.EventLogRecord) -> str:
    """`the run of 2026-12-05 21:57 UTC (run 1a2b3c4d)`: where a result's files are from."""
    when = datetime.fromtimestamp(latest.timestamp, tz=UTC)
    return f"the run of {when:%Y-%m-%d %H:%M} UTC (run {latest.run_id[:8]})"


def not_rebuilt(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    report: PipelineReport,
    results: Iterable[tuple[str, str | None]],
) -> dict[tuple[str, str | None], str]:
    """Of `results` (asset, partition), those this run did not rebuild (module docstring), each
    with where its files are from. A result never materialized has no files to mark; one that a
    failed run did write (an asset before the failing one of its stage) is rebuilt."""
    failed = {
        (asset, outcome.partition): outcome.run_id
        for outcome in report.outcomes
        if outcome.status in NOT_REBUILT
        for asset in outcome.assets
    }
    graph = defs.resolve_asset_graph()
    resolver = stale_status_resolver(instance, graph)
    marked = {}
    for asset, partition in results:
        key = dg.AssetKey.from_user_string(asset)
        if not graph.has(key):
            continue
        latest = latest_materialization(instance, key, partition)
        if latest is None:
            continue
        unfinished = (asset, partition) in failed and latest.run_id != failed[(asset, partition)]
        if unfinished or any(
            resolver.get_status(*node) is StaleStatus.STALE
            for node in upstream_partitions(instance, graph, key, partition)
        ):
            marked[(asset, partition)] = _origin(latest)
    return marked
