"""Fixtures: synthetic publish inputs and an offline, temp-rooted Hugging Face cache."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from phantom_assets.publish import PublishInputs, StagedDataset, stage_dataset
from tests.unit.publish.builders import canonical_events, contaminated, kernels


@pytest.fixture
def events() -> pl.DataFrame:
    return canonical_events()


@pytest.fixture
def full_inputs(events: pl.DataFrame) -> PublishInputs:
    return PublishInputs(events=events, kernels=kernels(), contaminated=contaminated())


@pytest.fixture
def staged(full_inputs: PublishInputs, tmp_path: Path) -> StagedDataset:
    return stage_dataset(full_inputs, tmp_path / "publish" / "hf_dataset")


@pytest.fixture
def offline_hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Offline `datasets`/`huggingface_hub` with caches under tmp (nothing reaches the Hub)."""
    home = tmp_path / "hf_home"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(home / "datasets"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return home
