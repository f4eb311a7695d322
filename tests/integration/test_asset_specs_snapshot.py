"""A reviewed snapshot of every asset spec: keys, deps, partitions, checks and automation.

Any lineage change -- a new dependency, a repartitioning, a check added or made blocking -- shows
up as a diff of `snapshots/asset_specs.json` in the commit that causes it. Regenerate
deliberately with `PHANTOM_UPDATE_SNAPSHOTS=1 make test` and review the diff. Code versions are
not in it: they move with every change of logic, and what they must hash is tested as behaviour
(`test_settings_readers.py`: each setting moves exactly its readers' versions;
tests/unit/test_code_versions.py: formatting and documentation move none).
"""

import json
import os
from pathlib import Path

import dagster as dg

from tests.pipeline_helpers import demo_definitions

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_specs.json"


def _partitions(partitions_def: dg.PartitionsDefinition | None) -> object:
    if partitions_def is None:
        return None
    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        return {"dynamic": partitions_def.name}
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return {d.name: _partitions(d.partitions_def) for d in partitions_def.partitions_defs}
    return partitions_def.get_partition_keys()


def asset_spec_snapshot() -> dict[str, dict[str, object]]:
    graph = demo_definitions().resolve_asset_graph()
    snapshot = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        checks = {c.name: c.blocking for c in (graph.get_check_spec(k) for k in node.check_keys)}
        snapshot[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(p.to_user_string() for p in node.parent_keys),
            "partitions": _partitions(node.partitions_def),
            "checks": dict(sorted(checks.items())),
            "automation": node.automation_condition.get_label()
            if node.automation_condition
            else None,
        }
    return snapshot


def test_asset_specs_match_the_reviewed_snapshot():
    current = asset_spec_snapshot()
    if os.environ.get("PHANTOM_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    recorded = json.loads(SNAPSHOT.read_text())
    changed = {
        key: {"recorded": recorded.get(key), "current": current.get(key)}
        for key in sorted(set(recorded) | set(current))
        if recorded.get(key) != current.get(key)
    }
    assert not changed, (
        "asset specs changed; review and regenerate with PHANTOM_UPDATE_SNAPSHOTS=1:\n"
        + json.dumps(changed, indent=2, sort_keys=True)
    )
