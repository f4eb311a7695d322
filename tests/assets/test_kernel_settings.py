"""κ is part of `transition_kernels` alone: its code version moves with κ, and the kernels keep
the κ they were fitted with, whatever the settings say when they are read."""

from __future__ import annotations

import dataclasses

import dagster as dg
import numpy as np
import polars as pl
import pytest

from phantom_assets.assets.fingerprint import build_fingerprint_assets
from phantom_assets.assets.graph import build_assets
from phantom_assets.assets.partitions import build_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.fingerprint import (
    fit_class_kernels,
    load_kernel_set,
    random_chain,
    synthetic_sessions,
    write_kernel_set,
)
from phantom_assets.lake import KERNEL_META_FILE

KAPPA_A, KAPPA_B = 0.5, 3.0
STORE, ACTOR = "hotel", "agent"
KERNEL_READERS = (
    "divergence_scores",
    "separability_report",
    "contaminated_datasets",
    "market_simulators",
)


def _with_kappa(settings: Settings, kappa: float) -> Settings:
    return dataclasses.replace(
        settings, fingerprint=dataclasses.replace(settings.fingerprint, kappa=kappa)
    )


def _code_versions(settings: Settings) -> dict[str, str | None]:
    return {
        key.to_user_string(): version
        for asset in build_assets(settings)
        if isinstance(asset, dg.AssetsDefinition)
        for key, version in asset.code_versions_by_key.items()
    }


@pytest.fixture
def sessions() -> pl.DataFrame:
    """Seeded labeled sessions of both classes (fingerprint input contract + experiment_id)."""
    rng = np.random.default_rng(5)
    return synthetic_sessions(random_chain(rng), random_chain(rng), 30, 15, rng, max_events=40)


def test_changing_kappa_moves_transition_kernels_code_version_but_not_its_readers(
    settings: Settings,
):
    before = _code_versions(_with_kappa(settings, KAPPA_A))
    after = _code_versions(_with_kappa(settings, KAPPA_B))
    assert before.keys() == after.keys()
    assert before["transition_kernels"] != after["transition_kernels"]
    # Readers take κ from `kernel.json`: they go stale through the kernels' data, not the code.
    for key in ("raw_events", "labeled_sessions", *KERNEL_READERS):
        assert before[key] == after[key], key


def test_kernels_written_with_one_kappa_read_back_with_it_after_the_settings_change(
    settings: Settings, sessions: pl.DataFrame
):
    fitted = fit_class_kernels(sessions, ACTOR, kappa=KAPPA_A)
    write_kernel_set(fitted, _with_kappa(settings, KAPPA_A).lake.kernels_dir(STORE, ACTOR))
    read = load_kernel_set(_with_kappa(settings, KAPPA_B).lake, STORE, ACTOR)
    refit = fit_class_kernels(sessions, ACTOR, kappa=KAPPA_B)
    assert not np.allclose(refit.full.probs, fitted.full.probs)  # κ matters for these counts
    for got, want in zip((read.full, *read.folds), (fitted.full, *fitted.folds), strict=True):
        assert got.kappa == KAPPA_A
        np.testing.assert_array_equal(got.probs, want.probs)


def test_transition_kernels_records_kernel_json_as_an_artifact(
    settings: Settings, sessions: pl.DataFrame
):
    fitting = _with_kappa(settings, KAPPA_A)
    path = fitting.lake.labeled_sessions(STORE, ACTOR)
    path.parent.mkdir(parents=True)
    sessions.filter(pl.col("actor") == ACTOR).write_parquet(path)
    assets = build_fingerprint_assets(fitting, build_partitions(fitting))
    kernels = next(a for a in assets if dg.AssetKey("transition_kernels") in a.keys)
    storage = StorageResource.of(fitting)
    result = dg.materialize(
        [kernels],
        partition_key=dg.MultiPartitionKey({"store": STORE, "actor": ACTOR}),
        resources={"storage": storage},
    )
    assert result.success
    folder = fitting.lake.kernels_dir(STORE, ACTOR).resolve()
    (event,) = result.get_asset_materialization_events()
    artifacts = event.materialization.metadata["artifacts"].value
    assert str(folder / KERNEL_META_FILE) in artifacts
    read = load_kernel_set(_with_kappa(settings, KAPPA_B).lake, STORE, ACTOR)
    assert read.full.kappa == KAPPA_A
    expected = fit_class_kernels(pl.read_parquet(path), ACTOR, kappa=KAPPA_A).full.probs
    np.testing.assert_array_equal(read.full.probs, expected)
