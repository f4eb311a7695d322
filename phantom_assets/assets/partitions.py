"""Every PartitionsDefinition of the graph (DESIGN §4)."""

from __future__ import annotations

import dagster as dg

from phantom_assets.constants import ACTORS, STORES

BATCH_PARTITIONS_NAME = "batch"

batch_partitions = dg.DynamicPartitionsDefinition(name=BATCH_PARTITIONS_NAME)
store_partitions = dg.StaticPartitionsDefinition(list(STORES))
actor_partitions = dg.StaticPartitionsDefinition(list(ACTORS))
store_actor_partitions = dg.MultiPartitionsDefinition(
    {"store": store_partitions, "actor": actor_partitions}
)


def store_actor_keys(context: dg.AssetExecutionContext) -> tuple[str, str]:
    """(store, actor) of a store × actor partition."""
    key = context.partition_key
    if not isinstance(key, dg.MultiPartitionKey):
        raise ValueError(f"expected a store × actor partition key, got {key!r}")
    dims = key.keys_by_dimension
    return dims["store"], dims["actor"]
