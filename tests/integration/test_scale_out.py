"""The scale-out location: the same definitions load and resolve under the Celery executor."""

import dagster as dg
import yaml

from orchestration.definitions import defs as local_defs
from tests.pipeline_helpers import REPO_ROOT


def test_celery_location_loads_the_same_assets_and_jobs(monkeypatch):
    monkeypatch.setenv("DAGSTER_CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("DAGSTER_CELERY_BACKEND_URL", "redis://127.0.0.1:6379/1")
    from orchestration.scale_out.celery import defs

    dg.Definitions.validate_loadable(defs)
    graph, local = defs.resolve_asset_graph(), local_defs.resolve_asset_graph()
    assert graph.get_all_asset_keys() == local.get_all_asset_keys()
    for job in defs.jobs or []:
        assert defs.resolve_job_def(job.name).executor_def.name == "celery"


def test_scale_out_instance_and_workspace_configs_are_valid_yaml_pointing_at_the_location():
    folder = REPO_ROOT / "orchestration" / "scale_out"
    instance = yaml.safe_load((folder / "dagster.yaml").read_text())
    assert instance["storage"]["postgres"]["postgres_db"]["hostname"] == {"env": "DAGSTER_PG_HOST"}
    assert instance["concurrency"]["pools"]["default_limit"] == 1
    workspace = yaml.safe_load((folder / "workspace.yaml").read_text())
    module = workspace["load_from"][0]["python_module"]["module_name"]
    assert module == "orchestration.scale_out.celery"
