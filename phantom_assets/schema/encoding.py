"""Decode a raw text export: the byte-order mark names the encoding, UTF-8 otherwise.

Spreadsheet tools and Windows consoles save exports as UTF-8 with a BOM or as UTF-16 (LE/BE)
with a BOM; every text format (CSV, JSON Lines, Kafka JSON, the experiments sidecar) is decoded
here so that the readers only ever see text. Undecodable bytes never fail the file: each bad run
is replaced by `INVALID_BYTES_MARK` so the record holding it is quarantined as `invalid_encoding`.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

UTF8: Final[str] = "utf-8"
# Longest first: the UTF-32-LE mark starts with the UTF-16-LE one.
BOMS: Final[tuple[tuple[bytes, str], ...]] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, UTF8),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Invalid byte runs are replaced by this non-character while decoding, so the record that held
# them can be quarantined as `invalid_encoding` instead of failing the whole file.
INVALID_BYTES_MARK: Final[str] = "\U0010fffe"
_MARK_ERRORS: Final[str] = "phantom.mark_invalid"
_SURROGATES: Final[re.Pattern[str]] = re.compile("[\udc80-\udcff]+")


def split_bom(data: bytes) -> tuple[str, bytes]:
    """Return the encoding named by the byte-order mark of `data` and the bytes after the mark.

    Args:
        data: the start of (or the whole) raw file.

    Returns:
        `(codec, body)`: a Python codec name and `data` without its BOM; `("utf-8", data)` when
        there is no BOM.
    """
    for bom, codec in BOMS:
        if data.startswith(bom):
            return codec, data[len(bom) :]
    return UTF8, data


def _mark_invalid(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: one `INVALID_BYTES_MARK` per undecodable unit, then carry on."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return INVALID_BYTES_MARK, error.end


def decode_text(data: bytes) -> str:
    """Decode a raw file by its BOM (UTF-8 without one), marking invalid bytes.

    Args:
        data: the whole file.

    Returns:
        The text without the BOM; each run of bytes invalid in the file's encoding is replaced by
        `INVALID_BYTES_MARK`.
    """
    codec, body = split_bom(data)
    if codec == UTF8:
        try:
            return body.decode(UTF8)
        except UnicodeDecodeError:
            escaped = body.decode(UTF8, errors="surrogateescape")
            return _SURROGATES.sub(INVALID_BYTES_MARK, escaped)
    # surrogateescape cannot represent bad UTF-16/32 units below 0x80: a named handler can.
    # Registering is idempotent (same name, same function), so doing it per call is harmless.
    codecs.register_error(_MARK_ERRORS, _mark_invalid)
    return body.decode(codec, errors=_MARK_ERRORS)
