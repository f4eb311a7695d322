"""The one `Definitions` object of the PHANTOM code location (`dagster dev -w workspace.yaml`)."""

from __future__ import annotations

import dagster as dg

from orchestration.jobs import ALL_JOBS
from orchestration.resources import build_resources, settings_from_env
from phantom_assets.assets.dbt import warehouse_models
from phantom_assets.assets.fingerprint import (
    divergence_scores,
    labeled_sessions,
    separability_report,
    transition_kernels,
)
from phantom_assets.assets.ingest import incoming_files, raw_events

# 2 cores: at most two steps of one run at a time.
LOCAL_EXECUTOR = dg.multiprocess_executor.configured({"max_concurrent": 2})

defs = dg.Definitions(
    assets=[
        incoming_files,
        raw_events,
        warehouse_models,
        labeled_sessions,
        transition_kernels,
        divergence_scores,
        separability_report,
    ],
    jobs=ALL_JOBS,
    resources=build_resources(settings_from_env()),
    executor=LOCAL_EXECUTOR,
)
