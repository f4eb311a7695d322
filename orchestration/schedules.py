"""Schedules: a nightly rebuild of the warehouse; automation carries the change downstream."""

import dagster as dg

from orchestration.jobs import WAREHOUSE_JOB

NIGHTLY_CRON = "0 2 * * *"

warehouse_job_schedule = dg.ScheduleDefinition(
    name=f"{WAREHOUSE_JOB}_schedule",
    job_name=WAREHOUSE_JOB,
    cron_schedule=NIGHTLY_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Nightly dbt rebuild and data tests. With the automation sensor on, anything whose "
    "inputs changed rebuilds after it; unchanged inputs keep their data versions, so nothing else "
    "reruns.",
)
