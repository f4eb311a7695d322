"""Every file-writing asset records the files it wrote, and `phantom audit` re-hashes them.

On the session's built pipeline (`phantom run`, tiny config), every materialization of every asset
that writes files (all but the dbt models and the manual publish group; observable sources never
materialize) must list its `artifacts`, whose combined digest is the recorded data version --
what `verify_records` recomputes offline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pytest

from orchestration.definitions import build_definitions
from orchestration.planning import MANUAL_GROUPS
from phantom_assets.assets.lineage import collect_lineage
from phantom_assets.audit import verify_records
from phantom_assets.config import Settings
from phantom_assets.lake import REPORT_MD_FILE, SPEC_ARRAYS_FILE, SPEC_SCALARS_FILE
from phantom_assets.storage import combined_digest
from tests.built_pipeline import BuiltPipeline

if TYPE_CHECKING:
    from phantom_assets.assets.dagster_internals import BaseAssetGraph

pytestmark = pytest.mark.integration

DATA_VERSION_TAG = "dagster/data_version"


@dataclass(frozen=True)
class Built:
    settings: Settings
    instance: dg.DagsterInstance
    graph: BaseAssetGraph


def _built(pipeline: BuiltPipeline) -> Iterator[Built]:
    with pipeline.instance() as instance:
        graph = build_definitions(pipeline.settings).resolve_asset_graph()
        yield Built(pipeline.settings, instance, graph)


@pytest.fixture(scope="module")
def built(built_pipeline: BuiltPipeline) -> Iterator[Built]:
    yield from _built(built_pipeline)


@pytest.fixture
def copied(built_pipeline: BuiltPipeline, tmp_path: Path) -> Iterator[tuple[Built, Path]]:
    """A private copy whose files may be tampered with, and the data root it was copied from
    (its instance records the original's artifact paths)."""
    for built in _built(built_pipeline.copy_to(tmp_path)):
        yield built, built_pipeline.data_dir


def _file_writing_keys(built: Built) -> list[dg.AssetKey]:
    """Assets `phantom run` materializes, less the dbt models (tables, no files)."""
    return sorted(
        (
            k
            for k in built.graph.materializable_asset_keys
            if "dbt" not in built.graph.get(k).kinds
            and built.graph.get(k).group_name not in MANUAL_GROUPS
        ),
        key=lambda k: k.to_user_string(),
    )


def _materializations(built: Built, key: dg.AssetKey) -> list[dg.AssetMaterialization]:
    records = built.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key), limit=10_000
    ).records
    return [r.asset_materialization for r in records if r.asset_materialization is not None]


def test_the_selection_covers_every_file_writing_group(built: Built):
    names = {k.to_user_string() for k in _file_writing_keys(built)}
    assert {
        "raw_events",
        "labeled_sessions",
        "transition_kernels",
        "divergence_scores",
        "contaminated_datasets",
        "market_simulators",
        "trained_policies",
        "policy_evaluations",
        "benchmark_curves",
        "certification_report",
    } <= names


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


def test_every_column_of_a_python_asset_table_is_described(built: Built):
    tables = {
        key.to_user_string(): event.metadata["dagster/column_schema"].schema.columns
        for key in _file_writing_keys(built)
        for event in _materializations(built, key)
        if "dagster/column_schema" in event.metadata
    }
    assert len(tables) >= 12  # events ... benchmark curves: every tabular Python asset
    undescribed = sorted(
        f"{asset}.{column.name}"
        for asset, columns in tables.items()
        for column in columns
        if not column.description
    )
    assert undescribed == [], "add them to phantom_assets/columns.py"


def test_the_ui_holds_the_whole_certificate_without_exponents_in_its_numbers(built: Built):
    # The reasons were cut off in the UI's metadata table and read `3.825e+04`.
    events = _materializations(built, dg.AssetKey("certification_report"))
    assert {event.partition for event in events} == {"hotel", "airline"}
    for event in events:
        folder = built.settings.lake.certification_dir(str(event.partition))
        certificate = (folder / REPORT_MD_FILE).read_text()
        assert event.metadata["certificate"].value == certificate
        reasons = event.metadata["reasons"].value.splitlines()
        assert reasons and all(reason.removeprefix("- ") in certificate for reason in reasons)
        assert not re.search(r"\d\.\d+e\+\d", certificate), "a number with an exponent"


def test_market_simulators_record_both_spec_files(built: Built):
    (event,) = (
        e
        for e in _materializations(built, dg.AssetKey("market_simulators"))
        if e.partition == "hotel"
    )
    folder = built.settings.lake.market_dir("hotel")
    assert sorted(event.metadata["artifacts"].value) == sorted(
        str(p) for p in (folder / SPEC_SCALARS_FILE, folder / SPEC_ARRAYS_FILE)
    )


def test_verify_records_names_a_tampered_spec_npz(copied: tuple[Built, Path]):
    built, original_root = copied
    lineage = collect_lineage(
        built.instance, built.graph, dg.AssetKey("market_simulators"), "hotel"
    )
    # Rebased on the copy, as `phantom audit` does: the original's files stay untouched.
    records = [record.relative_to(original_root) for record in lineage]
    root = built.settings.data_dir
    assert verify_records(records, root).ok
    spec = built.settings.lake.market_dir("hotel") / SPEC_ARRAYS_FILE
    original = spec.read_bytes()
    tampered = bytearray(original)
    tampered[len(tampered) // 2] ^= 0xFF
    spec.write_bytes(bytes(tampered))
    try:
        result = verify_records(records, root)
    finally:
        spec.write_bytes(original)
    assert not result.ok
    (mismatch,) = result.mismatches
    assert (mismatch.asset, mismatch.partition, mismatch.reason) == (
        "market_simulators",
        "hotel",
        "changed",
    )
    assert root / mismatch.file == spec
    assert f"{SPEC_ARRAYS_FILE} changed" in (result.first_mismatch or "")
