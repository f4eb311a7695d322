"""Inputs and settings declared once (`phantom_assets.assets.declared`): a body's lake reads and
settings reads are recorded and held against its asset's deps and code version, through real
Dagster materializations -- each kind of mismatch fails the run and says what to fix -- and every
Python asset of the graph is built that way (the tiny build then runs every declaration)."""

from __future__ import annotations

import dagster as dg
import pytest

from phantom_assets.assets.declared import declared_asset, setting_values, settings_version
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import load_settings
from tests.pipeline_helpers import demo_definitions


def _reads_the_market(storage: StorageResource) -> dg.MaterializeResult:
    settings = storage.settings()
    settings.lake.market_dir("hotel")  # the market's folder (not opened: a path is a read)
    return dg.MaterializeResult(metadata={"cost_share": settings.market.cost_share})


def _materialize(tmp_path, **declaration) -> dg.ExecuteInProcessResult:
    settings = load_settings("demo", data_dir=tmp_path)
    asset = declared_asset(settings=settings, code="v1", name="reader", **declaration)(
        _reads_the_market
    )
    return dg.materialize(
        [asset], resources={"storage": StorageResource.of(settings)}, raise_on_error=False
    )


def _failure(result: dg.ExecuteInProcessResult) -> str:
    (event,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    return event.step_failure_data.error.message


def test_a_body_that_reads_what_it_declares_materializes(tmp_path):
    result = _materialize(tmp_path, deps=["market_simulators"], reads=["market.cost_share"])
    assert result.success


def test_a_read_without_its_edge_fails_the_run_naming_the_asset(tmp_path):
    result = _materialize(tmp_path, reads=["market"])
    assert not result.success
    assert "reads market_simulators's data without depending on it" in _failure(result)


def test_an_edge_without_a_read_fails_the_run_unless_only_some_partitions_read_it(tmp_path):
    declaration = {"deps": ["market_simulators", "market_oracle"], "reads": ["market"]}
    result = _materialize(tmp_path, **declaration)
    assert "depends on market_oracle but never reads its data" in _failure(result)
    assert _materialize(tmp_path, **declaration, read_by_some_partitions=["market_oracle"]).success


def test_a_setting_outside_the_code_version_fails_the_run_naming_it(tmp_path):
    result = _materialize(tmp_path, deps=["market_simulators"], reads=["market.price_cap"])
    message = _failure(result)
    assert "reads the setting market.cost_share, which its code version does not hash" in message
    assert "price_cap" not in message  # hashed and unread is allowed (a stricter version only)


def test_the_code_version_hashes_exactly_the_declared_values():
    settings = load_settings("demo")
    values = setting_values(settings, ["market.cost_share", "agents"])
    assert values["market.cost_share"] == settings.market.cost_share
    assert {"agents.alpha_grid", "agents.k_grid"} <= set(values)
    assert not any(name.startswith("market.") and name != "market.cost_share" for name in values)
    assert settings_version("v1", values) != settings_version("v1", {**values, "agents.k_grid": 1})
    with pytest.raises(ValueError, match="names no setting"):
        setting_values(settings, ["market.nonsense"])


def test_every_python_asset_of_the_graph_is_declared_once():
    """Every asset with a Python body records its reads (dbt models and the observed drop zone
    have none), so the build's run holds each one to its declarations."""
    undeclared, declared = [], set()
    for definition in demo_definitions().assets or []:
        if not isinstance(definition, dg.AssetsDefinition) or not definition.is_executable:
            continue
        if any("dbt" in spec.kinds for spec in definition.specs):
            continue
        compute = definition.op.compute_fn.decorated_fn
        names = {key.to_user_string() for key in definition.keys}
        if getattr(compute, "__phantom_declared__", None) is None:
            undeclared += sorted(names)
        declared |= names
    assert undeclared == []
    assert {"raw_events", "store_warehouse", "trained_policies", "certification_report"} <= declared


def test_every_lake_path_reports_the_asset_it_belongs_to(tmp_path):
    """The layout is the one owner of lake paths, so it is where reads are seen: each of its
    methods reports exactly the asset whose folder it builds (a method that joined paths by hand
    would let an asset read around its declared inputs)."""
    import inspect

    from phantom_assets.lake import Lake
    from phantom_assets.reads import recording_reads

    lake = Lake(tmp_path)
    arguments = {"batch": "b", "store": "hotel", "actor": "human", "alpha": 0.5, "policy": "p"}
    arguments |= {"mart": "sessions", "pattern": "*.parquet", "name": "x.parquet"}
    for name, method in inspect.getmembers(lake, inspect.ismethod):
        if name.startswith("_"):
            continue
        parameters = inspect.signature(method).parameters
        with recording_reads() as reads:
            result = method(**{p: arguments[p] for p in parameters})
        paths = result if isinstance(result, list) else [result]
        folders = {p.relative_to(tmp_path).parts[0] for p in paths if hasattr(p, "relative_to")}
        assert len(reads.assets) == 1, (name, reads.assets)
        assert folders <= reads.assets, (name, folders, reads.assets)
