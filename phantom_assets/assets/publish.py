"""Publish group: the session dataset staged for, and committed to, the Hugging Face Hub."""

from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import Field

from phantom_assets.assets.declared import ALL_SETTINGS, declared_asset
from phantom_assets.assets.metadata import artifact_version, code_version_of
from phantom_assets.assets.partitions import GridPartitions
from phantom_assets.assets.resources import HubResource, StorageResource
from phantom_assets.config import Settings
from phantom_assets.constants import STORES
from phantom_assets.detector import BUNDLE_FILE
from phantom_assets.lake import DETECTOR_PUBLISH_PLAN_FILE, PUBLISH_PLAN_FILE, SESSIONS_FILE
from phantom_assets.publish import (
    CardParams,
    PublishInputs,
    PublishResult,
    Staged,
    detector_repo_id,
    publish,
    stage_dataset,
    stage_detector_model,
)
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


def publish_as_configured(
    staged: Staged, repo_id: str | None, hub: HubResource, config: PublishConfig, **options: str
) -> PublishResult:
    """`publish` to `repo_id` with the `hub` resource's token, endpoint, visibility and branch,
    the run's `config` overriding them."""
    return publish(
        staged,
        repo_id,
        hub.token,
        endpoint=hub.endpoint,
        private=hub.private if config.private is None else config.private,
        revision=config.revision or hub.revision,
        dry_run=config.dry_run,
        **options,
    )


def published(
    context: dg.AssetExecutionContext,
    staged: Staged,
    result: PublishResult,
    plan_path: Path,
    **metadata: object,
) -> dg.MaterializeResult:
    """Write the publish's plan (or commit) to `plan_path`, log it, and describe the staged
    folder, whose files are the data version."""
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
            **metadata,
        },
    )


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
    result = publish_as_configured(staged, hub.repo_id, hub, config)
    return published(
        context,
        staged,
        result,
        settings.publish_dir / PUBLISH_PLAN_FILE,
        configs=list(staged.configs),
        **{f"n_{k}": v for k, v in staged.counts.items()},
    )


def hf_detector(
    context: dg.AssetExecutionContext,
    config: PublishConfig,
    storage: StorageResource,
    hub: HubResource,
) -> dg.MaterializeResult:
    """The stores' quote-time detectors as a Hub **model** repo next to the dataset
    (`<dataset repo>-detector`): each store's `detector.json`, the stdlib-only scorer and a
    model card (what each was fitted on, τ and the rates it flags at, intended use, limits);
    one commit that also deletes stale files, private by default, or a dry run with the plan."""
    settings = storage.settings()
    lake = settings.lake
    bundles = {store: lake.detector_dir(store) / BUNDLE_FILE for store in STORES}
    staged = stage_detector_model(
        {s: path for s, path in bundles.items() if path.is_file()},
        settings.publish_dir / "hf_detector",
        settings.config_hash,
    )
    result = publish_as_configured(
        staged,
        detector_repo_id(hub.repo_id),
        hub,
        config,
        commit_message=DETECTOR_COMMIT_MESSAGE,
        repo_type="model",
    )
    return published(
        context,
        staged,
        result,
        settings.publish_dir / DETECTOR_PUBLISH_PLAN_FILE,
        stores=list(staged.stores),
    )


DETECTOR_COMMIT_MESSAGE = "Publish PHANTOM quote-time detectors"
PUBLISH_CODE = code_version_of(
    "phantom_assets.assets.publish", "phantom_assets.publish", "phantom_assets.detector"
)


def build_publish_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`hf_dataset` and `hf_detector` (manual: a Hub commit is a decision). The cards record the
    config hash."""
    asset = declared_asset(
        settings=settings,
        code=PUBLISH_CODE,
        reads=(ALL_SETTINGS,),
        deps=["raw_events", "transition_kernels", "contaminated_datasets"],
        group_name="publish",
        kinds={"huggingface", "parquet"},
    )
    detector = declared_asset(
        settings=settings,
        code=PUBLISH_CODE,
        reads=(ALL_SETTINGS,),
        deps=["detector_bundle"],
        group_name="publish",
        kinds={"huggingface", "json"},
    )
    return [asset(hf_dataset), detector(hf_detector)]
