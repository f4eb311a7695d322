"""PHANTOM on Celery workers: the same definitions, each step a Celery task.

Start a broker (e.g. Redis), point `DAGSTER_CELERY_BROKER_URL` at it, run workers with
`dagster-celery worker start -A dagster_celery.app` on each machine (same code, same
`PHANTOM_DATA_DIR` on shared storage), then serve this location with
`dagster dev -w orchestration/scale_out/workspace.yaml` (or a deployed webserver + daemon using
`orchestration/scale_out/dagster.yaml`). Training partitions are independent steps, so they spread
over the workers without code changes; the `duckdb` pool still serialises warehouse writers.
"""

import dagster as dg
from dagster_celery import celery_executor

from orchestration.definitions import build_definitions
from orchestration.resources import settings_from_env

CELERY_EXECUTOR = celery_executor.configured(
    {
        "broker": {"env": "DAGSTER_CELERY_BROKER_URL"},
        "backend": {"env": "DAGSTER_CELERY_BACKEND_URL"},
    }
)


@dg.definitions
def defs() -> dg.Definitions:
    """The Celery location as the environment configures it (read when Dagster loads it)."""
    return build_definitions(settings_from_env(), CELERY_EXECUTOR)
