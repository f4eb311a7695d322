"""Publish the session dataset to the Hugging Face Hub (DESIGN §7).

Pure apart from the folder it stages and the Hub calls of `publish`. Typical use by the
`hf_dataset` asset::

    staged = stage_dataset(PublishInputs(events, kernels, contaminated), settings.publish_dir)
    handler.addFilter(RedactingFilter(token))
    result = publish(staged, repo_id, token)  # dry run when token or repo_id is missing
"""

from phantom_assets.publish.card import (
    SIZE_CATEGORIES,
    CardParams,
    ConfigInfo,
    render_card,
    size_category,
)
from phantom_assets.publish.hub import (
    DEFAULT_COMMIT_MESSAGE,
    PublishError,
    PublishResult,
    plan_operations,
    publish,
)
from phantom_assets.publish.redact import REDACTED, RedactingFilter, redact, redacting_logs
from phantom_assets.publish.stage import (
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
    "CONFIG_PATHS",
    "CONTAMINATED_COLUMNS",
    "DEFAULT_COMMIT_MESSAGE",
    "INGEST_FORMAT",
    "KERNEL_COLUMNS",
    "REDACTED",
    "SESSIONS_CSV",
    "SIZE_CATEGORIES",
    "WHOCLICKEDIT_SCHEMA",
    "CardParams",
    "ConfigInfo",
    "PublishError",
    "PublishInputs",
    "PublishResult",
    "RedactingFilter",
    "StagedDataset",
    "plan_operations",
    "publish",
    "redact",
    "redacting_logs",
    "render_card",
    "size_category",
    "stage_dataset",
    "uncastable_metadata",
    "whoclickedit_table",
]
