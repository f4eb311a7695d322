"""Every PartitionsDefinition of the graph (docs/architecture.md#partitions).

Stores, actors and batches are fixed by the data contract; the α and policy grids come from the
`Settings` the definitions are built from (`demo`: α ∈ {0, 0.5, 1}, `study`: {0, 0.1, …, 1}), so
nothing here reads the environment.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS, STORES
from phantom_assets.lake import alpha_from_key, alpha_key
from phantom_assets.policies import PolicyKey, parse_policy_key, policy_keys

BATCH_PARTITIONS_NAME = "batch"

batch_partitions = dg.DynamicPartitionsDefinition(name=BATCH_PARTITIONS_NAME)


def is_batch_partitioned(partitions_def: dg.PartitionsDefinition | None) -> bool:
    """Partitioned by batch: one partition per raw file, read by the warehouse only once loaded
    (dbt reads the batches in the lake, whichever exist)."""
    return getattr(partitions_def, "name", None) == BATCH_PARTITIONS_NAME


store_partitions = dg.StaticPartitionsDefinition(list(STORES))
actor_partitions = dg.StaticPartitionsDefinition(list(ACTORS))
store_actor_partitions = dg.MultiPartitionsDefinition(
    {"store": store_partitions, "actor": actor_partitions}
)

# A store-partitioned asset reads every partition of its store from a store × <dim> parent.
BY_STORE = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="store")
# A store × <dim> asset reads every partition of the same store from another store × <dim> parent.
SAME_STORE = dg.MultiPartitionMapping(
    {"store": dg.DimensionPartitionMapping("store", dg.IdentityPartitionMapping())}
)


def policy_grid(settings: Settings) -> tuple[str, ...]:
    """Tiers × modes × training α (heuristic tiers learn nothing from α: one key each), with the
    charged modes of the ablation tier (λ × adversary factorial)."""
    training = settings.training
    return tuple(policy_keys(training.tiers, settings.agents.train_alphas, training.ablation_tier))


@dataclass(frozen=True)
class GridPartitions:
    """The settings-dependent partitionings: store × α and store × policy."""

    store_alpha: dg.MultiPartitionsDefinition
    store_policy: dg.MultiPartitionsDefinition


def build_partitions(settings: Settings) -> GridPartitions:
    """The α and policy partitionings of `settings`' grids."""
    alphas = dg.StaticPartitionsDefinition([alpha_key(a) for a in settings.agents.alpha_grid])
    policies = dg.StaticPartitionsDefinition(list(policy_grid(settings)))
    return GridPartitions(
        store_alpha=dg.MultiPartitionsDefinition({"store": store_partitions, "alpha": alphas}),
        store_policy=dg.MultiPartitionsDefinition({"store": store_partitions, "policy": policies}),
    )


def _dimensions(context: dg.AssetExecutionContext, second: str) -> tuple[str, str]:
    """(store, <second>) of a store × <second> partition key."""
    key = context.partition_key
    if not isinstance(key, dg.MultiPartitionKey):
        raise ValueError(f"expected a store × {second} partition key, got {key!r}")
    dims = key.keys_by_dimension
    return dims["store"], dims[second]


def store_actor_keys(context: dg.AssetExecutionContext) -> tuple[str, str]:
    """(store, actor) of a store × actor partition."""
    return _dimensions(context, "actor")


def store_alpha_keys(context: dg.AssetExecutionContext) -> tuple[str, float]:
    """(store, α) of a store × alpha partition."""
    store, alpha = _dimensions(context, "alpha")
    return store, alpha_from_key(alpha)


def store_policy_keys(context: dg.AssetExecutionContext) -> tuple[str, PolicyKey]:
    """(store, parsed policy key) of a store × policy partition."""
    store, policy = _dimensions(context, "policy")
    return store, parse_policy_key(policy)
