"""Publish group: the session dataset staged for, and committed to, the Hugging Face Hub."""

import dagster as dg
import polars as pl
from pydantic import Field

from phantom_assets.assets.declared import ALL_SETTINGS, declared_asset
from phantom_assets.assets.metadata import artifact_version, code_version_of
from phantom_assets.assets.partitions import GridPartitions
from phantom_assets.assets.resources import HubResource, StorageResource
from phantom_assets.config import Settings
from phantom_assets.lake import PUBLISH_PLAN_FILE, SESSIONS_FILE
from phantom_assets.publish import CardParams, PublishInputs, PublishResult, publish, stage_dataset
from phantom_assets.storage import write_json_atomic


class PublishConfig(dg.Config):
    """Run-time knobs of a publish run (`None`: as the `hub` resource says)."""

    dry_run: bool = Field(
        default=False, description="Plan the commit (adds and deletes) even with a token and repo."
    )
    private: bool | None = Field(
        default=None,
        description="Create a new repo private (`phantom publish --public`: false); unset: as "
        "the `hub` resource says (private by default).",
    )
    revision: str | None = Field(
        default=None,
        description="Branch to commit to, created from main if missing; unset: the `hub` "
        "resource's branch.",
    )


def publish_metadata(result: PublishResult) -> dict[str, object]:
    """Materialization metadata of a publish: target, visibility, commit and operation counts."""
    return {
        "dry_run": result.dry_run,
        "repo_id": result.repo_id or "",
        "revision": result.revision,
        "private_requested": result.private,
        "repo_private": "unknown" if result.repo_private is None else result.repo_private,
        "commit_url": dg.MetadataValue.url(result.commit_url) if result.commit_url else "",
        "commit_oid": result.commit_oid or "",
        "n_files_added": len(result.paths("add")),
        "n_files_deleted": len(result.paths("delete")),
        "deleted_files": result.paths("delete"),
        "warnings": list(result.warnings),
    }


def hf_dataset(
    context: dg.AssetExecutionContext,
    config: PublishConfig,
    storage: StorageResource,
    hub: HubResource,
) -> dg.MaterializeResult:
    """The session dataset in the whoclickedit layout (parquet + CSV), per-store kernels and the
    contaminated datasets as extra configs, with a dataset card; committed to a (by default
    private) Hub repo in ONE commit that also deletes stale files, or a dry run with the plan."""
    settings = storage.settings()
    lake = settings.lake
    inputs = PublishInputs(
        events=pl.read_parquet(lake.all_events()),
        kernels=lake.all_kernels(),
        contaminated=lake.all_contaminated(f"store=*/alpha=*/{SESSIONS_FILE}"),
        card=CardParams(config_hash=settings.config_hash),
    )
    staged = stage_dataset(inputs, settings.publish_dir / "hf_dataset")
    private = hub.private if config.private is None else config.private
    result = publish(
        staged,
        hub.repo_id,
        hub.token,
        endpoint=hub.endpoint,
        private=private,
        revision=config.revision or hub.revision,
        dry_run=config.dry_run,
    )
    plan_path = settings.publish_dir / PUBLISH_PLAN_FILE
    write_json_atomic(result.to_dict(), plan_path)
    for warning in result.warnings:
        context.log.warning(warning)
    outcome = f"published {result.commit_url}" if not result.dry_run else "dry run"
    context.log.info(f"{outcome}: {len(result.operations)} operations")
    version, artifacts = artifact_version(*(staged.path / f for f in staged.files))
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            **artifacts,
            "staged_folder": dg.MetadataValue.path(str(staged.path)),
            "plan": dg.MetadataValue.path(str(plan_path)),
            **publish_metadata(result),
            "configs": list(staged.configs),
            **{f"n_{k}": v for k, v in staged.counts.items()},
        },
    )


PUBLISH_CODE = code_version_of("phantom_assets.assets.publish", "phantom_assets.publish")


def build_publish_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`hf_dataset` (manual: a Hub commit is a decision). The card records the config hash."""
    asset = declared_asset(
        settings=settings,
        code=PUBLISH_CODE,
        reads=(ALL_SETTINGS,),
        deps=["raw_events", "transition_kernels", "contaminated_datasets"],
        group_name="publish",
        kinds={"huggingface", "parquet"},
    )
    return [asset(hf_dataset)]
