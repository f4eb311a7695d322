"""What the terminal says about runs that did not succeed: a failed run's cause, a skip's reason.

The cause is read back from the run's event log (the step failures' errors), so `phantom run`
prints the error itself, not only a run id to look up in the UI or the log file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import dagster as dg

from orchestration.runner import RunOutcome, Status

CAUSE_LINES = 6  # the last lines of an error that the terminal shows
_QUALIFIED_CLASS = re.compile(r"^(?:[A-Za-z_][\w]*\.)+(?P<name>[A-Za-z_]\w*): ")


def _innermost(error) -> Iterator:
    """The error and its causes, outermost first (Dagster wraps user errors in its own)."""
    while error is not None:
        yield error
        error = error.cause


def _error_lines(error) -> list[str]:
    """The innermost error's message (class unqualified) and where it was raised."""
    *_, inner = _innermost(error)
    lines = [line.rstrip() for line in inner.message.strip().splitlines() if line.strip()]
    if lines:
        lines[0] = _QUALIFIED_CLASS.sub(r"\g<name>: ", lines[0])
    lines = lines[-CAUSE_LINES:]
    if inner.stack:  # the frame that raised: `File ".../x.py", line 12, in f`
        lines.append("at " + inner.stack[-1].strip().splitlines()[0].removeprefix("File "))
    return lines


def failure_cause(instance: dg.DagsterInstance, run_id: str | None) -> list[str]:
    """The last lines of the error of each failed step of `run_id` (empty if none is logged)."""
    if run_id is None:
        return []
    lines: list[str] = []
    failures = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    for record in failures:
        event = record.dagster_event
        error = event.step_failure_data.error if event is not None else None
        if error is not None:
            lines += [f"step {event.step_key}:"] if len(failures) > 1 else []
            lines += _error_lines(error)
    if not lines:  # e.g. the run failed before any step (a worker crash, a cancel)
        failures = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        lines += [record.message for record in failures[-1:] if record.message]
    return lines


def failed_lines(instance: dg.DagsterInstance, outcome: RunOutcome) -> list[str]:
    """`FAILED: <stage> [<partition>] (run <id>)` and the indented cause."""
    label = f"{outcome.stage} [{outcome.partition}]" if outcome.partition else outcome.stage
    run = f" (run {outcome.run_id[:8]})" if outcome.run_id else ""
    cause = failure_cause(instance, outcome.run_id)
    return [f"FAILED: {label}{run}", *(f"    {line}" for line in cause)]


def skipped_lines(outcomes: list[RunOutcome]) -> list[str]:
    """One line per (stage, reason) of skipped runs: `SKIPPED: <stage>: 3 runs (hotel, ...) not
    run: upstream <stage> [<partition>] failed`."""
    groups: dict[tuple[str, str], list[str]] = {}
    for outcome in outcomes:
        if outcome.status is Status.SKIPPED:
            reason = outcome.reason or "an upstream run failed"
            groups.setdefault((outcome.stage, reason), []).append(str(outcome.partition))
    lines = []
    for (stage, reason), partitions in groups.items():
        shown = ", ".join(partitions[:3]) + (", ..." if len(partitions) > 3 else "")
        runs = f"{len(partitions)} run{'s' if len(partitions) > 1 else ''}"
        runs += f" [{shown}]" if shown != "None" else ""
        lines.append(f"SKIPPED: {stage}: {runs} not run: {reason}")
    return lines
