"""The one adapter to Dagster internals: names the `dagster` package does not export publicly.

Everything else in the project imports `dagster` only; `tests/unit/test_architecture.py` fails on a
`dagster._` import anywhere but here. Each name is here for a reason public API cannot serve
(dagster 1.13); when a release exports one, import it from `dagster` and delete it here.

- `PartitionKeyFilter`, `AssetCheckExecutionRecordStatus`: the lineage audit reads the latest
  execution of a partition's asset checks (`instance.event_log_storage.
  get_latest_asset_check_execution_by_key` takes the filter and returns records with the status).
- `BaseAssetGraph`, `BaseAssetNode`: the types of `Definitions.resolve_asset_graph()` and of
  `RepositoryDefinition.asset_graph` (public objects whose types are not exported), for
  annotations of the lineage walk.
- `StaleStatus`, `stale_status_resolver`: whether an asset partition is stale, and why, as the UI
  shows it (incremental runs skip what is fresh; a certificate names every stale record it cites).
- `InstanceRef`: open an instance from a `dagster.yaml` folder with storage overrides (the
  scale-out deployment reads its Postgres storage from a process without its env variables).
- `ReconstructableRepository`: a job the Celery executor can reconstruct in another process from
  a module's `defs` (`dagster.reconstructable` needs a module-level job or function).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagster._core.definitions.data_version import StaleStatus
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

if TYPE_CHECKING:
    import dagster as dg
    from dagster._core.definitions.assets.graph.base_asset_graph import (
        BaseAssetGraph,
        BaseAssetNode,
    )

__all__ = [
    "AssetCheckExecutionRecordStatus",
    "BaseAssetGraph",
    "BaseAssetNode",
    "PartitionKeyFilter",
    "StaleStatus",
    "instance_from_dir",
    "reconstructable_repository",
    "stale_status_resolver",
]


def stale_status_resolver(instance: dg.DagsterInstance, assets: list[Any] | BaseAssetGraph) -> Any:
    """Dagster's resolver of stale statuses (`.get_status(key, partition)`, `.get_stale_causes
    (key, partition)`) for `assets` or an asset graph, reading `instance` as it is now."""
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._time import get_current_datetime

    graph = assets if not isinstance(assets, list) else AssetGraph.from_assets(assets)
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    return CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)


def instance_from_dir(home: str, overrides: dict[str, Any]) -> dg.DagsterInstance:
    """The instance of the `dagster.yaml` in `home`, with `overrides` merged into its config."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(home, overrides=overrides))


def reconstructable_repository(module: str, attribute: str, working_directory: str):
    """A repository another process can rebuild from `module.attribute` (a `Definitions`)."""
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    return ReconstructableRepository.for_module(module, attribute, working_directory)
