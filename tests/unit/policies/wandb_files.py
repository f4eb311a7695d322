"""Read an offline W&B run back from the files wandb wrote (its `run-<id>.wandb` record log).

Offline runs write no `wandb-summary.json`; every `log` call, summary update and the final exit
record are protobuf records in the run's `.wandb` file, read here with wandb's own record reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class OfflineRun:
    """What an offline run's record log holds: history rows, the last summary, the exit code."""

    directory: Path
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None

    def metric(self, name: str) -> list[tuple[int, Any]]:
        """(step, value) of every history row that logged `name`."""
        return [(row["_step"], row[name]) for row in self.history if name in row]


def _items(items: Any) -> dict[str, Any]:
    return {"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in items}


def offline_runs(wandb_dir: Path) -> list[Path]:
    """The offline run directories under `wandb_dir` (the `dir` passed to `wandb.init`)."""
    return sorted((wandb_dir / "wandb").glob("offline-run-*"))


def read_offline_run(directory: Path) -> OfflineRun:
    """Parse the `.wandb` record log of one offline run directory."""
    from wandb.proto import wandb_internal_pb2 as pb
    from wandb.sdk.internal import datastore

    (log_file,) = directory.glob("run-*.wandb")
    store = datastore.DataStore()
    store.open_for_scan(str(log_file))
    run = OfflineRun(directory)
    while (data := store.scan_data()) is not None:
        record = pb.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "history":
            run.history.append(_items(record.history.item))
        elif kind == "summary":
            run.summary.update(_items(record.summary.update))
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    return run
