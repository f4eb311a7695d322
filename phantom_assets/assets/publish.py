"""Publish group: the session dataset staged for, and committed to, the Hugging Face Hub."""

import dagster as dg
import polars as pl

from orchestration.resources import HubResource, StorageResource
from phantom_assets.assets.metadata import artifact_version, code_version_of
from phantom_assets.publish import CardParams, PublishInputs, publish, stage_dataset
from phantom_assets.storage import read_partitions, write_json_atomic


class PublishConfig(dg.Config):
    """Run-time knobs of a publish run."""

    dry_run: bool = False  # plan the commit even when a token and repo are configured


@dg.asset(
    deps=["raw_events", "transition_kernels", "contaminated_datasets"],
    group_name="publish",
    kinds={"huggingface", "parquet"},
    code_version=code_version_of("phantom_assets.assets.publish", "phantom_assets.publish"),
)
def hf_dataset(
    context: dg.AssetExecutionContext,
    config: PublishConfig,
    storage: StorageResource,
    hub: HubResource,
) -> dg.MaterializeResult:
    """The session dataset in the whoclickedit layout (parquet + CSV), per-store kernels and the
    contaminated datasets as extra configs, with a dataset card; committed to the Hub in ONE
    commit when a token and repo are configured, otherwise a dry run recording the plan."""
    settings = storage.settings()
    lake = settings.lake_dir
    inputs = PublishInputs(
        events=pl.read_parquet(sorted((lake / "raw_events").glob("batch=*/events.parquet"))),
        kernels=read_partitions(lake, "transition_kernels", "store=*/actor=*/kernel.parquet"),
        contaminated=read_partitions(
            lake, "contaminated_datasets", "store=*/alpha=*/sessions.parquet"
        ),
        card=CardParams(config_hash=settings.config_hash),
    )
    staged = stage_dataset(inputs, settings.publish_dir / "hf_dataset")
    token = None if config.dry_run else hub.token
    result = publish(staged, hub.repo_id, token, endpoint=hub.endpoint)
    plan_path = settings.publish_dir / "last_publish.json"
    write_json_atomic(
        {"dry_run": result.dry_run, "repo_id": result.repo_id, "commit_url": result.commit_url,
         "commit_oid": result.commit_oid, "operations": list(result.operations)},
        plan_path,
    )  # fmt: skip
    outcome = f"published {result.commit_url}" if not result.dry_run else "dry run"
    context.log.info(f"{outcome}: {len(result.operations)} files")
    version, artifacts = artifact_version(*(staged.path / f for f in staged.files))
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            **artifacts,
            "staged_folder": dg.MetadataValue.path(str(staged.path)),
            "plan": dg.MetadataValue.path(str(plan_path)),
            "dry_run": result.dry_run,
            "repo_id": result.repo_id or "",
            "commit_url": dg.MetadataValue.url(result.commit_url) if result.commit_url else "",
            "commit_oid": result.commit_oid or "",
            "configs": list(staged.configs),
            **{f"n_{k}": v for k, v in staged.counts.items()},
        },
    )
