"""The same simulated sessions, written in every raw format, parse to identical canonical rows."""

import polars as pl
import pytest

from phantom_assets.batches import candidate_files
from phantom_assets.schema import parse_batch
from phantom_assets.simulate import SimulationParams, simulate_events, write_exports

# Provenance differs by construction: ids hash the batch and position; labels come from the
# actor column in whoclickedit files and from the experiments sidecar elsewhere.
PROVENANCE = ["event_id", "batch_id", "source_row", "label_source"]
FORMATS = {
    "whoclickedit_csv": ".csv",
    "whoclickedit_parquet": ".parquet",
    "jsonl": ".jsonl",
    "kafka_json": ".json",
}


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    corpus = simulate_events(SimulationParams(seed=3, humans_per_store=6, agents_per_store=3))
    parsed = {}
    for fmt, suffix in FORMATS.items():
        out = tmp_path_factory.mktemp(fmt)
        write_exports(corpus, out, formats=[fmt])
        files = [p for p in candidate_files(out) if p.name.endswith(suffix)]
        results = [parse_batch(p, f"b_{i}") for i, p in enumerate(files)]
        assert all(r.quarantine.height == 0 for r in results), fmt
        parsed[fmt] = (
            pl.concat([r.events for r in results])
            .drop(PROVENANCE)
            .sort("session_id", "ts", "record_type", "event", "product_id", nulls_last=True)
        )
    parsed["corpus_rows"] = corpus.events.height
    return parsed


@pytest.mark.parametrize("fmt", ["whoclickedit_parquet", "jsonl", "kafka_json"])
def test_every_format_parses_to_the_rows_of_the_csv_export(exports, fmt: str):
    assert exports[fmt].equals(exports["whoclickedit_csv"]), fmt


def test_no_simulated_record_is_lost_in_any_format(exports):
    for fmt in FORMATS:
        assert exports[fmt].height == exports["corpus_rows"], fmt
    labels = exports["jsonl"]["actor"].unique().sort().to_list()
    assert labels == ["agent", "human"]
