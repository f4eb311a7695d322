"""Raw-event ingest: detect a raw export's format and parse it into canonical events + quarantine.

See docs/method.md#data and `raw_formats` for the accepted inputs; `parse_batch` is the entry point.
"""

from phantom_assets.schema.detect import FORMATS, UnreadableFileError, detect_format, file_sha256
from phantom_assets.schema.ingest import (
    CANONICAL_SCHEMA,
    QUARANTINE_SCHEMA,
    IngestResult,
    parse_batch,
    store_counts,
)
from phantom_assets.schema.validate import ADMIN_PAGE, ALL_REASONS

__all__ = [
    "ADMIN_PAGE",
    "ALL_REASONS",
    "CANONICAL_SCHEMA",
    "FORMATS",
    "QUARANTINE_SCHEMA",
    "IngestResult",
    "UnreadableFileError",
    "detect_format",
    "file_sha256",
    "parse_batch",
    "store_counts",
]
