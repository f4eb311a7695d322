"""`phantom run` redoes only what changed (docs/architecture.md#incremental-runs): on a copy of
the session's build, an unchanged root reruns nothing; a batch that adds no rows reruns only its
ingest and the warehouse models that read every batch; `--force` reruns what it selects."""

from __future__ import annotations

import json

import pytest

from orchestration.runner import STAGE_TAG
from tests.built_pipeline import BuiltPipeline

pytestmark = pytest.mark.e2e

# Stages a new batch must recheck: its own ingest, the dbt models reading every batch and the
# store slices of the warehouse.
INGEST, WAREHOUSE = "raw_events", ("stg_events", "store_warehouse")
BAD_ROW = json.dumps(
    {
        "sessionId": "",
        "experimentId": "x",
        "storeMode": "hotel",
        "ts": "2026-01-01T00:00:00Z",
        "eventName": "page_view",
    }
)


@pytest.fixture(scope="module")
def copy(built_pipeline: BuiltPipeline, tmp_path_factory: pytest.TempPathFactory):
    return built_pipeline.copy_to(tmp_path_factory.mktemp("incremental"))


def _stages_run(copy: BuiltPipeline, before: set[str]) -> list[str]:
    """The stage label of every Dagster run made since `before` (run ids)."""
    with copy.instance() as instance:
        runs = instance.get_runs()
    return sorted(r.tags.get(STAGE_TAG, "?") for r in runs if r.run_id not in before)


def _run_ids(copy: BuiltPipeline) -> set[str]:
    with copy.instance() as instance:
        return {r.run_id for r in instance.get_runs()}


def test_an_unchanged_root_reruns_nothing(copy: BuiltPipeline):
    before = _run_ids(copy)
    again = copy.phantom("run")
    assert again.returncode == 0, again.stderr[-3000:]
    assert _stages_run(copy, before) == []
    assert "runs up to date, not rerun" in again.stderr
    assert "up to date)" in again.stderr  # the stage lines count them


def test_a_batch_without_rows_reruns_only_its_ingest_and_the_warehouse(copy: BuiltPipeline):
    # Beside the demo's files (a file of one's own next to the demo is refused, on purpose).
    (copy.data_dir / "incoming" / "demo" / "no_rows.jsonl").write_text(BAD_ROW + "\n")
    before = _run_ids(copy)
    run = copy.phantom("run")
    assert run.returncode == 0, run.stderr[-3000:]
    ran = _stages_run(copy, before)
    assert ran, "the new batch was not ingested"
    assert all(stage.startswith((INGEST, *WAREHOUSE)) for stage in ran), ran
    assert sum(stage.startswith(INGEST) for stage in ran) == 1  # the new batch only


def test_force_reruns_what_it_selects(copy: BuiltPipeline):
    before = _run_ids(copy)
    forced = copy.phantom("run", "--select", "raw_events", "--force")
    assert forced.returncode == 0, forced.stderr[-3000:]
    with copy.instance() as instance:
        batches = instance.get_dynamic_partitions("batch")
    assert len(_stages_run(copy, before)) == len(batches)
