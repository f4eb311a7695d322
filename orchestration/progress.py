"""Terminal progress of `phantom run`: one line per stage (done / failed / skipped, ETA).

On a terminal the line of the stage in flight is redrawn in place; elsewhere (CI, pipes) a line is
printed when a stage finishes, so logs stay short. Stages of different stores overlap (one
store's stage 5 can finish while the other store is still in stage 4), so a finished stage's line
waits until every earlier stage has printed its own: the lines always read `[1/n]` ... `[n/n]`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

HEARTBEAT_S = 30.0


@dataclass
class StageCount:
    label: str
    total: int
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    fresh: int = 0  # up to date: not run
    seconds: float = 0.0
    started: float | None = None
    reported: bool = False

    @property
    def resolved(self) -> int:
        return self.ok + self.failed + self.skipped + self.fresh


@dataclass
class Progress:
    """Counts per stage, fed by the scheduler; `echo` prints finished stages."""

    stages: list[StageCount]
    workers: int
    echo: Callable[[str], None]
    live: bool = field(default_factory=lambda: sys.stderr.isatty())
    _durations: list[float] = field(default_factory=list)
    _finished_lines: dict[int, str] = field(default_factory=dict)
    _printed: int = 0  # stages [0, _printed) have printed their line
    _last_line: float = field(default_factory=time.perf_counter)

    @classmethod
    def of(cls, labels: Sequence[str], totals: Sequence[int], workers: int, echo):
        return cls([StageCount(lb, n) for lb, n in zip(labels, totals, strict=True)], workers, echo)

    def started(self, stage: int) -> None:
        if self.stages[stage].started is None:
            self.stages[stage].started = time.perf_counter()

    def finished(self, stage: int, status: str, seconds: float) -> None:
        count = self.stages[stage]
        setattr(count, status, getattr(count, status) + 1)
        if status == "ok":
            self._durations.append(seconds)
        if count.resolved == count.total and not count.reported:
            count.reported = True
            self._finished_lines[stage] = self.line(stage)
            self._print_finished_in_order()
        elif self.live:
            sys.stderr.write("\r" + self.line(stage)[:150].ljust(150))
            sys.stderr.flush()

    def _print_finished_in_order(self) -> None:
        """Echo the lines of finished stages, in stage order, up to the first unfinished one."""
        while self._printed < len(self.stages):
            index, count = self._printed, self.stages[self._printed]
            if count.total == 0:  # nothing to run (e.g. no batch registered yet)
                line = f"[{index + 1}/{len(self.stages)}] {count.label}: nothing to run"
            elif index in self._finished_lines:
                line = self._finished_lines.pop(index)
            else:
                return
            self._clear()
            self.echo(line)
            self._last_line = time.perf_counter()
            self._printed += 1

    def heartbeat(self) -> None:
        """Off a terminal, a line for every stage in flight when nothing was printed for
        `HEARTBEAT_S`: a log that shows a long stage (training) is alive, with its ETA."""
        if self.live or time.perf_counter() - self._last_line < HEARTBEAT_S:
            return
        for index, count in enumerate(self.stages):
            if count.started is not None and not count.reported:
                self.echo(self.line(index))
        self._last_line = time.perf_counter()

    def eta_seconds(self) -> float | None:
        """Remaining runs × mean run time / workers (None until one run finished)."""
        if not self._durations:
            return None
        remaining = sum(c.total - c.resolved for c in self.stages)
        return remaining * (sum(self._durations) / len(self._durations)) / max(self.workers, 1)

    def line(self, stage: int) -> str:
        count = self.stages[stage]
        elapsed = time.perf_counter() - count.started if count.started else 0.0
        parts = [f"{count.ok} ok"]
        parts += [f"{count.fresh} up to date"] if count.fresh else []
        parts += [f"{count.failed} FAILED"] if count.failed else []
        parts += [f"{count.skipped} skipped"] if count.skipped else []
        eta = self.eta_seconds()
        tail = "" if eta is None or count.resolved == count.total else f" · ETA {eta:.0f}s"
        return (
            f"[{stage + 1}/{len(self.stages)}] {count.label}: {count.resolved}/{count.total} "
            f"({', '.join(parts)}) in {elapsed:.1f}s{tail}"
        )

    def _clear(self) -> None:
        if self.live:
            sys.stderr.write("\r" + " " * 150 + "\r")
