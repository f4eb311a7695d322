"""The `Definitions` of the PHANTOM code location (`dagster dev -w workspace.yaml`).

`build_definitions(settings, executor)` is the one assembly point: the scale-out location
(orchestration/scale_out) serves the very same assets, jobs, schedules and sensors on another
engine, and `phantom run` builds its workers' graph from the same call. `defs` is lazy: Dagster's
loader calls it, so importing this module reads no environment.
"""

import dagster as dg

from orchestration.automation import automation_sensor, with_automation
from orchestration.jobs import stage_jobs
from orchestration.resources import build_resources, settings_from_env
from orchestration.schedules import warehouse_job_schedule
from orchestration.sensors import incoming_files_sensor
from phantom_assets.assets.graph import build_assets
from phantom_assets.assets.resources import ASSET_GRAPH, asset_graph_resource
from phantom_assets.config import Settings

# Every step of a run in the run's own process. A step process would re-import the code location
# (~5 s on 2 cores) while almost every step computes for under 2 s (`phantom bench automation`);
# the two cores are filled by two runs at once (`max_concurrent_runs` in dagster.yaml) instead.
# `phantom run` executes its partitions in its own worker processes; scale-out runs on Celery.
LOCAL_EXECUTOR = dg.in_process_executor


def build_definitions(
    settings: Settings,
    executor: dg.ExecutorDefinition = LOCAL_EXECUTOR,
    resources: dict[str, object] | None = None,
) -> dg.Definitions:
    """Every asset, job, schedule, sensor and resource of PHANTOM for `settings`, run by
    `executor`; `resources` replaces individual resources (tests, a custom Hub)."""
    assets = with_automation(build_assets(settings))
    values = {**build_resources(settings), **(resources or {})}
    graph = dg.Definitions(assets=assets, resources={**values, ASSET_GRAPH: asset_graph_resource()})
    return dg.Definitions(
        assets=assets,
        jobs=stage_jobs(graph),
        schedules=[warehouse_job_schedule],
        sensors=[incoming_files_sensor, automation_sensor],
        resources={**values, ASSET_GRAPH: asset_graph_resource(graph)},
        executor=executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    """The code location as the environment configures it (PHANTOM_PROFILE, _CONFIG, _DATA_DIR)."""
    return build_definitions(settings_from_env())
