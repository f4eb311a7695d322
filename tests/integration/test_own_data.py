"""A user's own data, through the documented commands: a data root that ran the (tiny) demo gets a
foreign export; `phantom run` refuses to pool them, `phantom batches reset --demo` removes the
demo, and then only the user's sessions are analysed; `phantom batches drop` removes a batch
everywhere the next run reads it. Rows of unsupported stores are announced before anything runs
and quarantined, all of a file's too: bad rows never fail a run."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from orchestration.runner import run_pipeline
from phantom_assets.config import Settings
from phantom_assets.schema import parse_batch
from phantom_assets.simulate import simulate_to_incoming
from tests.built_pipeline import BuiltPipeline
from tests.pipeline_helpers import REPO_ROOT

pytestmark = pytest.mark.integration

PHANTOM = str(Path(sys.executable).parent / "phantom")
SELECT = "*labeled_sessions"  # enough to count the sessions each class contributes
FOREIGN_SEED = 99  # not the demo's seed (7 in TINY_CONFIG): other sessions, other batch keys


def _phantom(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PHANTOM, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900
    )


def _labeled_counts(data: Path) -> dict[tuple[str, str], int]:
    """Sessions per (store, actor) in the lake's `labeled_sessions` partitions."""
    frame = pl.read_parquet(
        data / "lake/labeled_sessions/store=*/actor=*/sessions.parquet", hive_partitioning=True
    )
    return {(s, a): n for s, a, n in frame.group_by("store", "actor").len().iter_rows()}


def _export_counts(files: list[Path]) -> dict[tuple[str, str], int]:
    """Labeled sessions per (store, actor) in raw export files, parsed as ingest parses them."""
    events = pl.concat([parse_batch(f, "expected").events for f in files])
    sessions = events.filter(pl.col("actor").is_not_null()).unique(["store", "session_id"])
    return {(s, a): n for s, a, n in sessions.group_by("store", "actor").len().iter_rows()}


def _data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.endswith(".experiments.csv"))


@dataclass
class Scenario:
    data: Path
    foreign: list[Path]
    demo_run: subprocess.CompletedProcess
    mixed_run: subprocess.CompletedProcess
    reset: subprocess.CompletedProcess
    own_run: subprocess.CompletedProcess
    own_counts: dict[tuple[str, str], int]
    listed: list[dict]
    dropped_key: str
    drop: subprocess.CompletedProcess
    after_drop_run: subprocess.CompletedProcess
    after_drop_counts: dict[tuple[str, str], int]


@pytest.fixture(scope="module")
def scenario(built_pipeline: BuiltPipeline, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """The whole story once (each test only reads what happened), from a copy of the session's
    tiny demo run."""
    demo = built_pipeline.copy_to(tmp_path_factory.mktemp("own_data"))
    root, data, env = demo.root, demo.data_dir, demo.env
    demo_run = subprocess.CompletedProcess(
        [PHANTOM, "run"], demo.returncode, demo.stdout, demo.stderr
    )
    simulated = _phantom(env, "simulate", "--seed", str(FOREIGN_SEED), "--out", str(root / "xp"))
    assert simulated.returncode == 0, simulated.stderr[-2000:]
    for path in (root / "xp").iterdir():  # the user's export, dropped where the README says
        shutil.copy(path, data / "incoming" / path.name)
    mixed_run = _phantom(env, "run", "--select", SELECT)
    reset = _phantom(env, "batches", "reset", "--demo")
    own_run = _phantom(env, "run", "--select", SELECT, "--json")
    own_counts = _labeled_counts(data)
    listed = json.loads(_phantom(env, "batches", "list", "--json").stdout)
    (dropped,) = [b for b in listed if b["source"].endswith(".csv")]
    drop = _phantom(env, "batches", "drop", dropped["key"])
    after_drop_run = _phantom(env, "run", "--select", SELECT, "--json")
    return Scenario(
        data,
        _data_files(root / "xp"),
        demo_run,
        mixed_run,
        reset,
        own_run,
        own_counts,
        listed,
        dropped["key"],
        drop,
        after_drop_run,
        _labeled_counts(data),
    )


def test_the_demo_is_simulated_into_its_own_folder_and_tagged(scenario: Scenario):
    assert "simulated the demo into" in scenario.demo_run.stderr
    used = scenario.demo_run.stdout.split("batches used:")[1].split("sessions per store")[0]
    rows = [line.split() for line in used.splitlines()[1:] if line.strip()]
    assert rows and {row[1] for row in rows} == {"demo"}  # `<key>  demo  <file>  ...`


def _summary(run: subprocess.CompletedProcess) -> dict:
    return json.loads(run.stdout)


def test_own_files_dropped_into_a_demo_root_are_not_pooled_with_the_demo(scenario: Scenario):
    run = scenario.mixed_run
    assert run.returncode == 2
    assert "phantom batches reset --demo" in run.stderr and "Traceback" not in run.stderr
    assert scenario.foreign[0].name in run.stderr


def test_after_resetting_the_demo_only_the_users_sessions_are_analysed(scenario: Scenario):
    assert scenario.reset.returncode == 0, scenario.reset.stderr
    assert not (scenario.data / "incoming" / "demo").exists()
    assert scenario.own_run.returncode == 0, scenario.own_run.stderr[-3000:]
    assert scenario.own_counts == _export_counts(scenario.foreign)
    summary = _summary(scenario.own_run)
    assert {b["demo"] for b in summary["batches"]} == {False}
    used = {Path(b["source"]).name for b in summary["batches"]}
    assert used == {p.name for p in scenario.foreign}
    sessions = {(r["store"], r["actor"]): r["n_sessions"] for r in summary["sessions"]}
    assert sessions == scenario.own_counts


def test_batches_list_shows_source_stores_rows_and_registration(scenario: Scenario):
    assert len(scenario.listed) == len(scenario.foreign)
    for batch in scenario.listed:
        assert batch["stores"] == ["airline", "hotel"] and batch["rows"] > 0
        assert batch["quarantined"] == 0 and batch["registered_at"] and not batch["demo"]


def test_a_dropped_batch_is_gone_everywhere_and_the_next_run_rebuilds_without_it(
    scenario: Scenario,
):
    assert scenario.drop.returncode == 0, scenario.drop.stderr
    lake = scenario.data / "lake"
    assert not (lake / f"raw_events/batch={scenario.dropped_key}").exists()
    assert not (lake / f"raw_events_quarantine/batch={scenario.dropped_key}").exists()
    assert not (lake / f"batch_registry/{scenario.dropped_key}.json").exists()
    (csv,) = [p for p in scenario.foreign if p.suffix == ".csv"]
    assert (scenario.data / "dropped" / csv.name).is_file()  # moved aside, not deleted
    assert not (scenario.data / "incoming" / csv.name).exists()
    assert scenario.after_drop_run.returncode == 0, scenario.after_drop_run.stderr[-3000:]
    remaining = [p for p in scenario.foreign if p != csv]
    assert scenario.after_drop_counts == _export_counts(remaining)
    assert scenario.after_drop_counts != scenario.own_counts
    summary = _summary(scenario.after_drop_run)
    assert scenario.dropped_key not in {b["key"] for b in summary["batches"]}


def _with_store(source: Path, target: Path, stores: list[str]) -> Path:
    """A copy of a whoclickedit CSV export whose `storeMode` cycles through `stores`."""
    frame = pl.read_csv(source, infer_schema=False)
    values = pl.Series([stores[i % len(stores)] for i in range(frame.height)])
    frame.with_columns(storeMode=values).write_csv(target)
    return target


@pytest.fixture
def export(settings: Settings, tmp_path: Path) -> Path:
    written = simulate_to_incoming(settings, tmp_path / "sim")
    return next(p for p in written if p.suffix == ".csv")


def _env(settings: Settings, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PHANTOM_DATA_DIR": str(settings.data_dir),
        "DAGSTER_HOME": str(tmp_path / "home"),
    }


def test_a_file_of_only_unsupported_stores_is_announced_then_quarantined_whole(
    settings: Settings, tmp_path: Path, export: Path
):
    settings.incoming_dir.mkdir(parents=True)
    bad = _with_store(export, settings.incoming_dir / "bookshop.csv", ["books", "music"])
    run = _phantom(_env(settings, tmp_path), "run", "--select", "raw_events")
    assert run.returncode == 0, run.stderr[-3000:]
    assert str(bad) in run.stderr and "'books'" in run.stderr and "'music'" in run.stderr
    assert "storeMode must be one of hotel, airline" in run.stderr
    assert f"{bad.name}: 0 events, all {pl.read_csv(bad).height:,} rows quarantined" in run.stdout
    (quarantine,) = settings.lake.all_quarantine()
    assert set(pl.read_parquet(quarantine)["reason"]) == {"unknown_store"}


def test_rows_of_an_unsupported_store_in_a_mixed_file_are_announced_as_quarantined(
    settings: Settings, tmp_path: Path, export: Path
):
    from orchestration.batches import preflight

    settings.incoming_dir.mkdir(parents=True)
    mixed = _with_store(export, settings.incoming_dir / "mixed.csv", ["hotel", "books"])
    errors, notes = preflight(settings)
    assert errors == []
    assert any(str(mixed) in n and "'books'" in n and "unknown_store" in n for n in notes)


def test_ingesting_a_file_of_only_unsupported_stores_warns_naming_them(
    settings: Settings, export: Path
):
    """The UI and the drop-zone sensor skip `phantom run`'s pre-flight: ingest says it too."""
    settings.incoming_dir.mkdir(parents=True)
    _with_store(export, settings.incoming_dir / "bookshop.csv", ["books"])
    with dg.instance_for_test() as instance:
        assert not run_pipeline(settings, instance, "raw_events").failed
        (record,) = instance.fetch_materializations(dg.AssetKey("raw_events"), limit=1).records
        warning = record.asset_materialization.metadata["warning"].value
    assert "bookshop.csv adds 0 events" in warning and "storeMode='books'" in warning
