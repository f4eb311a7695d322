"""The staged folder: files, counts, card, atomic replacement, and loading with `datasets`."""

from __future__ import annotations

from pathlib import Path

import datasets
import huggingface_hub.constants
import polars as pl
import pytest
from huggingface_hub import DatasetCard

from phantom_assets.publish import (
    CONFIG_PATHS,
    SESSIONS_CSV,
    WHOCLICKEDIT_SCHEMA,
    CardParams,
    PublishInputs,
    StagedDataset,
    plan_operations,
    stage_dataset,
)
from phantom_assets.schema.raw_formats import WHOCLICKEDIT_COLUMNS
from tests.unit.publish.builders import contaminated, kernels


@pytest.fixture
def load(offline_hf: Path, monkeypatch: pytest.MonkeyPatch):
    """`datasets.load_dataset` forced offline (flags are read at import) with a tmp cache."""
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)

    def _load(folder: Path, name: str | None = None) -> datasets.DatasetDict:
        return datasets.load_dataset(str(folder), name, cache_dir=str(offline_hf / "cache"))

    return _load


def test_stage_dataset_writes_every_config_the_csv_and_the_card(staged: StagedDataset) -> None:
    on_disk = sorted(
        p.relative_to(staged.path).as_posix() for p in staged.path.rglob("*") if p.is_file()
    )

    assert list(staged.files) == on_disk
    assert set(on_disk) == {"README.md", SESSIONS_CSV, *CONFIG_PATHS.values()}
    assert staged.configs == ("sessions", "kernels", "contaminated")


def test_stage_dataset_counts_rows_sessions_and_dropped_metadata(staged: StagedDataset) -> None:
    assert staged.counts == {
        "rows": 10,
        "sessions": 4,
        "rows_sessions": 10,
        "rows_kernels": 4 * 25,
        "rows_contaminated": 3,
        "metadata_values_dropped": 1,
    }


def test_stage_dataset_card_loads_with_the_required_fields(staged: StagedDataset) -> None:
    data = DatasetCard.load(staged.path / "README.md").data

    for name in ("license", "pretty_name", "task_categories", "tags", "size_categories"):
        assert getattr(data, name), name
    assert data.size_categories == ["n<1K"]
    assert [c["config_name"] for c in data.configs] == list(staged.configs)
    assert [c["data_files"][0]["path"] for c in data.configs] == [
        CONFIG_PATHS[name] for name in staged.configs
    ]
    assert [c.get("default", False) for c in data.configs] == [True, False, False]


def test_stage_dataset_lists_only_the_configs_present(events: pl.DataFrame, tmp_path: Path) -> None:
    staged = stage_dataset(PublishInputs(events), tmp_path / "out")

    data = DatasetCard.load(staged.path / "README.md").data
    assert staged.configs == ("sessions",)
    assert [c["config_name"] for c in data.configs] == ["sessions"]
    assert not (staged.path / "data" / "kernels").exists()


def test_stage_dataset_default_config_loads_with_datasets(staged: StagedDataset, load) -> None:
    loaded = load(staged.path)

    train = loaded["train"]
    assert train.column_names == list(WHOCLICKEDIT_COLUMNS)
    assert train.num_rows == staged.counts["rows"]
    assert sorted(set(train["sessionId"])) == ["a1", "a2", "h1", "u1"]


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("kernels", ["store", "actor", "src", "dst", "count", "prob"]),
        (
            "contaminated",
            ["session_id", "source", "actor", "alpha", "n_events", "f", "trajectory", "store"],
        ),
    ],
)
def test_stage_dataset_extra_configs_load_with_datasets(
    staged: StagedDataset, load, name: str, columns: list[str]
) -> None:
    train = load(staged.path, name)["train"]

    assert train.column_names == columns
    assert train.num_rows == staged.counts[f"rows_{name}"]


def test_stage_dataset_loaded_contaminated_trajectories_are_lists(
    staged: StagedDataset, load
) -> None:
    train = load(staged.path, "contaminated")["train"]

    synthetic = train.filter(lambda row: row["source"] == "synthetic")
    assert synthetic["trajectory"] == [["session_start", "add_item_to_cart"]]


def test_stage_dataset_csv_holds_the_same_table_as_the_parquet(staged: StagedDataset) -> None:
    parquet = pl.read_parquet(staged.path / CONFIG_PATHS["sessions"])
    csv = pl.read_csv(staged.path / SESSIONS_CSV, schema=WHOCLICKEDIT_SCHEMA)

    assert csv.equals(parquet)


def test_stage_dataset_is_byte_identical_for_the_same_inputs(
    full_inputs: PublishInputs, staged: StagedDataset, tmp_path: Path
) -> None:
    again = stage_dataset(full_inputs, tmp_path / "again")

    assert plan_operations(again) == plan_operations(staged)


def test_stage_dataset_replaces_an_existing_folder_whole(
    events: pl.DataFrame, staged: StagedDataset
) -> None:
    (staged.path / "stale.txt").write_text("from an older run")

    restaged = stage_dataset(PublishInputs(events), staged.path)

    assert not (staged.path / "stale.txt").exists()
    assert not (staged.path / CONFIG_PATHS["kernels"]).exists()
    assert restaged.configs == ("sessions",)
    assert [p.name for p in staged.path.parent.iterdir()] == [staged.path.name]


def test_stage_dataset_keeps_the_previous_folder_when_inputs_are_bad(
    events: pl.DataFrame, staged: StagedDataset
) -> None:
    before = plan_operations(staged)

    with pytest.raises(ValueError, match="prob"):
        stage_dataset(PublishInputs(events, kernels=kernels().drop("prob")), staged.path)

    assert plan_operations(staged) == before
    assert [p.name for p in staged.path.parent.iterdir()] == [staged.path.name]


def test_stage_dataset_rejects_contaminated_frames_without_trajectories(
    events: pl.DataFrame, tmp_path: Path
) -> None:
    bad = PublishInputs(events, contaminated=contaminated().drop("trajectory"))

    with pytest.raises(ValueError, match="trajectory"):
        stage_dataset(bad, tmp_path / "out")


def test_stage_dataset_rejects_empty_events(events: pl.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        stage_dataset(PublishInputs(events.clear()), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_stage_dataset_refuses_a_card_that_fails_the_offline_checks(
    events: pl.DataFrame, tmp_path: Path
) -> None:
    bad = PublishInputs(events, card=CardParams(tags=()))

    with pytest.raises(ValueError, match="'tags' is missing or empty"):
        stage_dataset(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()
