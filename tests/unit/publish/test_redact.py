"""The token is scrubbed from text, from log records (filter) and from records made in a block."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from phantom_assets.publish import REDACTED, RedactingFilter, redact, redacting_logs

SECRET = "hf_Sec/ret+Token=42"


@pytest.fixture
def stream_logger() -> Iterator[tuple[logging.Logger, logging.Handler, io.StringIO]]:
    """A private logger writing to a string through one handler (detached afterwards)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("tests.publish.redact")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, handler, stream
    logger.removeHandler(handler)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Bearer {SECRET}", f"Bearer {REDACTED}"),
        ("url?token=hf_Sec%2Fret%2BToken%3D42&x=1", f"url?token={REDACTED}&x=1"),
        (f"{SECRET}{SECRET}", REDACTED * 2),
        ("nothing secret", "nothing secret"),
    ],
)
def test_redact_replaces_plain_and_url_quoted_secrets(text: str, expected: str) -> None:
    assert redact(text, SECRET) == expected


@pytest.mark.parametrize("secret", [None, ""])
def test_redact_without_a_secret_leaves_text_alone(secret: str | None) -> None:
    assert redact("Bearer abc", secret) == "Bearer abc"


def test_redacting_filter_scrubs_messages_arguments_and_tracebacks(stream_logger) -> None:
    logger, handler, stream = stream_logger
    handler.addFilter(RedactingFilter(SECRET))

    logger.info("header %s", f"Bearer {SECRET}")
    try:
        raise RuntimeError(f"server said {SECRET}")
    except RuntimeError:
        logger.exception("failed")

    text = stream.getvalue()
    assert SECRET not in text
    assert f"header Bearer {REDACTED}" in text
    assert f"RuntimeError: server said {REDACTED}" in text


def test_redacting_filter_keeps_every_record_and_hides_the_secret_in_its_repr() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "plain", None, None)

    scrub = RedactingFilter(SECRET)

    assert scrub.filter(record) is True
    assert record.getMessage() == "plain"
    assert SECRET not in repr(scrub)


def test_redacting_logs_scrubs_records_of_any_logger_inside_the_block(stream_logger) -> None:
    logger, _, stream = stream_logger
    factory = logging.getLogRecordFactory()

    with redacting_logs(SECRET):
        logger.debug("echoed %r", [(b"X-Error", f"Bearer {SECRET}".encode())])
    logger.debug("after %s", SECRET)

    lines = stream.getvalue().splitlines()
    assert SECRET not in lines[0] and REDACTED in lines[0]
    assert lines[1] == f"after {SECRET}"  # outside the block nothing is rewritten
    assert logging.getLogRecordFactory() is factory
