"""Every file-writing asset records the files it wrote, and `phantom audit` re-hashes them.

The pipeline up to the market simulators and the contaminated datasets runs once on tiny
simulated data; then every materialization of every asset that writes files (all but the dbt
models; observable sources never materialize) must list its `artifacts`, whose combined digest
is the recorded data version -- what `verify_records` recomputes offline.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest

from orchestration.definitions import build_definitions
from orchestration.runner import PipelineReport, run_pipeline
from phantom_assets.assets.lineage import collect_lineage
from phantom_assets.audit import verify_records
from phantom_assets.config import Settings, load_settings
from phantom_assets.lake import SPEC_ARRAYS_FILE, SPEC_SCALARS_FILE
from phantom_assets.simulate import simulate_to_incoming
from phantom_assets.storage import combined_digest
from tests.pipeline_helpers import TINY_CONFIG, simulation_params

if TYPE_CHECKING:
    from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph

pytestmark = pytest.mark.integration

SELECTION = '+key:"market_simulators" or +key:"contaminated_datasets"'
DATA_VERSION_TAG = "dagster/data_version"


@dataclass(frozen=True)
class Built:
    settings: Settings
    instance: dg.DagsterInstance
    report: PipelineReport
    graph: BaseAssetGraph


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("artifacts")
    config = root / "phantom.toml"
    config.write_text(TINY_CONFIG)
    settings = load_settings("demo", data_dir=root / "data", config_file=config)
    simulate_to_incoming(simulation_params(settings), settings.incoming_dir)
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, SELECTION)
        assert not report.failed and not report.skipped, (report.failed, report.skipped)
        graph = build_definitions(settings).resolve_asset_graph()
        yield Built(settings, instance, report, graph)


def _file_writing_keys(built: Built) -> list[dg.AssetKey]:
    """Materialized assets of the selection, less the dbt models (tables, no files)."""
    selected = dg.AssetSelection.from_string(SELECTION).resolve(built.graph)
    return sorted(
        (k for k in selected if "dbt" not in built.graph.get(k).kinds),
        key=lambda k: k.to_user_string(),
    )


def _materializations(built: Built, key: dg.AssetKey) -> list[dg.AssetMaterialization]:
    records = built.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key), limit=10_000
    ).records
    return [r.asset_materialization for r in records if r.asset_materialization is not None]


def test_the_selection_covers_every_file_writing_group(built: Built):
    names = {k.to_user_string() for k in _file_writing_keys(built)}
    assert {"raw_events", "labeled_sessions", "transition_kernels", "divergence_scores",
            "contaminated_datasets", "market_simulators"} <= names  # fmt: skip


def test_every_materialization_of_a_file_writing_asset_records_its_artifacts(built: Built):
    missing = {
        f"{key.to_user_string()} [{event.partition}]"
        for key in _file_writing_keys(built)
        for event in _materializations(built, key)
        if "artifacts" not in event.metadata
    }
    assert not missing, f"materializations without `artifacts` metadata: {sorted(missing)}"


def test_recorded_artifacts_exist_and_hash_to_the_recorded_data_version(built: Built):
    for key in _file_writing_keys(built):
        events = _materializations(built, key)
        assert events, f"{key.to_user_string()} was never materialized"
        for event in events:
            paths = [Path(p) for p in event.metadata["artifacts"].value]
            label = f"{key.to_user_string()} [{event.partition}]"
            assert paths, f"{label} records no files"
            assert all(p.is_file() for p in paths), f"{label}: missing {paths}"
            assert combined_digest(paths) == event.tags[DATA_VERSION_TAG], label


def test_market_simulators_record_both_spec_files(built: Built):
    (event,) = (e for e in _materializations(built, dg.AssetKey("market_simulators"))
                if e.partition == "hotel")  # fmt: skip
    folder = built.settings.lake.market_dir("hotel")
    assert sorted(event.metadata["artifacts"].value) == sorted(
        str(p) for p in (folder / SPEC_SCALARS_FILE, folder / SPEC_ARRAYS_FILE)
    )


def test_verify_records_names_a_tampered_spec_npz(built: Built):
    records = collect_lineage(
        built.instance, built.graph, dg.AssetKey("market_simulators"), "hotel"
    )
    assert verify_records(records).ok
    spec = built.settings.lake.market_dir("hotel") / SPEC_ARRAYS_FILE
    original = spec.read_bytes()
    tampered = bytearray(original)
    tampered[len(tampered) // 2] ^= 0xFF
    spec.write_bytes(bytes(tampered))
    try:
        result = verify_records(records)
    finally:
        spec.write_bytes(original)
    assert not result.ok
    (mismatch,) = result.mismatches
    assert (mismatch.asset, mismatch.partition, mismatch.reason) == (
        "market_simulators",
        "hotel",
        "changed",
    )
    assert Path(mismatch.file) == spec
    assert f"{SPEC_ARRAYS_FILE} changed" in (result.first_mismatch or "")
