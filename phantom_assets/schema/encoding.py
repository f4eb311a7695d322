"""Decode a raw text export: the byte-order mark names the encoding, UTF-8 otherwise.

Spreadsheet tools and Windows consoles save exports as UTF-8 with a BOM or as UTF-16 (LE/BE)
with a BOM; every text format (CSV, JSON Lines, Kafka JSON, the experiments sidecar) is decoded
here so that the readers only ever see text. Undecodable bytes never fail the file: each bad run
is replaced by `INVALID_BYTES_MARK` so the record holding it is quarantined as `invalid_encoding`.
`iter_decoded` decodes block by block (a reader never holds the whole file); `decode_text` is the
same decoding of bytes already in memory.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
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
_ESCAPED_BYTES: Final[str] = "".join(map(chr, range(0xDC80, 0xDD00)))  # surrogateescape's output
_SURROGATES: Final[re.Pattern[str]] = re.compile(f"[{_ESCAPED_BYTES}]+")
_LONGEST_BOM: Final[int] = max(len(bom) for bom, _ in BOMS)


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


def iter_decoded(blocks: Iterable[bytes]) -> Iterator[str]:
    """Decode a raw file given block by block, by its BOM (UTF-8 without one), marking bad bytes.

    Args:
        blocks: the file's bytes in order, cut anywhere (e.g. fixed-size reads).

    Yields:
        Text pieces whose concatenation is the text without the BOM, each run of bytes invalid in
        the file's encoding replaced by one `INVALID_BYTES_MARK` -- also a run cut by a block end.
    """
    blocks = (block for block in blocks if block)  # an empty block is not the end
    head = b""
    for block in blocks:  # the byte-order mark may span tiny first blocks
        head += block
        if len(head) >= _LONGEST_BOM:
            break
    codec, data = split_bom(head)
    data = data or next(blocks, b"")  # the first block held the mark only
    if codec != UTF8:
        # surrogateescape cannot represent bad UTF-16/32 units below 0x80: a named handler can
        # (one mark per unit). Registering is idempotent (same name, same function).
        codecs.register_error(_MARK_ERRORS, _mark_invalid)
    decoder = codecs.getincrementaldecoder(codec)(
        errors="surrogateescape" if codec == UTF8 else _MARK_ERRORS
    )
    held = ""  # escaped invalid bytes at the end of a piece: their run may go on in the next
    while data:
        ahead = next(blocks, b"")
        piece = held + decoder.decode(data, final=not ahead)
        if codec == UTF8 and not piece.isascii():  # escaped bytes are not ASCII (O(1) test)
            end = len(piece.rstrip(_ESCAPED_BYTES)) if ahead else len(piece)
            piece, held = _SURROGATES.sub(INVALID_BYTES_MARK, piece[:end]), piece[end:]
        yield piece
        data = ahead


def decode_text(data: bytes) -> str:
    """Decode a whole raw file by its BOM (UTF-8 without one), marking invalid bytes.

    Args:
        data: the whole file.

    Returns:
        The text without the BOM; each run of bytes invalid in the file's encoding is replaced by
        `INVALID_BYTES_MARK` (`iter_decoded` of the one block).
    """
    return "".join(iter_decoded([data]))
