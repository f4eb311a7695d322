"""write_exports / simulate_to_incoming: every format re-reads to the same records."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from phantom_assets.schema.raw_formats import (
    EXPERIMENT_COLUMNS,
    KAFKA_INTERACTIONS_TOPIC,
    KAFKA_PRICE_TOPIC,
    PAYLOAD_FIELDS,
    WHOCLICKEDIT_COLUMNS,
)
from phantom_assets.simulate import (
    ALL_FORMATS,
    METADATA_DTYPE,
    SimulationParams,
    simulate_to_incoming,
    write_exports,
)
from phantom_assets.storage import atomic_write

KEY = ["sessionId", "ts", "eventName"]


@pytest.fixture(scope="module")
def written(small_corpus, tmp_path_factory) -> tuple[Path, list[Path]]:
    out = tmp_path_factory.mktemp("exports")
    return out, write_exports(small_corpus, out, batches=2)


def _read_kafka(path: Path) -> pl.DataFrame:
    envelopes = json.loads(path.read_text())
    assert all(set(e) == {"partitionID", "offset", "timestamp", "key", "value"} for e in envelopes)
    return pl.DataFrame(
        [
            {
                **e["value"]["payload"],
                "metadata": json.dumps(e["value"]["payload"]["metadata"]),
                "offset": e["offset"],
                "partitionID": e["partitionID"],
            }
            for e in envelopes
        ],
        infer_schema_length=None,
    )


def _read_jsonl(path: Path) -> pl.DataFrame:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(set(r) <= set(PAYLOAD_FIELDS) for r in rows)
    return pl.DataFrame(
        [{**r, "metadata": json.dumps(r["metadata"])} for r in rows], infer_schema_length=None
    )


def test_write_exports_names_files_deterministically(written) -> None:
    out, paths = written
    names = sorted(p.name for p in paths)
    expected = []
    for k in (0, 1):
        stem = f"sessions_all_{k}"
        expected += [f"{stem}.csv", f"{stem}.parquet", f"{stem}.events.jsonl"]
        expected += [f"{stem}.events.experiments.csv"]
        for topic in (KAFKA_INTERACTIONS_TOPIC, KAFKA_PRICE_TOPIC):
            expected += [f"{stem}.{topic}.json", f"{stem}.{topic}.experiments.csv"]
    assert names == sorted(expected)
    assert sorted(p.name for p in out.iterdir()) == names  # no temp files left behind
    for table in (p for p in paths if p.suffix in (".csv", ".parquet")):
        # a reader must not pick up a JSON Lines sidecar as labels of a whoclickedit file
        assert not (out / (table.stem + ".experiments.csv")).exists()


def test_every_format_rereads_to_the_same_records(small_corpus, written) -> None:
    out, _ = written
    n_records = small_corpus.events.height
    csv = pl.concat(
        [pl.read_csv(out / f"sessions_all_{k}.csv", infer_schema_length=None) for k in (0, 1)]
    )
    parquet = pl.concat([pl.read_parquet(out / f"sessions_all_{k}.parquet") for k in (0, 1)])
    kafka = pl.concat(
        [
            _read_kafka(out / f"sessions_all_{k}.{t}.json")
            for k in (0, 1)
            for t in (KAFKA_INTERACTIONS_TOPIC, KAFKA_PRICE_TOPIC)
        ],
        how="diagonal_relaxed",
    )
    jsonl = pl.concat(
        [_read_jsonl(out / f"sessions_all_{k}.events.jsonl") for k in (0, 1)],
        how="diagonal_relaxed",
    )
    assert tuple(csv.columns) == tuple(parquet.columns) == WHOCLICKEDIT_COLUMNS
    for frame in (csv, parquet, kafka, jsonl):
        assert frame.height == n_records
    reference = small_corpus.events.select(
        pl.col("session_id").alias("sessionId"),
        pl.col("ts").dt.epoch("ms").alias("ts"),
        pl.col("event").alias("eventName"),
        pl.col("price"),
    ).sort(KEY)
    for frame in (csv, parquet, kafka, jsonl):
        got = frame.select(*KEY, pl.col("price").cast(pl.Float64)).sort(KEY)
        assert got.equals(reference)


def test_nested_and_flattened_metadata_carry_the_same_values(small_corpus, written) -> None:
    out, _ = written
    jsonl = _read_jsonl(out / "sessions_all_0.events.jsonl").sort(KEY)
    parquet = pl.read_parquet(out / "sessions_all_0.parquet").sort(KEY)
    nested = jsonl["metadata"].str.json_decode(METADATA_DTYPE).struct.unnest()
    flat = parquet.select(pl.col(f"metadata_{k}").alias(k) for k in METADATA_DTYPE.to_schema())
    assert nested.equals(flat)


def test_whoclickedit_rows_carry_labels_and_kafka_positions(written) -> None:
    out, _ = written
    table = pl.read_parquet(out / "sessions_all_1.parquet")
    assert (table["is_agent"] == (table["actor_type"] == "agent")).all()
    assert set(table["actor_type"]) == {"human", "agent"}
    assert table.select(
        pl.struct("kafka_topic", "kafka_partition", "kafka_offset").is_unique().all()
    ).item()
    kafka = _read_kafka(out / f"sessions_all_1.{KAFKA_PRICE_TOPIC}.json")
    logs = table.filter(pl.col("record_type") == "price_log").sort("kafka_offset", "sessionId")
    assert logs["kafka_offset"].sort().to_list() == sorted(kafka["offset"].to_list())


def test_kafka_and_jsonl_carry_labels_only_in_their_sidecar(small_corpus, written) -> None:
    out, _ = written
    for name in ("sessions_all_0.events.jsonl", f"sessions_all_0.{KAFKA_INTERACTIONS_TOPIC}.json"):
        assert "actor" not in (out / name).read_text()
        sidecar = pl.read_csv(out / (Path(name).stem + ".experiments.csv"))
        assert tuple(sidecar.columns) == EXPERIMENT_COLUMNS
        assert sidecar.schema["xp_human_only"] == pl.Boolean
    jsonl = _read_jsonl(out / "sessions_all_0.events.jsonl")
    sidecar = pl.read_csv(out / "sessions_all_0.events.experiments.csv")
    assert set(jsonl["experimentId"]) == set(sidecar["experimentId"])


def test_a_session_never_spans_two_batch_files(written) -> None:
    out, _ = written
    first = set(pl.read_csv(out / "sessions_all_0.csv")["sessionId"])
    second = set(pl.read_csv(out / "sessions_all_1.csv")["sessionId"])
    assert first and second and not first & second


@pytest.mark.parametrize("kwargs", [{"formats": ("xml",)}, {"formats": ()}, {"batches": 0}])
def test_write_exports_rejects_bad_arguments(small_corpus, tmp_path, kwargs) -> None:
    with pytest.raises(ValueError):
        write_exports(small_corpus, tmp_path, **kwargs)


def test_atomic_write_leaves_nothing_behind_when_the_writer_fails(tmp_path) -> None:
    def boom(handle) -> None:
        handle.write(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(tmp_path / "x.csv", boom)
    assert list(tmp_path.iterdir()) == []


def test_simulate_to_incoming_writes_each_session_exactly_once_over_four_formats(tmp_path) -> None:
    params = SimulationParams(seed=5, humans_per_store=6, agents_per_store=3)
    paths = simulate_to_incoming(params, tmp_path)
    data = [p for p in paths if not p.name.endswith(".experiments.csv")]
    assert {p.suffix for p in data} == {".csv", ".parquet", ".json", ".jsonl"}
    assert len(data) == len(ALL_FORMATS) + 1  # Kafka writes one file per topic
    sessions: list[str] = []
    for path in data:
        if path.suffix == ".csv":
            frame = pl.read_csv(path).filter(pl.col("record_type") == "interaction")
        elif path.suffix == ".parquet":
            frame = pl.read_parquet(path).filter(pl.col("record_type") == "interaction")
        elif path.suffix == ".jsonl":
            frame = _read_jsonl(path).filter(pl.col("eventName") != "price_quote")
        elif KAFKA_PRICE_TOPIC in path.name:
            continue
        else:
            frame = _read_kafka(path)
        sessions += frame["sessionId"].unique().to_list()
    assert len(sessions) == len(set(sessions)) > 8
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)
