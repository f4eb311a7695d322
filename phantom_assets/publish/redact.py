"""Keep a secret (the Hub token) out of text, log records and exception messages
(docs/architecture.md#publishing)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

__all__ = ["REDACTED", "RedactingFilter", "redact", "redacting_logs"]

REDACTED = "***"


def _forms(secret: str) -> tuple[str, ...]:
    """The secret as written and URL-quoted (the two ways it can reach a message)."""
    return tuple(dict.fromkeys((secret, quote(secret, safe=""))))


def redact(text: str, secret: str | None) -> str:
    """Return `text` with every occurrence of `secret` (plain or URL-quoted) replaced by `***`.

    Args:
        text: Any message.
        secret: The value to hide; `None` or empty leaves `text` unchanged.

    Returns:
        The scrubbed text.
    """
    if not secret:
        return text
    for form in _forms(secret):
        text = text.replace(form, REDACTED)
    return text


class RedactingFilter(logging.Filter):
    """A `logging.Filter` that scrubs a secret from every record it sees; it never drops a record.

    Attach it to the *handlers* that write records (a filter on a logger does not see records
    propagated from child loggers)::

        handler.addFilter(RedactingFilter(token))

    The message (with its arguments merged), the formatted traceback and the stack info are
    rewritten in place, so later formatters only ever see the scrubbed text.
    """

    def __init__(self, secret: str | None) -> None:
        """Remember `secret` (kept out of `repr`)."""
        super().__init__()
        self._secret = secret or ""

    def __repr__(self) -> str:
        """Name the filter without the secret."""
        return f"{type(self).__name__}(secret={REDACTED})"

    def filter(self, record: logging.LogRecord) -> bool:
        """Scrub `record` in place and keep it."""
        if not self._secret:
            return True
        message = record.getMessage()
        if any(form in message for form in _forms(self._secret)):
            record.msg = redact(message, self._secret)
            record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            # Formatters print `exc_text` when set; dropping `exc_info` stops a handler from
            # re-rendering the raw exception (whose message may hold the secret).
            record.exc_text = redact(record.exc_text, self._secret)
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self._secret)
        return True


@contextmanager
def redacting_logs(secret: str | None) -> Iterator[None]:
    """Scrub `secret` from every log record created inside the block, whatever logger or handler.

    Wraps the process-wide log record factory for the duration (libraries such as the HTTP client
    under `huggingface_hub` log response headers at DEBUG level, and a server may echo the token
    in one). Records of other threads created meanwhile are scrubbed too, which is harmless.

    Args:
        secret: The value to hide; `None` or empty makes this a no-op.
    """
    if not secret:
        yield
        return
    previous = logging.getLogRecordFactory()
    scrub = RedactingFilter(secret)

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        scrub.filter(record)
        return record

    logging.setLogRecordFactory(factory)
    try:
        yield
    finally:
        # Only undo our own change; a factory installed inside the block stays (it wraps ours).
        if logging.getLogRecordFactory() is factory:
            logging.setLogRecordFactory(previous)
