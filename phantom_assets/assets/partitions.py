"""Every PartitionsDefinition of the graph (DESIGN §4)."""

from __future__ import annotations

import re

import dagster as dg

from orchestration.resources import settings_from_env
from phantom_assets.constants import ACTORS, STORES
from phantom_assets.policies import PolicyKey, parse_policy_key, policy_keys

BATCH_PARTITIONS_NAME = "batch"
# The grids come from the active profile (PHANTOM_PROFILE / PHANTOM_CONFIG, read by the resources
# module): `demo` has α ∈ {0, 0.5, 1}, `study` the research grid {0, 0.1, …, 1}.
_ACTIVE = settings_from_env()
ALPHA_GRID: tuple[float, ...] = _ACTIVE.contamination.alphas
_ALPHA_KEY = re.compile(r"^a(?P<hundredths>\d{3})$")

batch_partitions = dg.DynamicPartitionsDefinition(name=BATCH_PARTITIONS_NAME)
store_partitions = dg.StaticPartitionsDefinition(list(STORES))
actor_partitions = dg.StaticPartitionsDefinition(list(ACTORS))
store_actor_partitions = dg.MultiPartitionsDefinition(
    {"store": store_partitions, "actor": actor_partitions}
)


def alpha_key(alpha: float) -> str:
    """Partition key of a contamination level: `a` + round(100·α) zero-padded (0.5 -> `a050`).

    Raises:
        ValueError: unless `alpha` is a multiple of 0.01 in [0, 1].
    """
    value = float(alpha)
    hundredths = round(value * 100)
    if not 0.0 <= value <= 1.0 or abs(value * 100 - hundredths) > 1e-6:
        raise ValueError(f"alpha must be a multiple of 0.01 in [0, 1] for a key, got {alpha!r}")
    return f"a{hundredths:03d}"


def alpha_from_key(key: str) -> float:
    """Inverse of `alpha_key` (`a050` -> 0.5); raises ValueError naming a malformed key."""
    match = _ALPHA_KEY.match(key)
    if match is None or int(match["hundredths"]) > 100:
        raise ValueError(f"malformed alpha key {key!r}; expected `a000` ... `a100`")
    return int(match["hundredths"]) / 100


alpha_partitions = dg.StaticPartitionsDefinition([alpha_key(a) for a in ALPHA_GRID])
store_alpha_partitions = dg.MultiPartitionsDefinition(
    {"store": store_partitions, "alpha": alpha_partitions}
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


# Tiers × training α of the active profile (heuristic tiers learn nothing from α: one key each).
POLICY_GRID: tuple[str, ...] = tuple(
    policy_keys(_ACTIVE.training.tiers, _ACTIVE.training.train_alphas)
)
policy_partitions = dg.StaticPartitionsDefinition(list(POLICY_GRID))
store_policy_partitions = dg.MultiPartitionsDefinition(
    {"store": store_partitions, "policy": policy_partitions}
)


def store_policy_keys(context: dg.AssetExecutionContext) -> tuple[str, PolicyKey]:
    """(store, parsed policy key) of a store × policy partition."""
    store, policy = _dimensions(context, "policy")
    return store, parse_policy_key(policy)
