"""The code location loads lazily from the environment, every job resolves, loading stays light."""

import os
import re
import subprocess
import sys

import dagster as dg

from orchestration.definitions import defs
from phantom_assets.assets.partitions import build_partitions
from phantom_assets.columns import COLUMN_DESCRIPTIONS
from phantom_assets.config import load_settings
from tests.pipeline_helpers import REPO_ROOT, demo_definitions


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )


def test_the_lazy_code_location_is_loadable(tmp_path, monkeypatch):
    monkeypatch.setenv("PHANTOM_DATA_DIR", str(tmp_path))
    loaded = defs.load_fn()
    dg.Definitions.validate_loadable(loaded)
    storage = loaded.resources["storage"]
    assert storage.settings().data_dir == tmp_path.resolve()


def test_every_job_resolves_against_the_asset_graph():
    for job in demo_definitions().jobs or []:
        resolved = demo_definitions().resolve_job_def(job.name)
        assert resolved.asset_layer.executable_asset_keys, job.name


def test_main_assets_are_in_the_graph_with_groups_and_code_versions():
    graph = demo_definitions().resolve_asset_graph()
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


def test_importing_any_module_reads_no_environment():
    # A bogus profile and a missing config file break every env read; imports must not care.
    bogus = {"PHANTOM_PROFILE": "bogus", "PHANTOM_CONFIG": "/nonexistent.toml"}
    imports = (
        "import importlib, pkgutil, phantom_assets, orchestration;"
        "names = [m.name for p in (phantom_assets, orchestration)"
        " for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.')];"
        "[importlib.import_module(n) for n in names]"
    )
    out = _run_python(imports, **bogus)
    assert out.returncode == 0, out.stderr
    # Only loading the code location reads (and here rejects) the environment.
    out = _run_python("import orchestration.definitions as d; d.defs.load_fn()", **bogus)
    assert out.returncode != 0 and "unknown profile 'bogus'" in out.stderr


def test_the_dagster_layer_never_imports_the_orchestration_layer():
    hits = [
        f"{path.relative_to(REPO_ROOT)}:{n}"
        for path in (REPO_ROOT / "phantom_assets").rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "orchestration" in line
    ]
    assert hits == []


def test_loading_the_code_location_does_not_import_torch_or_wandb(tmp_path):
    code = (
        "import sys, orchestration.definitions as d; d.defs.load_fn();"
        "heavy = [m for m in ('torch', 'stable_baselines3', 'wandb') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = _run_python(code, PHANTOM_DATA_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_the_study_profile_gets_the_research_partition_grids():
    grids = build_partitions(load_settings("study"))
    alphas = grids.store_alpha.get_partitions_def_for_dimension("alpha")
    policies = grids.store_policy.get_partitions_def_for_dimension("policy")
    # 11 α values; static, tuned-static, tuned-defended and surge once, linear per training α, 4
    # RL tiers × 2 modes × 5 training α, and the ablation tier's two charged modes × 5 training α.
    assert len(alphas.get_partition_keys()) == 11
    assert len(policies.get_partition_keys()) == 4 + 5 + 4 * 2 * 5 + 2 * 5


def test_the_jobs_are_the_stages_phantom_run_executes():
    from orchestration.planning import graph_stages
    from orchestration.scale_out.demo import SLICE_ASSETS, SLICE_JOB

    defs = demo_definitions()
    stages = graph_stages(defs)
    jobs = {job.name: job for job in defs.jobs or []}
    assert set(jobs) == {stage.job for stage in stages}
    graph = defs.resolve_asset_graph()
    for stage in stages:
        resolved = defs.resolve_job_def(stage.job)
        assert set(resolved.asset_layer.executable_asset_keys) == set(stage.keys), stage.job
    materializable = [key for stage in stages for key in stage.keys]
    assert sorted(materializable) == sorted(graph.materializable_asset_keys)  # each exactly once
    slice_keys = {
        k.to_user_string()
        for k in defs.resolve_job_def(SLICE_JOB).asset_layer.executable_asset_keys
    }
    assert slice_keys == set(SLICE_ASSETS)


HTML_LIKE = re.compile(r"</?[A-Za-z_][\w-]*>")
"""`<start>`, `<key>`: the UI renders descriptions as markdown and swallows these as HTML tags."""


def _texts(metadata: dict) -> list[tuple[str, str]]:
    """(name, text) of the metadata the UI renders as text (the dbt manifest is not shown)."""
    return [
        (name, str(getattr(value, "value", value)))
        for name, value in metadata.items()
        if not name.startswith("dagster_dbt/")
    ]


def test_no_asset_or_check_description_holds_an_html_like_token():
    # Why: "with <start> and <end>" showed in the UI as "with and".
    graph = demo_definitions().resolve_asset_graph()
    found = []
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        texts = [("description", node.description or ""), *_texts(node.metadata or {})]
        found += [
            (key.to_user_string(), name, t) for name, text in texts for t in HTML_LIKE.findall(text)
        ]
    for check_key in graph.asset_check_keys:
        spec = graph.get_check_spec(check_key)
        texts = [("description", spec.description or ""), *_texts(spec.metadata or {})]
        found += [
            (f"{check_key.asset_key.to_user_string()}:{check_key.name}", name, t)
            for name, text in texts
            for t in HTML_LIKE.findall(text)
        ]
    found += [
        ("column description", name, t)
        for name, text in COLUMN_DESCRIPTIONS.items()
        for t in HTML_LIKE.findall(text)
    ]
    assert not found, found
