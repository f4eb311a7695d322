"""The contamination artifacts in the lake: reading scored sessions, writing G(α) datasets."""

from __future__ import annotations

import json

import polars as pl
import pytest

from phantom_assets.contamination import (
    mean_f_by_alpha,
    mean_f_is_monotone,
    read_human_sessions,
    read_labeled_f,
    write_contaminated_dataset,
)
from phantom_assets.lake import SCORES_FILE, Lake

ALPHAS = (0.0, 0.5, 1.0)


@pytest.fixture
def lake(tmp_path) -> Lake:
    """A store `hotel` with two human and one agent labeled session, all scored."""
    lake = Lake(tmp_path / "lake")
    sessions = {
        "human": pl.DataFrame(
            {
                "session_id": ["h1", "h2"],
                "actor": "human",
                "experiment_id": ["x1", None],
                "n_events": [3, 4],
            }
        ),
        "agent": pl.DataFrame(
            {"session_id": ["a1"], "actor": "agent", "experiment_id": ["x2"], "n_events": [5]}
        ),
    }
    for actor, frame in sessions.items():
        lake.labeled_sessions("hotel", actor).parent.mkdir(parents=True)
        frame.write_parquet(lake.labeled_sessions("hotel", actor))
    lake.scores_dir("hotel").mkdir(parents=True)
    scores = pl.DataFrame({"session_id": ["a1", "h2", "h1"], "f": [0.9, 0.2, 0.1], "gap": 0.0})
    scores.write_parquet(lake.scores_dir("hotel") / SCORES_FILE)
    return lake


def test_read_human_sessions_attaches_each_session_its_own_f_and_event_times(lake: Lake):
    times = pl.DataFrame({"session_id": ["h2"], "ts": [[1, 2]]})
    humans = read_human_sessions(lake, "hotel", times)
    assert humans["session_id"].to_list() == ["h1", "h2"]
    assert humans["f"].to_list() == [0.1, 0.2]
    assert humans["ts"].to_list() == [None, [1, 2]]


def test_read_labeled_f_stacks_both_classes_with_their_f(lake: Lake):
    labeled = read_labeled_f(lake, "hotel")
    assert labeled.columns == ["session_id", "actor", "experiment_id", "f"]
    assert dict(zip(labeled["session_id"], labeled["f"], strict=True)) == {
        "h1": 0.1,
        "h2": 0.2,
        "a1": 0.9,
    }


def test_write_contaminated_dataset_writes_the_three_files_into_the_folder(lake: Lake):
    folder = lake.contaminated_dir("hotel", 0.5)
    paths = write_contaminated_dataset(
        pl.DataFrame({"f": [0.4]}), {"p1": 2.0}, {"alpha_hat": 0.5}, folder
    )
    assert [p.name for p in paths] == ["sessions.parquet", "demand.json", "alpha_hat.json"]
    assert all(p.parent == folder for p in paths)
    assert pl.read_parquet(paths[0])["f"].to_list() == [0.4]
    assert json.loads(paths[1].read_text()) == {"p1": 2.0}
    assert json.loads(paths[2].read_text()) == {"alpha_hat": 0.5}


def test_mean_f_by_alpha_reads_the_grid_partitions_on_disk_and_flags_a_drop(lake: Lake):
    for alpha, f in zip(ALPHAS, ([0.2, 0.4], [0.9, 0.7], [0.5]), strict=True):
        write_contaminated_dataset(
            pl.DataFrame({"f": f}), {}, {}, lake.contaminated_dir("hotel", alpha)
        )
    observed = mean_f_by_alpha(lake, "hotel", ALPHAS)
    assert observed == pytest.approx({0.0: 0.3, 0.5: 0.8, 1.0: 0.5})
    assert mean_f_by_alpha(lake, "hotel", (0.0, 0.25)) == pytest.approx({0.0: 0.3})
    assert mean_f_by_alpha(lake, "airline", ALPHAS) == {}
    assert not mean_f_is_monotone(observed, 0.02)
    assert mean_f_is_monotone({a: observed[a] for a in (0.0, 0.5)}, 0.02)
