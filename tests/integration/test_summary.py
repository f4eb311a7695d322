"""The end-of-run summary's text on hand-written result files: the human-harm line in words, a
store whose prices are declared, results a failed run did not rebuild marked stale."""

import json

import numpy as np
import polars as pl
import pytest

from orchestration.summary import HARM_ROLE, collect_summary, render_summary
from phantom_assets.audit.store_sample import store_sample_test
from phantom_assets.config import Settings
from phantom_assets.lake import REPORT_FILE
from phantom_assets.market.prices import COI_SCHEMA, write_store_prices
from phantom_assets.market.prices.result import declared_price_model
from phantom_assets.storage import write_json_atomic, write_parquet_atomic

pytestmark = pytest.mark.integration


def _write_certificate(settings: Settings, store: str, harm: np.ndarray) -> None:
    """A report.json whose gate tested `harm` (per held-out seed) against the bound 0.02."""
    tested = store_sample_test(
        harm, rng=np.random.default_rng(0), threshold=0.02, alternative="less"
    )
    report = {
        "certified": False,
        "policy": "dqn-baseline-a050",
        "baseline": "tuned-a050",
        "reasons": ["not certified: because"],
        "n_pairs": harm.size,
        "p_value": 1.0,
        "gate": {"comparisons": [{"role": HARM_ROLE, **tested.to_dict()}]},
    }
    write_json_atomic(report, settings.lake.certification_dir(store) / REPORT_FILE)


def _store_block(text: str, store: str) -> str:
    """The store's block, lines unwrapped (a long line continues indented on the next)."""
    block = text.split(f"-- {store} --")[1].split("\n-- ")[0]
    return "\n".join(
        line if not line.startswith(" " * 17) else "\r" + line.strip()
        for line in block.splitlines()
    ).replace("\n\r", " ")


def test_zero_harm_on_every_seed_reads_as_within_the_bound_and_as_no_evidence(settings: Settings):
    # Why: this read "human harm mean 0.0000, one-sided upper bound n/a: NOT within the bound".
    _write_certificate(settings, "hotel", np.zeros(3))
    block = _store_block(render_summary(settings), "hotel")
    assert "NOT within" not in block and "n/a" not in block
    assert (
        "  human harm     0 on each of the 3 held-out seeds: within the bound 0.02 on every "
        "seed (identical values give the test no spread: no upper confidence bound)"
    ) in block


def test_harm_without_a_finite_upper_bound_says_why_it_is_not_shown_within(settings: Settings):
    _write_certificate(settings, "hotel", np.array([-0.05, -0.03, -0.015]))
    block = _store_block(render_summary(settings), "hotel")
    assert (
        "  human harm     mean -0.03167 over 3 held-out seeds, no finite upper bound: not shown "
        "within the bound 0.02"
    ) in block


def test_harm_with_an_upper_bound_is_within_or_not_within_the_bound(settings: Settings):
    rng = np.random.default_rng(1)
    _write_certificate(settings, "hotel", rng.normal(0.005, 0.001, 24))
    _write_certificate(settings, "airline", rng.normal(0.05, 0.001, 24))
    text = render_summary(settings)
    assert ": within the bound 0.02" in _store_block(text, "hotel")
    assert ": NOT within the bound 0.02" in _store_block(text, "airline")


def test_a_store_without_price_logs_says_its_prices_are_declared_in_the_settings(
    settings: Settings,
):
    # Why: this read "observed COI   human n/a [n/a, n/a]; agent n/a [n/a, n/a]".
    reason = "no usable view quotes (0 < min_store_quotes 100)"
    model = declared_price_model("airline", reason, {})
    write_store_prices(model, settings.lake.store_prices_dir("airline"))
    empty = pl.DataFrame(
        {
            "class": ["human", "agent"],
            "premium": [float("nan")] * 2,
            "ci_low": [float("nan")] * 2,
            "ci_high": [float("nan")] * 2,
            "n_quotes": [0, 0],
            "n_experiments": [0, 0],
        },
        schema=COI_SCHEMA,
    )
    write_parquet_atomic(empty, settings.lake.observed_coi_file("airline"))
    summary = collect_summary(settings)
    prices = summary["stores"]["airline"]["prices"]
    settings_text = (
        "[market] declared_anchor_range = [90, 110], declared_products = 10, "
        "declared_markup = 0.5, declared_quote_noise = 0.2"
    )
    assert prices == {"source": "declared", "reason": reason, "declared": settings_text}
    block = " ".join(_store_block(render_summary(settings, summary), "airline").split())
    assert "n/a" not in block
    assert (
        f"observed COI not measured: the store's price logs cannot identify its prices "
        f"({reason}); its prices are declared in the settings: {settings_text}"
    ) in block


def test_a_class_without_quotes_says_so_instead_of_empty_numbers(settings: Settings):
    model = declared_price_model("hotel", "x", {})
    write_store_prices(model, settings.lake.store_prices_dir("hotel"))
    model_file = settings.lake.store_prices_dir("hotel") / "price_model.json"
    payload = json.loads(model_file.read_text())
    model_file.write_text(json.dumps({**payload, "source": "logs", "reason": ""}))
    rows = pl.DataFrame(
        {
            "class": ["human", "agent"],
            "premium": [0.2, float("nan")],
            "ci_low": [0.1, None],
            "ci_high": [0.3, None],
            "n_quotes": [40, 0],
            "n_experiments": [4, 0],
        },
        schema=COI_SCHEMA,
    )
    write_parquet_atomic(rows, settings.lake.observed_coi_file("hotel"))
    block = _store_block(render_summary(settings), "hotel")
    assert "  observed COI   human 0.2000 [0.1000, 0.3000] (40 quotes); agent: no quotes" in block


def test_results_a_run_did_not_rebuild_are_marked_stale_with_the_time_of_their_run(
    settings: Settings,
):
    _write_certificate(settings, "hotel", np.zeros(3))
    _write_certificate(settings, "airline", np.zeros(3))
    stale = {("certification_report", "hotel"): "the run of 2026-12-05 21:57 UTC"}
    summary = collect_summary(settings, stale=stale)
    assert summary["stores"]["hotel"]["stale"] == {
        "certification": "the run of 2026-12-05 21:57 UTC"
    }
    assert "stale" not in summary["stores"]["airline"]
    text = render_summary(settings, summary)
    assert (
        "  certificate    stale: from the run of 2026-12-05 21:57 UTC, not rebuilt"
        in _store_block(text, "hotel")
    )
    assert "stale" not in _store_block(text, "airline")


def test_stale_results_that_were_never_built_stay_not_built(settings: Settings):
    summary = collect_summary(settings, stale={("coi_erosion", "hotel"): "an earlier run"})
    block = _store_block(render_summary(settings, summary), "hotel")
    assert "COI erosion    not built" in block and "stale" not in block


def test_the_summary_reads_the_same_without_a_run(settings: Settings):
    _write_certificate(settings, "hotel", np.zeros(3))
    assert render_summary(settings) == render_summary(settings, collect_summary(settings, {}))
