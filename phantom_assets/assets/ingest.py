"""Ingest group: the drop zone (`incoming_files`) and `raw_events[batch]` with its quarantine."""

import hashlib
from pathlib import Path

import dagster as dg
import polars as pl

from phantom_assets.assets.declared import recorded, setting_values, settings_version
from phantom_assets.assets.metadata import (
    artifact_version,
    code_version_of,
    counts_table_markdown,
    table_metadata,
)
from phantom_assets.assets.partitions import GridPartitions, batch_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.batches import BatchRegistry, candidate_files
from phantom_assets.config import Settings
from phantom_assets.constants import STORES
from phantom_assets.schema import IngestResult, UnreadableFileError, parse_batch
from phantom_assets.storage import file_digest, write_parquet_atomic

RAW_EVENTS_CODE = code_version_of(
    "phantom_assets.assets.ingest", "phantom_assets.schema", "phantom_assets.constants"
)


def incoming_files(storage: StorageResource) -> dg.ObserveResult:
    """Observe the drop zone; the data version changes whenever a file is added or replaced."""
    files = candidate_files(storage.settings().incoming_dir)
    signature = "\n".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)
    return dg.ObserveResult(
        data_version=dg.DataVersion(hashlib.sha256(signature.encode()).hexdigest()[:16]),
        metadata={"n_files": len(files), "files": [p.name for p in files][:50]},
    )


def no_events_warning(key: str, source: Path, result: IngestResult) -> str | None:
    """What to tell when no row of a batch was kept (None when some were).

    Bad rows never fail a batch: they are quarantined one by one, and a batch of nothing but bad
    rows (or rows of stores not configured) materializes with 0 events, loudly.
    """
    if not result.events.is_empty():
        return None
    reasons = result.quarantine["reason"].value_counts(sort=True).iter_rows()
    found = ", ".join(f"{reason} ({n:,})" for reason, n in reasons) or "the file holds no row"
    warning = (
        f"batch {key}: {source} adds 0 events: all {result.counts['rows_in']:,} rows are "
        f"quarantined ({found})"
    )
    if result.counts["unknown_store"]:
        stores = result.quarantine.filter(pl.col("reason") == "unknown_store")["detail"]
        shown = ", ".join(sorted(stores.drop_nulls().unique())[:5])
        warning += f"; {shown}: storeMode must be one of {', '.join(STORES)}"
    return warning


def raw_events(context: dg.AssetExecutionContext, storage: StorageResource):
    """Parse one registered batch file into canonical events and its quarantine."""
    settings = storage.settings()
    record = BatchRegistry(settings.lake_dir).get(context.partition_key)
    source = Path(record.path)
    if not source.exists():
        raise dg.Failure(f"batch {record.key}: source file {source} no longer exists")
    if file_digest(source) != record.sha256:
        raise dg.Failure(
            f"batch {record.key}: {source} changed since it was registered; drop the new "
            "content as a new file instead of overwriting an ingested one"
        )
    try:
        result = parse_batch(source, record.key, accept_legacy_store=settings.accept_legacy_store)
    except UnreadableFileError as error:
        # Its message names the file and the reader's problem; chaining the reader's own error
        # would make that cause (e.g. polars' "File out of specification") the one shown.
        raise dg.Failure(f"batch {record.key}: {error}") from None
    warning = no_events_warning(record.key, source, result)
    if warning:
        context.log.warning(warning)
    events_path = settings.lake.events(record.key)
    quarantine_path = settings.lake.quarantine(record.key)
    write_parquet_atomic(result.events, events_path)
    write_parquet_atomic(result.quarantine, quarantine_path)
    events_version, events_artifacts = artifact_version(events_path)
    quarantine_version, quarantine_artifacts = artifact_version(quarantine_path)
    counts = result.counts
    context.log.info(f"batch {record.key} ({result.format}): {counts}")
    yield dg.MaterializeResult(
        asset_key="raw_events",
        data_version=events_version,
        metadata=table_metadata(
            result.events,
            events_path,
            **events_artifacts,
            source_file=dg.MetadataValue.path(str(source)),
            source_sha256=record.sha256,
            format=result.format,
            counts=dg.MetadataValue.md(counts_table_markdown(counts, ("count", "rows"))),
            **({"warning": dg.MetadataValue.text(warning)} if warning else {}),
        ),
    )
    yield dg.MaterializeResult(
        asset_key="raw_events_quarantine",
        data_version=quarantine_version,
        metadata=table_metadata(result.quarantine, quarantine_path, **quarantine_artifacts),
    )
    kept, quarantined = counts["rows_kept"], counts["rows_quarantined"]
    yield dg.AssetCheckResult(
        check_name="no_row_lost",
        asset_key="raw_events",
        passed=counts["rows_in"] == kept + quarantined
        and kept == result.events.height
        and quarantined == result.quarantine.height,
        metadata={"rows_in": counts["rows_in"], "rows_kept": kept, "rows_quarantined": quarantined},
    )


def build_ingest_assets(settings: Settings, grids: GridPartitions) -> list:
    """The observed drop zone and `raw_events` + quarantine (versioned with the store policy)."""
    values = setting_values(settings, ["accept_legacy_store"])
    version = settings_version(RAW_EVENTS_CODE, values)
    observed = dg.observable_source_asset(
        group_name="ingest",
        description="Raw session exports dropped into `data/incoming/` (one file = one batch). "
        "Observed by file name, size and modification time.",
    )(incoming_files)
    ingest = dg.multi_asset(
        specs=[
            dg.AssetSpec(
                "raw_events",
                deps=["incoming_files"],
                group_name="ingest",
                kinds={"python", "parquet"},
                code_version=version,
                description="Canonical storefront events of one batch, one parquet file per batch "
                "under `lake/raw_events/batch={key}/` (docs/method.md#canonical-events).",
            ),
            dg.AssetSpec(
                "raw_events_quarantine",
                deps=["incoming_files"],
                group_name="ingest",
                kinds={"python", "parquet"},
                code_version=version,
                description="Rows of a batch that could not be accepted, each with a "
                "machine-readable `reason` and a human-readable `detail`. Nothing is dropped "
                "silently.",
            ),
        ],
        partitions_def=batch_partitions,
        check_specs=[
            dg.AssetCheckSpec(
                "no_row_lost",
                asset="raw_events",
                blocking=True,
                description="rows in == rows kept + rows quarantined",
            )
        ],
    )(recorded(raw_events, {"raw_events", "raw_events_quarantine"}, (), values))
    # Its input is the drop zone outside the lake (the registered file), not a lake asset.
    return [observed, ingest]
