"""What the `phantom` command keeps off the terminal (unless `--verbose`): Python warnings of the
libraries (Dagster's beta notices while the definitions load) and the output of steps it runs in
its own process (`phantom audit --replay`: Dagster's events, training lines). Both go to a log
file -- a run's own log file when there is one -- and the terminal gets one line naming it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

__all__ = ["WarningLog", "command_log_path", "output_to"]


class WarningLog:
    """Python warnings of this process, held until a log file is named, then appended to it.

    `install` replaces `warnings.showwarning` (the hook Python calls for a warning that its
    filters let through), so the filters still decide which warnings exist and only where they
    are shown changes.
    """

    def __init__(self) -> None:
        self.held: list[str] = []
        self.path: Path | None = None
        self._previous: Any = None

    def install(self) -> None:
        self._previous = warnings.showwarning
        warnings.showwarning = self._show

    def uninstall(self) -> None:
        if self._previous is not None:
            warnings.showwarning = self._previous
            self._previous = None

    def _show(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = warnings.formatwarning(message, category, filename, lineno, line)
        if self.path is None:
            self.held.append(text)
        else:
            with self.path.open("a", encoding="utf-8") as log:
                log.write(text)

    def write_to(self, path: Path) -> None:
        """Append the held warnings to `path`, and every later one."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as log:
            log.writelines(self.held)
        self.held = []


def command_log_path(data_dir: Path, command: str) -> Path:
    """`<data>/logs/<command>-<time>.log`: the log of a command that runs no `phantom run`."""
    folder = Path(data_dir) / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}.log"


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so libraries' handlers
    and subprocesses too) to `path` while the block runs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with Path(path).open("ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])
