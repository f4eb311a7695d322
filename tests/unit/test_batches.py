"""Batch registry: content-addressed keys, idempotent registration, drop-zone filtering."""

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from phantom_assets.batches import (
    BATCH_KEY_PATTERN,
    BatchRegistry,
    batch_key,
    candidate_files,
    demo_dir,
    is_demo_file,
    own_sidecar,
)
from phantom_assets.storage import file_digest


def _touch(path: Path, content: bytes, when: datetime) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def test_batch_key_is_date_plus_short_hash_in_the_allowed_alphabet():
    key = batch_key("ab" * 32, datetime(2025, 6, 2, 23, 30, tzinfo=UTC))
    assert key == "20250602_abababab" + "ab"
    assert BATCH_KEY_PATTERN.match(key)


def test_register_same_content_twice_returns_the_same_key(tmp_path: Path):
    registry = BatchRegistry(tmp_path / "lake")
    first = _touch(tmp_path / "in" / "a.csv", b"x,y\n1,2\n", datetime(2025, 6, 2, tzinfo=UTC))
    copy = _touch(tmp_path / "in" / "copy.csv", b"x,y\n1,2\n", datetime(2025, 7, 1, tzinfo=UTC))
    record, is_new = registry.register(first)
    again, again_new = registry.register(copy)
    assert is_new and not again_new
    assert again.key == record.key == registry.get(record.key).key
    assert len(registry.records()) == 1


def test_register_different_content_gets_a_new_key(tmp_path: Path):
    registry = BatchRegistry(tmp_path / "lake")
    when = datetime(2025, 6, 2, tzinfo=UTC)
    a, _ = registry.register(_touch(tmp_path / "a.csv", b"1", when))
    b, _ = registry.register(_touch(tmp_path / "b.csv", b"2", when))
    assert a.key != b.key


def test_candidate_files_skip_sidecars_hidden_and_partial_uploads(tmp_path: Path):
    when = datetime(2025, 6, 2, tzinfo=UTC)
    for name in [
        "a.jsonl",
        "a.experiments.csv",
        "experiments.csv",
        ".hidden",
        "b.csv.part",
        "c.tmp",
    ]:
        _touch(tmp_path / name, b"1", when)
    assert [p.name for p in candidate_files(tmp_path)] == ["a.jsonl"]
    assert candidate_files(tmp_path / "missing") == []


def test_register_tags_demo_batches_and_stamps_the_registration_time(tmp_path: Path):
    registry = BatchRegistry(tmp_path / "lake")
    when = datetime(2025, 6, 2, tzinfo=UTC)
    record, _ = registry.register(
        _touch(tmp_path / "in" / "demo" / "a.csv", b"1", when), demo=True, registered_at=when
    )
    assert registry.get(record.key).demo
    assert registry.get(record.key).registered_at == "2025-06-02T00:00:00+00:00"


def test_records_written_before_the_demo_tag_existed_still_read(tmp_path: Path):
    registry = BatchRegistry(tmp_path / "lake")
    registry.root.mkdir(parents=True)
    old = {"key": "20250602_abababab12", "path": "/x/a.csv", "sha256": "ab" * 32, "size": 1}
    (registry.root / "20250602_abababab12.json").write_text(json.dumps(old))
    (record,) = registry.records()
    assert (record.demo, record.registered_at) == (False, None)


def test_remove_deletes_the_record_and_names_an_unknown_key(tmp_path: Path):
    registry = BatchRegistry(tmp_path / "lake")
    record, _ = registry.register(
        _touch(tmp_path / "a.csv", b"1", datetime(2025, 6, 2, tzinfo=UTC))
    )
    assert registry.remove(record.key) == record
    assert registry.records() == []
    with pytest.raises(KeyError, match=record.key):
        registry.remove(record.key)


def test_demo_files_are_those_under_incoming_demo_and_sidecars_follow_their_file(tmp_path: Path):
    when = datetime(2025, 6, 2, tzinfo=UTC)
    incoming = tmp_path / "incoming"
    demo = _touch(demo_dir(incoming) / "sim.jsonl", b"1", when)
    own = _touch(incoming / "export.jsonl", b"2", when)
    sidecar = _touch(incoming / "export.experiments.csv", b"3", when)
    _touch(incoming / "experiments.csv", b"4", when)  # shared by every file: never one's own
    assert is_demo_file(demo, incoming) and not is_demo_file(own, incoming)
    assert own_sidecar(own) == sidecar and own_sidecar(demo) is None


def _root_with_batches(root: Path) -> list[Path]:
    """A data root with two demo files and one of the user's own, all registered."""
    when = datetime(2025, 6, 2, tzinfo=UTC)
    incoming = root / "incoming"
    files = [
        _touch(demo_dir(incoming) / "sim_1.jsonl", b"1", when),
        _touch(demo_dir(incoming) / "sim_2.jsonl", b"2", when),
        _touch(incoming / "export.csv", b"3", when),
    ]
    registry = BatchRegistry(root / "lake")
    for path in files:
        registry.register(path, demo=is_demo_file(path, incoming))
    return files


def test_a_copied_data_root_counts_each_file_once_and_resolves_paths_inside_the_copy(
    tmp_path: Path,
):
    # Regression: absolute paths made a copy count every demo file twice (issue 32).
    files = _root_with_batches(tmp_path / "data")
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "data", copy)
    registry = BatchRegistry(copy / "lake")
    records = registry.records()
    assert len(records) == len(files)
    assert all(Path(r.path).is_relative_to(copy.resolve()) and r.source.exists() for r in records)
    for path in candidate_files(copy / "incoming"):
        _, is_new = registry.register(path)
        assert not is_new
    assert set(registry.records()) == set(records)


def test_the_registry_stores_paths_relative_to_the_data_root(tmp_path: Path):
    _root_with_batches(tmp_path / "data")
    stored = {
        json.loads(p.read_text())["path"]
        for p in BatchRegistry(tmp_path / "data" / "lake").root.glob("*.json")
    }
    assert stored == {
        "incoming/demo/sim_1.jsonl",
        "incoming/demo/sim_2.jsonl",
        "incoming/export.csv",
    }


def _write_old_format(registry: BatchRegistry, path: Path, *, demo: bool) -> str:
    """A record as versions before issue 32 wrote it: the file's absolute path."""
    digest = file_digest(path)
    key = batch_key(digest, datetime(2025, 6, 2, tzinfo=UTC))
    old = {
        "key": key,
        "path": str(path.resolve()),
        "sha256": digest,
        "size": path.stat().st_size,
        "registered_at": None,
        "demo": demo,
    }
    registry.root.mkdir(parents=True, exist_ok=True)
    (registry.root / f"{key}.json").write_text(json.dumps(old))
    return key


def test_an_old_registry_of_absolute_paths_resolves_them_against_the_current_root(tmp_path: Path):
    when = datetime(2025, 6, 2, tzinfo=UTC)
    original = tmp_path / "data"
    sim = _touch(demo_dir(original / "incoming") / "sim_1.jsonl", b"1", when)
    export = _touch(original / "incoming" / "export.csv", b"3", when)
    keys = [
        _write_old_format(BatchRegistry(original / "lake"), sim, demo=True),
        _write_old_format(BatchRegistry(original / "lake"), export, demo=False),
    ]
    assert BatchRegistry(original / "lake").get(keys[0]).source == sim.resolve()
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    registry = BatchRegistry(copy / "lake")
    resolved = {r.key: r.source for r in registry.records()}
    assert resolved == {
        keys[0]: (copy / "incoming/demo/sim_1.jsonl").resolve(),
        keys[1]: (copy / "incoming/export.csv").resolve(),
    }
    assert [registry.register(p)[1] for p in candidate_files(copy / "incoming")] == [False, False]
    assert len(registry.records()) == 2


def test_an_old_absolute_path_whose_copy_has_other_content_is_not_that_batch(tmp_path: Path):
    when = datetime(2025, 6, 2, tzinfo=UTC)
    original = tmp_path / "data"
    export = _touch(original / "incoming" / "export.csv", b"3", when)
    key = _write_old_format(BatchRegistry(original / "lake"), export, demo=False)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    (copy / "incoming" / "export.csv").write_bytes(b"4")  # same name, other bytes
    assert BatchRegistry(copy / "lake").get(key).source == export.resolve()
