"""The one `Definitions` object of the PHANTOM code location (`dagster dev -w workspace.yaml`).

`build_definitions` takes the executor, so the scale-out location (orchestration/scale_out)
serves the very same assets, jobs, schedules and sensors on a different engine.
"""

import dagster as dg

from orchestration.automation import automation_sensor, with_automation
from orchestration.jobs import ALL_JOBS
from orchestration.resources import build_resources, settings_from_env
from orchestration.schedules import warehouse_job_schedule
from orchestration.sensors import incoming_files_sensor
from phantom_assets.assets.audit import certification_report
from phantom_assets.assets.contamination import contaminated_datasets
from phantom_assets.assets.dbt import warehouse_models
from phantom_assets.assets.defense import trained_policies
from phantom_assets.assets.evaluation import benchmark_curves, policy_evaluations
from phantom_assets.assets.fingerprint import (
    divergence_scores,
    labeled_sessions,
    separability_report,
    transition_kernels,
)
from phantom_assets.assets.ingest import incoming_files, raw_events
from phantom_assets.assets.market import market_simulators
from phantom_assets.assets.publish import hf_dataset

# 2 cores: at most two steps of one run at a time.
LOCAL_EXECUTOR = dg.multiprocess_executor.configured({"max_concurrent": 2})


def build_definitions(executor: dg.ExecutorDefinition) -> dg.Definitions:
    """Every asset, job, schedule, sensor and resource of PHANTOM, run by `executor`."""
    return dg.Definitions(
        assets=with_automation(
            [
                incoming_files,
                raw_events,
                warehouse_models,
                labeled_sessions,
                transition_kernels,
                divergence_scores,
                separability_report,
                contaminated_datasets,
                market_simulators,
                trained_policies,
                policy_evaluations,
                benchmark_curves,
                hf_dataset,
                certification_report,
            ]
        ),
        jobs=ALL_JOBS,
        schedules=[warehouse_job_schedule],
        sensors=[incoming_files_sensor, automation_sensor],
        resources=build_resources(settings_from_env()),
        executor=executor,
    )


defs = build_definitions(LOCAL_EXECUTOR)
