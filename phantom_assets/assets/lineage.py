"""Walk a Dagster instance's lineage upstream from one asset partition
(docs/method.md#lineage-audit).

`collect_lineage` follows the asset graph's dependencies and partition mappings from (key,
partition) down to every `raw_events` batch and turns the latest materialization of each upstream
partition into an `ArtifactRecord` (data and code version, run, time, artifacts, checks).
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

from phantom_assets.assets.dagster_internals import (
    AssetCheckExecutionRecordStatus,
    PartitionKeyFilter,
    stale_status_resolver,
)
from phantom_assets.assets.partitions import is_batch_partitioned
from phantom_assets.audit import ArtifactRecord, file_digests_of

if TYPE_CHECKING:
    from phantom_assets.assets.dagster_internals import BaseAssetGraph, BaseAssetNode

DATA_VERSION_TAG = "dagster/data_version"
CODE_VERSION_TAG = "dagster/code_version"
ARTIFACTS_KEY = "artifacts"
MAX_METADATA_TEXT = 500

Node = tuple[dg.AssetKey, str | None]


def _iso_utc(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat()


def _plain_metadata(metadata: Mapping[str, dg.MetadataValue]) -> dict[str, Any]:
    """Small JSON-able metadata values (numbers, short text, paths, JSON); plots and schemas out."""
    plain: dict[str, Any] = {}
    for name, entry in metadata.items():
        if name == ARTIFACTS_KEY or isinstance(entry, dg.MarkdownMetadataValue):
            continue
        value = entry.value if isinstance(entry, dg.MetadataValue) else entry
        if isinstance(entry, dg.JsonMetadataValue):
            try:
                text = json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                continue  # not representable in the report's strict JSON
            if len(text) <= MAX_METADATA_TEXT:
                plain[name] = value
        elif isinstance(value, bool | int | str):
            if not isinstance(value, str) or len(value) <= MAX_METADATA_TEXT:
                plain[name] = value
        elif isinstance(value, float) and math.isfinite(value):
            plain[name] = value
    return plain


def _artifacts(metadata: Mapping[str, dg.MetadataValue]) -> tuple[str, ...]:
    entry = metadata.get(ARTIFACTS_KEY)
    if entry is None:
        return ()
    value = entry.value if isinstance(entry, dg.MetadataValue) else entry
    if isinstance(value, str):
        value = json.loads(value)
    return tuple(sorted(str(path) for path in value))


def _run_check_evaluations(
    instance: dg.DagsterInstance, run_id: str, cache: dict[str, list[Any]]
) -> list[Any]:
    """`AssetCheckEvaluation`s logged by one run (cached: a dbt run serves many models)."""
    if run_id not in cache:
        entries = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        cache[run_id] = [e.dagster_event.event_specific_data for e in entries if e.dagster_event]
    return cache[run_id]


def _checks(
    instance: dg.DagsterInstance,
    graph: BaseAssetGraph,
    node: BaseAssetNode,
    partition: str | None,
    materialization: dg.EventLogRecord | None,
    cache: dict[str, list[Any]],
) -> tuple[dict[str, bool], list[str]]:
    """Outcome per check of this asset partition, and the names of its blocking checks.

    Checks evaluated in the run that wrote the materialization (against that materialization)
    come first: partitioned assets' checks are logged without a partition, so the run is what
    ties them to the partition. Checks run separately fall back to the latest execution for the
    partition (one only planned counts as not passed). A blocking check with no evaluation at
    all counts as not passed: certification must not mistake "never ran" for "passed".
    """
    outcomes: dict[str, bool] = {}
    blocking = {k.name for k in node.check_keys if graph.get(k).blocking}
    if materialization is not None:
        for evaluation in _run_check_evaluations(instance, materialization.run_id, cache):
            target = evaluation.target_materialization_data
            if evaluation.asset_key != node.key or (
                target is not None and target.storage_id != materialization.storage_id
            ):
                continue
            outcomes[evaluation.check_name] = bool(evaluation.passed)
            if evaluation.blocking:
                blocking.add(evaluation.check_name)
    remaining = sorted((k for k in node.check_keys if k.name not in outcomes), key=str)
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        remaining, partition_filter=PartitionKeyFilter(key=partition)
    )
    for check_key, execution in latest.items():
        outcomes[check_key.name] = execution.status == AssetCheckExecutionRecordStatus.SUCCEEDED
    for name in blocking - set(outcomes):
        outcomes[name] = False
    return dict(sorted(outcomes.items())), sorted(blocking)


def _records_filter(key: dg.AssetKey, partition: str | None) -> dg.AssetRecordsFilter:
    return dg.AssetRecordsFilter(
        asset_key=key, asset_partitions=[partition] if partition is not None else None
    )


def latest_materialization(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None
) -> dg.EventLogRecord | None:
    """The latest materialization of `key [partition]` (None: never materialized)."""
    found = instance.fetch_materializations(_records_filter(key, partition), limit=1).records
    return found[0] if found else None


def _stale_causes(resolver: Any, key: dg.AssetKey, partition: str | None) -> tuple[str, ...]:
    """Dagster's reasons the partition is stale, in words (`market_simulators [hotel] has a new
    data version`), each once."""
    causes = []
    for cause in resolver.get_stale_causes(key, partition):
        dependency = cause.dependency
        if dependency is None:
            causes.append(cause.reason)
        else:
            label = dependency.asset_key.to_user_string()
            if dependency.partition_key is not None:
                label += f" [{dependency.partition_key}]"
            causes.append(f"{cause.reason}: {label}")
    return tuple(dict.fromkeys(causes))


def _record(
    instance: dg.DagsterInstance,
    graph: BaseAssetGraph,
    node_key: Node,
    cache: dict[str, list[Any]],
    resolver: Any,
) -> ArtifactRecord | None:
    """Record of the latest materialization (or, for an observable source, observation)."""
    key, partition = node_key
    node = graph.get(key)
    if node.is_materializable:
        latest = latest_materialization(instance, key, partition)
        event = latest.asset_materialization if latest else None
    elif node.is_observable:
        found = instance.fetch_observations(_records_filter(key, partition), limit=1).records
        latest = found[0] if found else None
        event = latest.asset_observation if latest else None
    else:
        return None
    if latest is None or event is None:
        if not node.is_materializable:
            return None  # a source never observed: nothing to record
        if is_batch_partitioned(node.partitions_def):
            return None  # a batch that never loaded (an unreadable file) fed no data downstream
        checks, blocking = _checks(instance, graph, node, partition, None, cache)
        return ArtifactRecord(
            asset=key.to_user_string(),
            partition=partition,
            data_version=None,
            code_version=node.code_version,
            run_id=None,
            materialized_at=None,
            checks=checks,
            metadata={"never_materialized": True, "blocking_checks": blocking},
        )
    materialization = latest if node.is_materializable else None
    checks, blocking = _checks(instance, graph, node, partition, materialization, cache)
    artifacts = _artifacts(event.metadata)
    metadata = _plain_metadata(event.metadata)
    if blocking:
        metadata["blocking_checks"] = blocking
    if not node.is_materializable:
        metadata["observation"] = True
    return ArtifactRecord(
        asset=key.to_user_string(),
        partition=partition,
        data_version=event.tags.get(DATA_VERSION_TAG),
        code_version=event.tags.get(CODE_VERSION_TAG, node.code_version),
        run_id=latest.run_id,
        materialized_at=_iso_utc(latest.timestamp),
        artifacts=artifacts,
        checks=checks,
        metadata=metadata,
        file_digests=file_digests_of(artifacts),
        stale=_stale_causes(resolver, key, partition) if node.is_materializable else (),
    )


def _validate_partition(graph: BaseAssetGraph, key: dg.AssetKey, partition: str | None) -> None:
    partitions_def = graph.get(key).partitions_def
    name = key.to_user_string()
    if partitions_def is None:
        if partition is not None:
            raise ValueError(f"{name} is not partitioned; got partition {partition!r}")
    elif partition is None:
        raise ValueError(f"{name} is partitioned; pass one of its partition keys")
    elif not partitions_def.has_partition_key(partition):
        raise ValueError(f"{name} has no partition {partition!r}")


def upstream_partitions(
    instance: dg.DagsterInstance, graph: BaseAssetGraph, key: dg.AssetKey, partition: str | None
) -> list[Node]:
    """(key, partition) and every asset partition it depends on, transitively, deduplicated,
    in topological order, then by key and partition.

    Dynamic partitions (batches) are resolved against `instance`.
    """
    start: Node = (key, None if partition is None else str(partition))
    seen: set[Node] = {start}
    queue = deque([start])
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        _validate_partition(graph, key, start[1])
        while queue:
            child_key, child_partition = queue.popleft()
            parents = graph.get_parents_partitions(child_key, child_partition)
            for parent in parents.parent_partitions:
                if not graph.has(parent.asset_key):
                    continue
                node = (
                    parent.asset_key,
                    None if parent.partition_key is None else str(parent.partition_key),
                )
                if node not in seen:
                    seen.add(node)
                    queue.append(node)
    rank = {k: i for i, k in enumerate(graph.toposorted_asset_keys)}
    return sorted(seen, key=lambda n: (rank[n[0]], n[0].to_user_string(), n[1] or ""))


def collect_lineage(
    instance: dg.DagsterInstance,
    asset_graph: BaseAssetGraph,
    key: dg.AssetKey,
    partition: str | None,
    resolver: Any = None,
) -> list[ArtifactRecord]:
    """Lineage records of (key, partition) and everything upstream of it.

    Args:
        instance: Dagster instance holding the event log (and the dynamic `batch` partitions).
        asset_graph: The code location's graph (`defs.resolve_asset_graph()`).
        key: Asset to start from (e.g. the promoted policy or `separability_report`).
        partition: Its partition key (None if unpartitioned).
        resolver: `stale_status_resolver(instance, asset_graph)` to share between calls that
            see the same instance state (it caches what it read); default: a new one.

    Returns:
        One record per upstream asset partition, in topological order, then by partition key.
        Never-materialized partitions are recorded with `data_version=None` (a hole that blocks
        certification), except batches: one that never loaded contributed no data, so it is
        left out, like unobserved sources. Per-file digests are taken from the files as they
        are now, stale causes from the instance as it is now.

    Raises:
        ValueError: If `key` is not in the graph or `partition` does not fit its partitioning.
    """
    if not asset_graph.has(key):
        raise ValueError(f"asset {key.to_user_string()!r} is not in the asset graph")
    nodes = upstream_partitions(instance, asset_graph, key, partition)
    cache: dict[str, list[Any]] = {}
    resolver = resolver or stale_status_resolver(instance, asset_graph)
    records = (_record(instance, asset_graph, node, cache, resolver) for node in nodes)
    return [record for record in records if record is not None]


def collect_record(
    instance: dg.DagsterInstance,
    asset_graph: BaseAssetGraph,
    key: dg.AssetKey,
    partition: str,
    resolver: Any = None,
) -> ArtifactRecord | None:
    """The record of one asset partition alone (`collect_lineage` without the upstream walk)."""
    _validate_partition(asset_graph, key, partition)
    resolver = resolver or stale_status_resolver(instance, asset_graph)
    return _record(instance, asset_graph, (key, partition), {}, resolver)


def failed_blocking_checks_of(
    instance: dg.DagsterInstance,
    asset_graph: BaseAssetGraph,
    key: dg.AssetKey,
    partition: str | None,
) -> list[str]:
    """The blocking checks of the latest materialization of `key [partition]` that did not pass
    (one never evaluated counts as not passed, as in the lineage records)."""
    node = asset_graph.get(key)
    if not node.check_keys:
        return []
    latest = latest_materialization(instance, key, partition)
    checks, blocking = _checks(instance, asset_graph, node, partition, latest, {})
    return [name for name in blocking if not checks.get(name, False)]
