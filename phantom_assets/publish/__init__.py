"""Publish the session dataset to the Hugging Face Hub (docs/architecture.md#publishing).

Pure apart from the folder it stages and the Hub calls of `publish`. Typical use by the
`hf_dataset` asset::

    staged = stage_dataset(PublishInputs(events, kernels, contaminated), settings.publish_dir)
    result = publish(staged, repo_id, token, private=True, revision="main")
    # one commit: adds every staged file, deletes stale ones; dry run without token or repo
"""

from phantom_assets.publish.card import (
    REQUIRED_FIELDS,
    REQUIRED_SECTIONS,
    SIZE_CATEGORIES,
    CardParams,
    ConfigInfo,
    build_card,
    check_card,
    render_card,
    size_category,
)
from phantom_assets.publish.hub import (
    DEFAULT_BRANCH,
    DEFAULT_COMMIT_MESSAGE,
    KEEP_IN_REPO,
    REPO_TYPES,
    PublishError,
    PublishResult,
    RemoteState,
    Staged,
    plan_operations,
    publish,
    visibility_warning,
)
from phantom_assets.publish.model import (
    DETECTOR_REPO_SUFFIX,
    RUNTIME_FILE,
    StagedModel,
    detector_repo_id,
    model_card,
    stage_detector_model,
)
from phantom_assets.publish.redact import REDACTED, RedactingFilter, redact, redacting_logs
from phantom_assets.publish.stage import (
    CARD_PATH,
    CONFIG_PATHS,
    CONTAMINATED_COLUMNS,
    KERNEL_COLUMNS,
    SESSIONS_CSV,
    PublishInputs,
    StagedDataset,
    stage_dataset,
)
from phantom_assets.publish.table import (
    INGEST_FORMAT,
    WHOCLICKEDIT_SCHEMA,
    uncastable_metadata,
    whoclickedit_table,
)

__all__ = [
    "CARD_PATH",
    "CONFIG_PATHS",
    "CONTAMINATED_COLUMNS",
    "DEFAULT_BRANCH",
    "DEFAULT_COMMIT_MESSAGE",
    "DETECTOR_REPO_SUFFIX",
    "INGEST_FORMAT",
    "KEEP_IN_REPO",
    "KERNEL_COLUMNS",
    "REDACTED",
    "REPO_TYPES",
    "REQUIRED_FIELDS",
    "REQUIRED_SECTIONS",
    "RUNTIME_FILE",
    "SESSIONS_CSV",
    "SIZE_CATEGORIES",
    "WHOCLICKEDIT_SCHEMA",
    "CardParams",
    "ConfigInfo",
    "PublishError",
    "PublishInputs",
    "PublishResult",
    "RedactingFilter",
    "RemoteState",
    "Staged",
    "StagedDataset",
    "StagedModel",
    "build_card",
    "check_card",
    "detector_repo_id",
    "model_card",
    "plan_operations",
    "publish",
    "redact",
    "redacting_logs",
    "render_card",
    "size_category",
    "stage_dataset",
    "stage_detector_model",
    "uncastable_metadata",
    "visibility_warning",
    "whoclickedit_table",
]
