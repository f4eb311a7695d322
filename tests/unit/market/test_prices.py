"""Store prices from price logs: quote features, cleaning, the price model, its files."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from phantom_assets.constants import ENGAGEMENT_SIGNALS, PRICE_EXCLUSION_REASONS
from phantom_assets.market.prices import (
    ANCHOR_SCHEMA,
    QUOTE_COLUMNS,
    PriceFitParams,
    declared_price_model,
    exclusion_counts,
    fit_price_model,
    quote_features,
    read_store_prices,
    view_quotes,
    write_store_prices,
)
from phantom_assets.simulate.catalog import catalog_for
from phantom_assets.simulate.demand import DEMO_DEMAND
from tests.unit.market.price_builders import demo_events, events_frame, log_sd, reprice

Q = "price_quote"
STORES = ("hotel", "airline")


# --- quote features on hand-made sessions ---------------------------------------------------
def one_session() -> pl.DataFrame:
    return events_frame(
        [
            ("s1", "x1", 0, "session_start", None, None),
            ("s1", "x1", 1_000, "page_view", None, None),
            ("s1", "x1", 2_000, "view_item_page", "A", None),
            ("s1", "x1", 2_005, Q, "A", 100.0),
            ("s1", "x1", 3_000, "hover_over_title", "A", None),
            ("s1", "x1", 4_000, "view_item_page", "B", None),
            ("s1", "x1", 4_010, Q, "B", 206.0),
            ("s1", "x1", 5_000, "add_item_to_cart", "B", None),
            ("s1", "x1", 5_003, Q, "B", 206.0),
            ("s1", "x1", 6_000, "purchase_complete", "B", None),
            ("s1", "x1", 6_002, Q, "B", 206.0),
        ]
    )


def test_quote_features_measure_engagement_before_the_showing_interaction():
    q = quote_features(one_session())
    assert q.columns == list(QUOTE_COLUMNS) and q["reason"].null_count() == q.height
    assert q["event"].to_list() == [
        "view_item_page",
        "view_item_page",
        "add_item_to_cart",
        "purchase_complete",
    ]
    # before view A: start, page_view; before view B: + view A, hover; before the cart: + view B
    assert q["s_product_views"].to_list() == [0.0, 1.0, 2.0, 2.0]
    assert q["s_events"].to_list() == [2.0, 4.0, 5.0, 6.0]
    assert q["s_demand_proxy"].to_list() == [2.0, 5.0, 6.0, 10.0]
    assert q["s_none"].to_list() == [0.0] * 4
    assert q["bought"].to_list() == [False, True, True, True]


def test_quote_features_order_ties_by_source_row_then_batch_not_by_input_order():
    rows = [
        ("s1", "x1", 0, "session_start", None, None, 0),
        ("s1", "x1", 2_000, "view_item_page", "A", None, 7),  # same ts: B's row 5 comes first
        ("s1", "x1", 2_000, "view_item_page", "B", None, 5),
        ("s1", "x1", 2_001, Q, "A", 100.0, 8),
        ("s1", "x1", 2_001, Q, "B", 200.0, 6),
        ("s2", "x1", 0, "view_item_page", "A", None, 3, "b2"),  # same ts and row: batch b1 first
        ("s2", "x1", 0, "view_item_page", "B", None, 3, "b1"),
        ("s2", "x1", 9, Q, "A", 100.0, 4, "b2"),
    ]
    frame = events_frame(rows)
    for shuffled in (frame, frame.reverse(), frame.sample(fraction=1.0, shuffle=True, seed=3)):
        q = quote_features(shuffled.lazy()).select("session_id", "product_id", "s_product_views")
        assert q.rows() == [("s1", "B", 0.0), ("s1", "A", 1.0), ("s2", "A", 1.0)]


def test_quote_features_exclude_bad_logs_with_a_counted_reason():
    rows = [("s1", "x1", 1_000 * i, "view_item_page", "A", None) for i in range(1, 7)]
    rows += [("s1", "x1", 1_000 * i + 5, Q, "A", 100.0) for i in range(1, 7)]
    rows += [
        ("s1", "x1", 7_000, "view_item_page", "B", None),
        ("s1", "x1", 7_001, Q, None, 100.0),  # no product
        ("s1", "x1", 7_002, Q, "B", float("nan")),
        ("s1", "x1", 7_003, Q, "B", -5.0),
        ("s1", "x1", 7_004, Q, "B", 0.0),
        ("s1", "x1", 6_010, Q, "A", 20_000.0),  # > 100 × A's median of 100
        ("s1", "x1", 7_005, Q, "C", 50.0),  # C was never shown
        ("s1", "x1", 9_000, Q, "B", 100.0),  # 2 s after B's view: too late
        ("s1", "x1", 7_006, Q, "B", 100.0),  # B's quote ...
        ("s1", "x1", 7_007, Q, "B", 100.0),  # ... logged twice
    ]
    q = quote_features(events_frame(rows))
    assert q.height == 15  # every price log comes back
    counts = exclusion_counts(q)
    assert counts == {
        "missing_product": 1,
        "invalid_price": 3,
        "absurd_price": 1,
        "no_showing_interaction": 2,
        "duplicate_quote": 1,
        "view_quotes": 7,
        "repeat_quotes": 0,
    }
    assert set(q["reason"].drop_nulls()) <= set(PRICE_EXCLUSION_REASONS)
    kept = view_quotes(q)
    assert kept.filter(pl.col("product_id") == "B")["ts"].dt.millisecond().to_list() == [6]


def test_quote_features_reject_frames_missing_columns():
    with pytest.raises(ValueError, match=r"source_row"):
        quote_features(one_session().drop("source_row"))


# --- recovery on the demo simulator and on other pricing rules --------------------------------
def demo_quotes(events: pl.DataFrame) -> dict[str, pl.DataFrame]:
    q = quote_features(events)
    return {store: q.filter(pl.col("store") == store) for store in STORES}


def anchor_errors(model, base: dict[str, float]) -> np.ndarray:
    truth = model.anchors["product_id"].replace_strict(base, return_dtype=pl.Float64)
    return (model.anchors["anchor"] / truth - 1.0).to_numpy()


def catalog_base(store: str) -> dict[str, float]:
    catalog = catalog_for(store)
    return {p.product_id: p.base_price for p in catalog.products}


@pytest.fixture(scope="module")
def demo_models():
    quotes = demo_quotes(demo_events())
    return {store: fit_price_model(quotes[store]) for store in STORES}


@pytest.mark.parametrize("store", STORES)
def test_price_model_recovers_the_demo_storefront(demo_models, store):
    model = demo_models[store]
    assert model.source == "logs" and model.signal == "product_views"
    assert model.anchors.height == catalog_for(store).size
    # The price test's arms (±20%) average out of the anchors, within the arms' sampling error.
    assert np.abs(anchor_errors(model, catalog_base(store))).max() < 0.05
    # The quote noise is the dispersion within experiments: the arms are a design factor.
    assert abs(model.noise_sd / DEMO_DEMAND.quote_noise - 1.0) < 0.25
    arm_sd = float(np.std(np.log(DEMO_DEMAND.arms)))
    assert abs(model.arm_sd / arm_sd - 1.0) < 0.25 and model.arm_p < 1e-6
    assert model.cv_rmse["product_views"] == min(model.cv_rmse.values())
    assert model.markup_source == "fitted"
    assert model.markup_ci[0] <= DEMO_DEMAND.markup <= model.markup_ci[1]
    assert model.anchors.filter(~pl.col("pooled")).height == model.anchors.height


RULES = {
    # exponential markup on the demand proxy, new anchors, uniform per-quote noise (w = 0.05)
    "demand_proxy": (
        lambda s: 1.0 + 0.4 * (1.0 - np.exp(-s / 15.0)),
        lambda rng, n: 1.0 + 0.05 * rng.uniform(-1.0, 1.0, n),
        "demand_proxy",
    ),
    # no markup at all, lognormal per-quote noise (σ = 0.02)
    "flat": (
        lambda s: np.ones_like(s),
        lambda rng, n: np.exp(0.02 * rng.standard_normal(n)),
        "none",
    ),
}


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("store", STORES)
def test_price_model_recovers_another_pricing_rule(rule, store):
    markup, noise, signal = RULES[rule]
    rng = np.random.default_rng(5)
    base = {pid: float(np.round(rng.uniform(40.0, 900.0), 2)) for pid in catalog_base(store)}
    events = reprice(demo_events().filter(pl.col("store") == store), base, markup, noise, seed=6)
    model = fit_price_model(demo_quotes(events)[store])
    assert model.signal == signal, model.cv_rmse
    assert np.abs(anchor_errors(model, base)).max() < 0.02
    assert abs(model.noise_sd / log_sd(noise) - 1.0) < 0.25
    if rule == "flat":
        assert model.markup == 0.0 and model.markup_source == "none"
    else:  # saturation is visible on the demand proxy (0 to ~100): m and s0 are identified
        assert model.s0_source == "fitted"
        assert model.markup_ci[0] <= 0.4 <= model.markup_ci[1]
        assert model.s0_ci[0] <= 15.0 <= model.s0_ci[1]


# --- pooling, declared defaults, bad input ----------------------------------------------------
def test_rare_products_get_anchors_from_the_pooled_curve(demo_models):
    quotes = demo_quotes(demo_events())["hotel"]
    r10 = view_quotes(quotes).filter(pl.col("product_id") == "R10").head(8)
    thinned = pl.concat([quotes.filter(pl.col("product_id") != "R10"), r10])
    model = fit_price_model(thinned)
    row = model.anchors.filter(pl.col("product_id") == "R10").row(0, named=True)
    assert row["pooled"] and row["n_quotes"] == 8
    assert (
        abs(row["anchor"] / 1190.0 - 1.0) < 0.02 and row["ci_low"] < row["anchor"] < row["ci_high"]
    )
    assert model.anchors["pooled"].sum() == 1
    assert model.markup == pytest.approx(demo_models["hotel"].markup, rel=0.05)


@pytest.mark.parametrize(
    ("keep", "why"),
    [(0, "0 usable view quotes"), (60, "< min_store_quotes"), (None, "experiments < min_exp")],
)
def test_stores_without_enough_price_logs_get_declared_defaults(keep, why):
    quotes = demo_quotes(demo_events())["airline"]
    if keep is None:  # plenty of quotes, but all from one experiment
        quotes = quotes.with_columns(experiment_id=pl.lit("xp-only"))
    else:
        quotes = quotes.head(keep)
    model = fit_price_model(quotes)
    assert model.source == "declared" and why in model.reason
    assert model.anchors.height == 0 and model.markup_source == model.s0_source == "declared"
    assert model.quote_noise == pytest.approx(0.2) and model.s0 is None


def test_fit_price_model_rejects_mixed_stores_and_missing_signals():
    quotes = quote_features(demo_events())
    with pytest.raises(ValueError, match="one store at a time"):
        fit_price_model(quotes)
    with pytest.raises(ValueError, match="s_events"):
        fit_price_model(quotes.filter(pl.col("store") == "hotel").drop("s_events"))


@pytest.mark.parametrize(
    "bad",
    [
        {"min_quotes_per_product": 0},
        {"min_experiments": 1},
        {"signals": ("clicks",)},
        {"level": 1.0},
        {"cv_folds": 1},
    ],
)
def test_price_fit_params_reject_bad_values(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        PriceFitParams(**bad)


def test_engagement_signals_are_weights_over_the_whole_vocabulary():
    from phantom_assets.constants import VOCABULARY

    for weights in ENGAGEMENT_SIGNALS.values():
        assert set(weights) == set(VOCABULARY)


# --- the store_prices files -------------------------------------------------------------------
def test_store_prices_round_trip_through_the_contract_files(demo_models, tmp_path):
    model = demo_models["hotel"]
    digests = write_store_prices(model, tmp_path)
    assert set(digests) == {"anchors.parquet", "price_model.json"}
    back = read_store_prices(tmp_path)
    assert back.anchors.equals(model.anchors) and back.to_json() == model.to_json()
    payload = json.loads((tmp_path / "price_model.json").read_text())
    for key in ("source", "quote_noise", "markup", "markup_ci_low", "s0", "n_quotes", "signal"):
        assert key in payload
    assert set(pl.read_parquet(tmp_path / "anchors.parquet").schema) == set(ANCHOR_SCHEMA)
    declared = declared_price_model("hotel", "no price logs", {"view_quotes": 0})
    write_store_prices(declared, tmp_path / "declared")
    back = read_store_prices(tmp_path / "declared")
    assert back.to_json() == declared.to_json() and math.isnan(back.markup_ci[0])


def test_read_store_prices_names_the_broken_file(demo_models, tmp_path):
    write_store_prices(demo_models["hotel"], tmp_path)
    payload = json.loads((tmp_path / "price_model.json").read_text())
    (tmp_path / "price_model.json").write_text(json.dumps({**payload, "source": "guess"}))
    with pytest.raises(ValueError, match=r"price_model\.json.*source"):
        read_store_prices(tmp_path)
    write_store_prices(demo_models["hotel"], tmp_path)
    anchors = demo_models["hotel"].anchors.with_columns(anchor=pl.lit(-1.0))
    anchors.write_parquet(tmp_path / "anchors.parquet")
    with pytest.raises(ValueError, match=r"anchors\.parquet.*positive"):
        read_store_prices(tmp_path)
    (tmp_path / "price_model.json").unlink()
    with pytest.raises(ValueError, match=r"price_model\.json"):
        read_store_prices(tmp_path)
