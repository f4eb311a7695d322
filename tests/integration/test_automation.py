"""Declarative automation reacts to changed data versions only: a new export for one store never
reruns the other store's chain (docs/architecture.md#automation)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import dagster as dg
import polars as pl
import pytest

from orchestration.bench_automation import CHEAP_SELECTION
from orchestration.definitions import build_definitions
from orchestration.runner import register_batches, run_pipeline
from phantom_assets.config import Settings
from phantom_assets.simulate import simulate_to_incoming
from phantom_assets.simulate.corpus import simulate_events
from phantom_assets.simulate.exports import write_exports
from phantom_assets.simulate.params import SimulatedCorpus, params_from

# The whole automation drill (a cheap graph built, ticked until quiet, a new export, ticked again):
# 100 s of one worker, so it runs with the slow tier (`make test-all`, CI); the conditions' own
# cases are unit tests (`tests/unit/test_automation_conditions.py`).
pytestmark = [pytest.mark.integration, pytest.mark.slow]

PER_STORE = (
    "store_warehouse",
    "labeled_sessions",
    "transition_kernels",
    "divergence_scores",
    "separability_report",
    "contaminated_datasets",
    "market_simulators",
    "coi_erosion",
    "market_oracle",
)
STORE_SCOPED_DOWNSTREAM = PER_STORE[1:]
DBT_MODELS = (
    "stg_events",
    "int_events_deduplicated",
    "sessions",
    "session_labels",
    "fingerprint_sessions",
    "price_quote_events",
)
# Runs in sequence from a new batch to the cheap leaves: dbt models, store slices, sessions with
# kernels, store prices' children, scores, then datasets / separability / markets, the market's
# children; the last tick is the one that finds nothing left.
DEPTH_AFTER_INGEST = 8  # every per-store asset after the store's slice


def _store(key: str | None) -> str | None:
    if key is None:
        return None
    return next((part for part in key.split("|") if part in ("hotel", "airline")), None)


def _hotel_only_export(settings: Settings, seed: int) -> None:
    """A new export that holds hotel sessions only (another seed: new content)."""
    corpus = simulate_events(replace(params_from(settings), seed=seed))
    events = corpus.events.filter(pl.col("store") == "hotel")
    experiments = corpus.experiments.filter(
        pl.col("experimentId").is_in(events["experiment_id"].unique().implode())
    )
    write_exports(
        SimulatedCorpus(events, experiments, corpus.params),
        settings.incoming_dir,
        formats=("whoclickedit_parquet",),
        prefix=f"hotel-only-{seed}",
    )


def _versions(instance: dg.DagsterInstance, key: str) -> dict[str, str]:
    out = {}
    for record in instance.fetch_materializations(dg.AssetKey(key), limit=1000).records:
        partition = record.asset_materialization.partition
        out.setdefault(partition, record.asset_materialization.tags["dagster/data_version"])
    return out


def _drain(defs, instance, cursor, now) -> tuple[dict[str, set], object, list[set[str]]]:
    """Evaluate the automation conditions and execute what they request, until quiet: what was
    requested (per asset, its partitions), the cursor, and each tick's requested assets.

    Fails if one asset partition is requested twice (it would have run on an old input)."""
    requested: dict[str, set] = defaultdict(set)
    ticks: list[set[str]] = []
    assets = list(defs.assets or [])
    selection = dg.AssetSelection.from_string(CHEAP_SELECTION)
    for _ in range(12):
        result = dg.evaluate_automation_conditions(
            defs, instance, asset_selection=selection, cursor=cursor, evaluation_time=now
        )
        cursor = result.cursor
        if result.total_requested == 0:
            return requested, cursor, ticks
        by_partition: dict[str | None, list[dg.AssetKey]] = defaultdict(list)
        ticks.append(set())
        for record in result.results:
            for partition in result.get_requested_partitions(record.key):
                name = record.key.to_user_string()
                assert partition not in requested[name], f"{name} [{partition}] requested twice"
                requested[name].add(partition)
                ticks[-1].add(name)
                by_partition[partition].append(record.key)
        graph = defs.resolve_asset_graph()
        for partition, keys in by_partition.items():
            for group in _same_partitioning(graph, keys):
                run = dg.materialize(
                    assets,
                    selection=group,
                    partition_key=partition,
                    instance=instance,
                    resources=defs.resources,
                )
                assert run.success
        now += timedelta(minutes=1)
    raise AssertionError(f"automation never settled: {dict(requested)}")


def _same_partitioning(graph, keys):
    groups: dict[object, list[dg.AssetKey]] = defaultdict(list)
    for key in keys:
        groups[graph.get(key).partitions_def].append(key)
    return list(groups.values())


def test_a_new_export_for_one_store_reruns_nothing_of_the_other_store(settings: Settings):
    simulate_to_incoming(settings, settings.incoming_dir)
    defs = build_definitions(settings)
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    with dg.instance_for_test() as instance:
        assert not run_pipeline(settings, instance, CHEAP_SELECTION, defs=defs).failed
        quiet, cursor, _ = _drain(defs, instance, None, now)  # first tick: all is current
        assert not quiet, quiet
        before = {key: _versions(instance, key) for key in PER_STORE}

        _hotel_only_export(settings, seed=settings.simulation.seed + 1)
        _, new = register_batches(settings, instance)
        assert len(new) == 1
        assert dg.materialize(
            list(defs.assets),
            selection=["raw_events", "raw_events_quarantine"],
            partition_key=new[0],
            instance=instance,
            resources=defs.resources,
        ).success  # the sensor's run
        requested, _, ticks = _drain(defs, instance, cursor, now + timedelta(minutes=5))
        after = {key: _versions(instance, key) for key in PER_STORE}

    assert "sessions" in requested  # the warehouse took the new batch in
    dbt_models = {key for key in requested if key in DBT_MODELS}
    assert any(dbt_models <= tick for tick in ticks), ticks  # one run for the dbt models
    # One tick per run depth: a tick requests only assets whose inputs are all current.
    assert len(ticks) <= DEPTH_AFTER_INGEST, ticks
    assert any(_store(p) == "hotel" for p in requested["labeled_sessions"])
    assert requested["store_warehouse"] == {"hotel", "airline"}  # both slices re-hashed...
    assert any(_store(p) == "hotel" for p in requested["transition_kernels"])  # hotel rebuilt
    for key in STORE_SCOPED_DOWNSTREAM:
        airline = {p for p in requested.get(key, set()) if _store(p) == "airline"}
        assert not airline, f"{key} reran for airline: {sorted(airline)}"
    # ...and airline's came out the same, so nothing of airline reran after it.
    assert after["store_warehouse"]["airline"] == before["store_warehouse"]["airline"]
    assert after["store_warehouse"]["hotel"] != before["store_warehouse"]["hotel"]
