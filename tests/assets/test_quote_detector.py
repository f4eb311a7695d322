"""`quote_detector` of the session's built pipeline: both quote-time detectors score every labelled
session out of fold, the market's banks carry detector v2's score with the kernel-only one beside
it, the recall table has every detector × prefix × rate with intervals, and the ledger compares
both detectors."""

import json

import numpy as np
import polars as pl
import pytest

from phantom_assets.constants import ACTORS, STORES
from phantom_assets.detector.classifier import classifiers_from_dict, fit_quote_classifier
from phantom_assets.detector.features import QUOTE_FEATURES
from phantom_assets.detector.fit import DETECTORS, QUOTE_PREFIX, V2_DETECTOR
from phantom_assets.detector.recall import DETECTOR_FPRS, RECALL_SCHEMA
from phantom_assets.lake import CLASSIFIER_FILE, LEDGER_FILE, QUOTE_SCORES_FILE, RECALL_FILE
from phantom_assets.market import MarketSpec
from phantom_assets.market.ledger import EVASION_QUANTITIES
from tests.built_pipeline import BuiltPipeline


def _read(built: BuiltPipeline, store: str, name: str) -> pl.DataFrame:
    return pl.read_parquet(built.settings.lake.quote_detector_dir(store) / name)


@pytest.mark.parametrize("store", STORES)
def test_every_labelled_session_is_scored_once_and_the_market_quotes_with_v2(
    built_pipeline: BuiltPipeline, store: str
):
    settings = built_pipeline.settings
    lake = settings.lake
    scores = _read(built_pipeline, store, QUOTE_SCORES_FILE)
    spec = MarketSpec.load(lake.market_dir(store), settings.agents)
    assert spec.detector == V2_DETECTOR
    for actor, bank_score, kernel_score in (
        ("human", spec.human_score, spec.human_kernel_score),
        ("agent", spec.agent_score, spec.agent_kernel_score),
    ):
        ids = pl.read_parquet(lake.labeled_sessions(store, actor), columns=["session_id"])
        mine = ids.join(scores, on="session_id", how="left", maintain_order="left")
        assert mine["actor"].to_list() == [actor] * ids.height
        np.testing.assert_allclose(mine["v2_score"].to_numpy(), bank_score, atol=1e-12)
        np.testing.assert_allclose(mine["kernel_score"].to_numpy(), kernel_score, atol=1e-12)
    # τ of each detector flags at most the configured share of humans, out of fold.
    fpr = settings.market.detector_fpr
    assert np.mean(spec.human_score > spec.detector_threshold) <= fpr
    assert np.mean(spec.human_kernel_score > spec.kernel_detector_threshold) <= fpr


def test_v2s_scores_come_from_classifiers_that_never_saw_the_sessions_fold(
    built_pipeline: BuiltPipeline,
):
    store = STORES[0]
    scores = _read(built_pipeline, store, QUOTE_SCORES_FILE)
    x = scores.select(QUOTE_FEATURES).to_numpy()
    folds = scores["fold"].to_numpy()
    is_agent = (scores["actor"] == ACTORS[1]).to_numpy()
    models = {}
    for fold in np.unique(folds):  # refitted here without the fold, not by the pipeline's helper
        held = folds == fold
        models[int(fold)] = fit_quote_classifier(x[~held], is_agent[~held], QUOTE_FEATURES)
        np.testing.assert_allclose(
            models[int(fold)].predict(x[held]), scores["v2_score"].to_numpy()[held]
        )
    # The bundle's classifier is fitted on every session: it scores them differently.
    full, saved = classifiers_from_dict(
        json.loads(
            (built_pipeline.settings.lake.quote_detector_dir(store) / CLASSIFIER_FILE).read_text()
        )
    )
    assert saved == models  # the fold classifiers the market's bank and evasion score with
    assert np.abs(full.predict(x) - scores["v2_score"].to_numpy()).max() > 1e-6


@pytest.mark.parametrize("store", STORES)
def test_the_recall_table_has_every_detector_prefix_and_rate_with_an_interval(
    built_pipeline: BuiltPipeline, store: str
):
    settings = built_pipeline.settings
    recall = _read(built_pipeline, store, RECALL_FILE)
    assert recall.schema == pl.Schema(RECALL_SCHEMA)
    prefixes = [*map(str, settings.fingerprint.quote_prefix_events), QUOTE_PREFIX]
    names = [*DETECTORS, f"{DETECTORS[0]} − {DETECTORS[1]}"]
    expected = {(d, p, f) for d in names for p in prefixes for f in DETECTOR_FPRS}
    assert set(recall.select("detector", "prefix", "fpr").iter_rows()) == expected
    assert recall.height == len(expected)
    single = recall.filter(pl.col("detector").is_in(list(DETECTORS)))
    assert ((single["recall"] >= 0) & (single["recall"] <= 1)).all()
    assert (recall["ci_low"] <= recall["recall"] + 1e-12).all()
    assert (recall["recall"] <= recall["ci_high"] + 1e-12).all()
    difference = recall.filter(pl.col("detector") == names[2]).sort("prefix", "fpr")
    by = {(r["detector"], r["prefix"], r["fpr"]): r["recall"] for r in recall.iter_rows(named=True)}
    for r in difference.iter_rows(named=True):
        a, b = (by[d, r["prefix"], r["fpr"]] for d in DETECTORS)
        assert r["recall"] == pytest.approx(a - b)


def test_the_ledger_reports_both_detectors_and_agents_that_adapt(built_pipeline: BuiltPipeline):
    settings = built_pipeline.settings
    swept = sorted(t for t in settings.agents.evasion_thetas if t > 0)
    for store in STORES:
        ledger = pl.read_parquet(settings.lake.oracle_dir(store) / LEDGER_FILE)
        quantities = set(ledger["quantity"])
        assert {"fitted_share", "kernel_only_share", "kernel_only_detector"} <= quantities
        adapted = ledger.filter(pl.col("theta") > 0)
        assert set(adapted["quantity"]) == set(EVASION_QUANTITIES)
        assert sorted(set(adapted["theta"])) == swept
        # Human-like timing is slower: an adapting agent session reaches its quote later, the
        # more so the more it adapts, and τ flags fewer of them.
        for alpha, k in set(adapted.select("alpha", "k").iter_rows()):
            cell = adapted.filter(pl.col("alpha") == alpha, pl.col("k") == k).sort("theta")
            cost = cell.filter(pl.col("quantity") == "adapted_time_cost_s")
            flagged = cell.filter(pl.col("quantity") == "adapted_agents_flagged")
            assert (cost["value"].diff().drop_nulls() > 0).all() and cost["value"][0] > 0
            assert (flagged["value"].diff().drop_nulls() <= 0).all()
