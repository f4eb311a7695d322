"""Jobs: one per stage of the graph as `phantom run` plans it (`planning.graph_stages`), so the
UI's jobs and the runs of `phantom run` are the same units -- one source of truth.

A stage is a maximal run of topologically ordered assets sharing one partitions definition, so
each job can be launched for one partition key; it is named after its assets' groups.
"""

from __future__ import annotations

import dagster as dg

from orchestration.planning import Stage, graph_stages

INGEST_JOB = "ingest_job"
"""Parses one batch file (the incoming-files sensor launches it)."""
WAREHOUSE_JOB = "warehouse_job"
"""Rebuilds the dbt warehouse and runs its data tests (the nightly schedule launches it)."""


def _description(stage: Stage) -> str:
    partitioned = "one run per partition key" if stage.partitions_def else "unpartitioned"
    return f"Materializes {stage.label} ({partitioned}; one stage of `phantom run`)."


def stage_jobs(defs: dg.Definitions) -> list[dg.UnresolvedAssetJobDefinition]:
    """One asset job per stage of the graph of `defs` (its assets and resources)."""
    return [
        dg.define_asset_job(
            stage.job,
            selection=dg.AssetSelection.assets(*stage.keys),
            description=_description(stage),
        )
        for stage in graph_stages(defs)
    ]


def with_stage_jobs(defs: dg.Definitions) -> dg.Definitions:
    """`defs` with the stage jobs it lacks (`stage_jobs`): `phantom run` executes every run as
    its stage's job, also for definitions built without them (tests, embedding apps)."""
    names = {job.name for job in defs.jobs or ()}
    missing = [job for job in stage_jobs(defs) if job.name not in names]
    return dg.Definitions.merge(defs, dg.Definitions(jobs=missing)) if missing else defs
