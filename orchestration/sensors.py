"""Sensors: new files in the drop zone become `batch` partitions and ingest runs."""

import json

import dagster as dg

from orchestration.batches import idle_tick_reason, mixing_problem
from orchestration.jobs import INGEST_JOB
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME, batch_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.batches import (
    BatchRegistry,
    candidate_files,
    file_signatures,
    is_demo_file,
    settled_files,
)

DROP_ZONE_INTERVAL_S = 15  # a file is taken once unchanged across two ticks


def _skip(context: dg.SensorEvaluationContext, reason: str, cursor: str | None) -> dg.SensorResult:
    """A tick that requests nothing: the reason shows as the tick's skip reason and in its logs."""
    context.log.info(f"skipped: {reason}")
    return dg.SensorResult(skip_reason=reason, cursor=cursor)


@dg.sensor(
    job_name=INGEST_JOB,
    minimum_interval_seconds=DROP_ZONE_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Registers each new, fully written file in data/incoming/ (by content hash) as a "
    "`batch` partition and requests one ingest run for it. A file that fails to parse fails its "
    "one run and is not retried: its partition already exists. A tick that requests nothing "
    "says why in its skip reason (no file, a file still being written, every file registered "
    "already) and what to do; while the data root holds both the demo and files of your own it "
    "registers nothing and names `phantom batches reset --demo`.",
)
def incoming_files_sensor(context: dg.SensorEvaluationContext, storage: StorageResource):
    """Turn settled drop-zone files into new batch partitions plus one run each."""
    settings = storage.settings()
    problem = mixing_problem(settings)
    if problem:  # as `phantom run` does: never pool the demo with a user's own files
        return _skip(context, problem, context.cursor)
    incoming = settings.incoming_dir
    current = file_signatures(candidate_files(incoming))
    previous = json.loads(context.cursor) if context.cursor else {}
    cursor = json.dumps(current, sort_keys=True)
    registry = BatchRegistry(settings.lake_dir)
    known = set(context.instance.get_dynamic_partitions(BATCH_PARTITIONS_NAME))
    new_keys: list[str] = []
    for path in settled_files(current, previous):
        record, _ = registry.register(path, demo=is_demo_file(path, incoming))
        if record.key not in known and record.key not in new_keys:
            new_keys.append(record.key)
    if not new_keys:
        return _skip(context, idle_tick_reason(incoming, current, previous), cursor)
    context.log.info(f"{len(new_keys)} new batch(es) from {incoming}: {', '.join(new_keys)}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=key, run_key=f"batch:{key}") for key in new_keys],
        dynamic_partitions_requests=[batch_partitions.build_add_request(new_keys)],
        cursor=cursor,
    )
