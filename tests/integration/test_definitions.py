"""The code location loads, every job resolves, and loading stays light."""

import os
import subprocess
import sys

import dagster as dg

from orchestration.definitions import defs
from tests.pipeline_helpers import REPO_ROOT


def test_definitions_are_loadable():
    dg.Definitions.validate_loadable(defs)


def test_every_job_resolves_against_the_asset_graph():
    for job in defs.jobs or []:
        resolved = defs.resolve_job_def(job.name)
        assert resolved.asset_layer.executable_asset_keys, job.name


def test_main_assets_are_in_the_graph_with_groups_and_code_versions():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {
        "incoming_files",
        "raw_events",
        "raw_events_quarantine",
        "stg_events",
        "sessions",
        "session_labels",
        "labeled_sessions",
    } <= keys
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        assert node.group_name, key
        if node.group_name != "warehouse":  # dbt models are versioned by dbt's own checksums
            assert node.code_version, key


def test_loading_the_code_location_does_not_import_torch_or_wandb():
    code = (
        "import sys, orchestration.definitions;"
        "heavy = [m for m in ('torch', 'stable_baselines3', 'wandb') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_the_study_profile_gets_the_research_partition_grids():
    code = (
        "import phantom_assets.assets.partitions as parts;"
        "a, p = parts.alpha_partitions, parts.policy_partitions;"
        "print(len(a.get_partition_keys()), len(p.get_partition_keys()))"
    )
    env = {**os.environ, "PHANTOM_PROFILE": "study"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True,
                         text=True, check=True)  # fmt: skip
    # 11 α values; static + surge, linear per training α, 4 RL tiers × 2 modes × 5 training α.
    assert out.stdout.split() == ["11", str(2 + 5 + 4 * 2 * 5)]
