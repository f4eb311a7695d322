"""The drop-zone sensor, scenario by scenario, against a real (temporary) Dagster instance."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from orchestration.resources import StorageResource
from orchestration.sensors import incoming_files_sensor
from phantom_assets.assets.partitions import BATCH_PARTITIONS_NAME
from phantom_assets.config import Settings


class DropZone:
    """Ticks the sensor like the daemon does: carries the cursor, applies partition requests."""

    def __init__(self, settings: Settings, instance: dg.DagsterInstance) -> None:
        self.settings, self.instance, self.cursor = settings, instance, None
        settings.incoming_dir.mkdir(parents=True, exist_ok=True)

    def tick(self) -> dg.SensorResult:
        context = dg.build_sensor_context(
            instance=self.instance,
            cursor=self.cursor,
            resources={"storage": StorageResource(data_dir=str(self.settings.data_dir))},
        )
        result = incoming_files_sensor(context)
        for request in result.dynamic_partitions_requests:
            self.instance.add_dynamic_partitions(
                request.partitions_def_name, list(request.partition_keys)
            )
        self.cursor = result.cursor
        return result

    def write(self, name: str, content: bytes) -> Path:
        path = self.settings.incoming_dir / name
        path.write_bytes(content)
        return path


@pytest.fixture
def zone(settings: Settings):
    with dg.instance_for_test() as instance:
        yield DropZone(settings, instance)


def _partitions(zone: DropZone) -> list[str]:
    return zone.instance.get_dynamic_partitions(BATCH_PARTITIONS_NAME)


def test_new_file_becomes_a_partition_and_one_run_once_it_settles(zone: DropZone):
    zone.write("a.jsonl", b'{"sessionId": "s1"}\n')
    assert zone.tick().run_requests == []  # first sight: wait one tick
    result = zone.tick()
    assert [r.partition_key for r in result.run_requests] == _partitions(zone)
    assert len(_partitions(zone)) == 1
    assert result.run_requests[0].run_key == f"batch:{_partitions(zone)[0]}"


def test_same_file_on_later_ticks_requests_nothing(zone: DropZone):
    zone.write("a.jsonl", b'{"sessionId": "s1"}\n')
    zone.tick()
    zone.tick()
    assert zone.tick().run_requests == []
    assert len(_partitions(zone)) == 1


def test_identical_content_under_another_name_requests_nothing(zone: DropZone):
    zone.write("a.jsonl", b'{"sessionId": "s1"}\n')
    zone.tick()
    zone.tick()
    zone.write("copy_of_a.jsonl", b'{"sessionId": "s1"}\n')
    zone.tick()
    assert zone.tick().run_requests == []
    assert len(_partitions(zone)) == 1


def test_half_written_file_is_skipped_until_complete(zone: DropZone):
    path = zone.write("big.jsonl", b'{"sessionId": "s1"}\n')
    zone.tick()
    with path.open("ab") as handle:  # the writer is still appending
        handle.write(b'{"sessionId": "s2"}\n')
    assert zone.tick().run_requests == []
    assert _partitions(zone) == []
    result = zone.tick()  # unchanged since the last tick: complete
    assert len(result.run_requests) == 1


def test_sidecars_and_partial_uploads_never_become_batches(zone: DropZone):
    zone.write("a.experiments.csv", b"experimentId,xp_human_only\nx,true\n")
    zone.write("b.jsonl.part", b"{}")
    zone.tick()
    assert zone.tick().run_requests == []


def test_a_users_file_in_a_root_holding_the_demo_is_not_registered_and_says_why(zone: DropZone):
    demo = zone.settings.incoming_dir / "demo"
    demo.mkdir()
    (demo / "sim.jsonl").write_bytes(b'{"sessionId": "s1"}\n')
    zone.tick()
    zone.tick()
    assert len(_partitions(zone)) == 1  # the demo alone is registered as usual
    zone.write("export.jsonl", b'{"sessionId": "s2"}\n')
    for _ in range(2):
        result = zone.tick()
        assert result.run_requests == []
        assert "phantom batches reset --demo" in result.skip_reason.skip_message
    assert len(_partitions(zone)) == 1


def _skip_message(result: dg.SensorResult) -> str:
    assert result.run_requests == []
    assert result.skip_reason is not None, "a tick that requests nothing must say why"
    return result.skip_reason.skip_message


def test_an_empty_drop_zone_skips_naming_the_folder_to_drop_files_into(zone: DropZone):
    message = _skip_message(zone.tick())
    assert str(zone.settings.incoming_dir) in message and "phantom run" in message


def test_a_file_seen_for_the_first_time_skips_saying_it_waits_one_tick(zone: DropZone):
    zone.write("a.jsonl", b'{"sessionId": "s1"}\n')
    assert "seen for the first time: 1" in _skip_message(zone.tick())


def test_a_file_still_being_written_skips_saying_so(zone: DropZone):
    path = zone.write("big.jsonl", b'{"sessionId": "s1"}\n')
    zone.tick()
    with path.open("ab") as handle:  # the writer is still appending
        handle.write(b'{"sessionId": "s2"}\n')
    assert "still being written: 1" in _skip_message(zone.tick())


def test_registered_files_only_skip_naming_the_command_that_lists_them(zone: DropZone):
    zone.write("a.jsonl", b'{"sessionId": "s1"}\n')
    zone.tick()
    zone.tick()
    message = _skip_message(zone.tick())
    assert f"no new file in {zone.settings.incoming_dir}" in message
    assert "phantom batches list" in message


def test_a_skipped_tick_logs_its_reason_in_the_ticks_logs(zone: DropZone):
    context = dg.build_sensor_context(
        instance=zone.instance,
        instance_ref=zone.instance.get_ref(),  # with a ref the tick's logs are captured
        repository_name="__repository__",
        sensor_name=incoming_files_sensor.name,
        resources={"storage": StorageResource(data_dir=str(zone.settings.data_dir))},
    )
    with context:  # the tick's log stream (what the UI shows) is written when it closes
        message = _skip_message(incoming_files_sensor(context))
    logged = zone.instance.compute_log_manager.get_log_data(context.log_key).stderr or b""
    assert message in "".join(json.loads(line)["msg"] for line in logged.decode().splitlines())


def test_a_copied_data_root_counts_each_demo_file_once(zone: DropZone, tmp_path: Path):
    # Regression: the registry's absolute paths made a copy count the demo twice (issue 32).
    demo = zone.settings.incoming_dir / "demo"
    demo.mkdir()
    for i in range(3):
        (demo / f"sim_{i}.jsonl").write_bytes(f'{{"sessionId": "s{i}"}}\n'.encode())
    zone.tick()
    zone.tick()
    copy = tmp_path / "copy"
    shutil.copytree(zone.settings.data_dir, copy)
    copied = DropZone(dataclasses.replace(zone.settings, data_dir=copy), zone.instance)
    copied.write("export.jsonl", b'{"sessionId": "own"}\n')
    copied.tick()
    message = _skip_message(copied.tick())
    assert "(3 simulated batches" in message and "phantom batches reset --demo" in message
