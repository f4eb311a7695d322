"""Recognise a raw export file by its content (docs/method.md#accepted-inputs) and fingerprint it.

The suffix of a dropped file says nothing reliable (people rename exports), so the format is read
from the bytes: the Parquet magic number, else the first non-blank character of the text (`[` for a
Kafka console export, `{` for JSON Lines), else a whoclickedit CSV header. Text is decoded by its
byte-order mark first (UTF-8, UTF-16 LE/BE, UTF-32; UTF-8 without one), see `encoding.py`.
"""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path
from typing import Final

from phantom_assets.schema.encoding import UTF8, split_bom

WHOCLICKEDIT_CSV: Final[str] = "whoclickedit_csv"
WHOCLICKEDIT_PARQUET: Final[str] = "whoclickedit_parquet"
KAFKA_JSON: Final[str] = "kafka_json"
JSONL: Final[str] = "jsonl"
FORMATS: Final[tuple[str, ...]] = (WHOCLICKEDIT_CSV, WHOCLICKEDIT_PARQUET, KAFKA_JSON, JSONL)

PARQUET_MAGIC: Final[bytes] = b"PAR1"
# Columns a CSV header must name to be taken for a whoclickedit table.
CSV_SIGNATURE_COLUMNS: Final[frozenset[str]] = frozenset({"sessionId", "eventName"})
_SNIFF_BYTES: Final[int] = 64 * 1024
_CHUNK_BYTES: Final[int] = 1 << 20


class UnreadableFileError(ValueError):
    """A raw file that cannot be read at all; the message names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        """Build the error from the offending file and a human-readable problem statement."""
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"cannot ingest {self.path}: {problem}")


def file_sha256(path: Path) -> str:
    """Return the hex SHA-256 of the file's bytes (the batch identity, docs/method.md#bad-input)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_head(path: Path) -> bytes:
    """Return the first bytes of `path`, raising UnreadableFileError when it cannot be opened."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(_SNIFF_BYTES)
    except OSError as error:
        raise UnreadableFileError(path, f"cannot open the file ({error.strerror})") from error


def _csv_header(text: str) -> list[str]:
    """Return the fields of the first line of `text` parsed as CSV (empty list when none)."""
    first_line = text.splitlines()[0] if text else ""
    rows = list(csv.reader(io.StringIO(first_line)))
    return rows[0] if rows else []


def _binary_problem(head: bytes, codec: str) -> str:
    """Why text holding NUL characters is refused, with a hint when it looks like bare UTF-16."""
    problem = f"binary content that is not Parquet (first bytes {head[:16]!r})"
    sample = head[:256]
    odd_nuls, even_nuls = sample[1::2].count(0), sample[0::2].count(0)
    if codec == UTF8 and max(odd_nuls, even_nuls) * 4 >= len(sample) >= 8:
        problem += (
            "; it looks like UTF-16 text without a byte-order mark: save it as UTF-8 "
            "or as UTF-16 with a BOM"
        )
    return problem


def detect_format(path: Path) -> str:
    """Detect the raw format of `path` from its content, ignoring the file name.

    Args:
        path: the raw export file.

    Returns:
        One of `FORMATS`: "whoclickedit_csv", "whoclickedit_parquet", "kafka_json", "jsonl".

    Raises:
        UnreadableFileError: empty file, binary content that is not Parquet, or text that is none
            of the accepted formats.
    """
    head = _read_head(path)
    if head.startswith(PARQUET_MAGIC):
        return WHOCLICKEDIT_PARQUET
    codec, body = split_bom(head)
    # The sniffed head may end inside a character: replacing that tail is harmless here.
    text = body.decode(codec, errors="replace")
    if not text.strip():
        raise UnreadableFileError(path, "the file is empty (no records, not even a header)")
    first = text.lstrip()[:1]
    if first == "[":
        return KAFKA_JSON
    if first == "{":
        return JSONL
    if CSV_SIGNATURE_COLUMNS <= {name.strip() for name in _csv_header(text)}:
        return WHOCLICKEDIT_CSV
    lines = [line.lstrip() for line in text.splitlines() if line.strip()]
    if 2 * sum(line.startswith("{") for line in lines) >= len(lines):
        return JSONL  # JSON Lines whose first line is damaged: quarantined line by line
    if "\x00" in text:
        raise UnreadableFileError(path, _binary_problem(head, codec))
    raise UnreadableFileError(
        path,
        "not a known raw format: expected Parquet, a JSON array of Kafka envelopes, JSON Lines "
        f"or a whoclickedit CSV header naming {sorted(CSV_SIGNATURE_COLUMNS)}; "
        f"the file starts with {text[:40]!r}",
    )
