"""The store's quote-time detector as a portable bundle (docs/detector.md): the format and its
stdlib-only scorer (`runtime`), built from the pipeline's artifacts (`export`)."""

from phantom_assets.detector.export import (
    BUNDLE_FILE,
    build_bundle,
    bundle_quote_scores,
    parity_errors,
    pipeline_quote_scores,
    save_bundle,
)
from phantom_assets.detector.runtime import (
    FORMAT,
    DetectorBundle,
    Quote,
    SessionScorer,
    StreamScorer,
    UnknownEventError,
)

__all__ = [
    "BUNDLE_FILE",
    "FORMAT",
    "DetectorBundle",
    "Quote",
    "SessionScorer",
    "StreamScorer",
    "UnknownEventError",
    "build_bundle",
    "bundle_quote_scores",
    "parity_errors",
    "pipeline_quote_scores",
    "save_bundle",
]
