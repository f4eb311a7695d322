"""Cut a decoded text stream (pieces cut anywhere, `encoding.iter_decoded`) into records, so a
reader holds one chunk of a raw file at a time instead of all of it.

Each cut gives exactly what the same cut of the whole text gives: `split_lines` is
`text.split("\\n")`, `universal_lines` iterates `io.StringIO(text, newline="")` (the CSV module's
line contract), `json_array_items` yields the elements `json.loads(text)` would return.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final, TypeVar

T = TypeVar("T")

_JSON_WHITESPACE: Final[re.Pattern[str]] = re.compile(r"[ \t\n\r]*")
# A JSON error (or a number's end) this close to the end of the text read so far may be the text
# being cut there: the scanner reports a cut literal (`-Infinity` is the longest) at its start.
_CUT_TOKEN_CHARS: Final[int] = 10


@dataclass(frozen=True)
class ReadSizes:
    """How much of a raw file a reader holds at a time.

    Attributes:
        rows: records per staging frame (~2 kB of working memory each in the ingest).
        block_bytes: bytes read and decoded at a time.
    """

    rows: int = 10_000
    block_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if self.rows < 1 or self.block_bytes < 1:
            raise ValueError(f"read sizes must be >= 1, got {self!r}")


DEFAULT_READ_SIZES: Final[ReadSizes] = ReadSizes()


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last one shorter); one empty list when there are none."""
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size!r}")
    items = iter(items)
    batch = list(islice(items, size))
    yield batch
    while len(batch) == size and (batch := list(islice(items, size))):
        yield batch


def split_lines(pieces: Iterable[str]) -> Iterator[str]:
    """The text's `"\\n"`-separated parts, as `text.split("\\n")` gives them."""
    pending: list[str] = []  # the start of a line that goes on in the next piece
    for piece in pieces:
        *complete, last = piece.split("\n")
        if complete:
            complete[0] = "".join([*pending, complete[0]])
            pending = []
            yield from complete
        pending.append(last)
    yield "".join(pending)


def universal_lines(pieces: Iterable[str]) -> Iterator[str]:
    """The text's lines with their ends (`\\n`, `\\r\\n` or `\\r`), as `io.StringIO(text,
    newline="")` iterates them."""
    rest = ""
    for piece in pieces:
        text = rest + piece
        # After a "\n", or after a "\r" whose next character is known: a line ends there for sure.
        cut = max(text.rfind("\n"), text.rfind("\r", 0, len(text) - 1)) + 1
        yield from io.StringIO(text[:cut], newline="")
        rest = text[cut:]
    yield from io.StringIO(rest, newline="")


class _Cursor:
    """A position in text that is read piece by piece (consumed text is dropped)."""

    def __init__(self, pieces: Iterable[str]) -> None:
        self._pieces = iter(pieces)
        self.text, self.pos, self.at_end = "", 0, False

    def read_more(self) -> bool:
        """Append the next piece; False when there is none."""
        piece = next(self._pieces, None)
        if piece is None:
            self.at_end = True
            return False
        self.text, self.pos = self.text[self.pos :] + piece, 0
        return True

    def next_char(self) -> str:
        """The next character after JSON whitespace ("" at the end of the text)."""
        while True:
            self.pos = _JSON_WHITESPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text) or not self.read_more():
                return self.text[self.pos : self.pos + 1]

    def value(self, decoder: json.JSONDecoder) -> Any:
        """Parse the JSON value at the position and move past it."""
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                cut_here = error.msg.startswith("Unterminated string") or (
                    error.pos >= len(self.text) - _CUT_TOKEN_CHARS
                )
                if cut_here and self.read_more():
                    continue
                raise
            # A number near the end of the text read so far may go on (`1` of `1.5e-3`): read on.
            if end < len(self.text) - _CUT_TOKEN_CHARS or not self.read_more():
                self.pos = end
                return value


def json_array_items(pieces: Iterable[str]) -> Iterator[Any]:
    """The elements of the JSON array that the text spells, parsed one at a time.

    Raises:
        ValueError: the text is not exactly one JSON array (surrounded by JSON whitespace); the
            message counts positions from where the stream had got to, not from the file start.
    """
    cursor, decoder = _Cursor(pieces), json.JSONDecoder()
    if cursor.next_char() != "[":
        raise ValueError("the text does not start with a JSON array")
    cursor.pos += 1
    if cursor.next_char() == "]":
        cursor.pos += 1
    else:
        while True:
            cursor.next_char()  # to the element's first character
            yield cursor.value(decoder)
            separator = cursor.next_char()
            cursor.pos += 1
            if separator == "]":
                break
            if separator != ",":
                raise ValueError(f"expected ',' or ']' after an array element, got {separator!r}")
    if cursor.next_char():
        raise ValueError("extra data after the JSON array")
