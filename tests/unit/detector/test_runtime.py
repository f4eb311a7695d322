"""The quote-time detector's runtime (`phantom_assets/detector/runtime.py`): the quote rule, the
score by hand on a three-event bundle, aliases, bad events and bad bundles."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from phantom_assets.detector import DetectorBundle, StreamScorer, UnknownEventError

STATES = ("<start>", "view", "cart", "hover", "<end>")
# log K_A − log K_H per move (rows = from, columns = to), chosen so every sum is distinct.
LOG_RATIO = (
    (0.0, 1.0, 2.0, -1.0, 0.5),
    (0.0, 0.25, -0.5, 2.0, 0.125),
    (0.0, 3.0, 0.0, 1.5, -2.0),
    (0.0, -0.75, 0.5, 0.0, 1.0),
    (0.0, 0.0, 0.0, 0.0, 0.0),
)


# Detector v2 by hand: unit standardization, so logit = intercept + coef · features.
CLASSIFIER = {
    "features": ["kernel_gap", "mean_log_gap", "sd_log_gap", "log_elapsed", "no_timing"],
    "mean": [0.0] * 5,
    "scale": [1.0] * 5,
    "coef": [1.0, -1.0, 0.5, 0.25, 3.0],
    "intercept": 0.1,
}


def sigma(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@pytest.fixture
def bundle() -> DetectorBundle:
    return DetectorBundle(
        states=STATES,
        log_ratio=LOG_RATIO,
        f_intercept=-0.5,
        f_slope=2.0,
        threshold=0.7,
        false_positive_rate=0.02,
        quote_event="view",
        lock_event="cart",
        aliases={"item_view": "view"},
        provenance={"store": "toy"},
    )


def test_each_view_before_the_cart_is_a_quote_scored_by_the_mean_log_ratio_so_far(bundle):
    # <start>→hover −1, hover→view −0.75: gap −0.875; view→hover 2, hover→view −0.75: gap
    # (−1 −0.75 + 2 −0.75)/4 = −0.125; then the cart locks the price: no quote after it.
    quotes = bundle.quotes(["hover", "view", "hover", "item_view", "cart", "view"])
    assert [q.index for q in quotes] == [1, 3]
    assert quotes[0].score == pytest.approx(sigma(-0.5 + 2 * -0.875), abs=1e-15)
    assert quotes[1].score == pytest.approx(sigma(-0.5 + 2 * -0.125), abs=1e-15)
    assert [q.flagged for q in quotes] == [False, False]


def test_a_cart_without_a_view_before_it_is_the_quote_and_flags_above_the_threshold(bundle):
    (quote,) = bundle.quotes(["cart", "view"])  # <start>→cart: gap 2
    assert quote.index == 0 and quote.score == pytest.approx(sigma(3.5), abs=1e-15)
    assert quote.flagged and sigma(3.5) > bundle.threshold


def test_closing_a_session_adds_the_move_to_its_end(bundle):
    scorer = bundle.session()
    assert scorer.push("hover") is None and scorer.score == pytest.approx(sigma(-2.5))
    assert scorer.close() == pytest.approx(sigma(-0.5 + 2 * (-1.0 + 1.0) / 2))
    with pytest.raises(ValueError, match="closed"):
        scorer.push("view")


def test_an_unknown_event_is_named_and_changes_nothing(bundle):
    scorer = bundle.session()
    scorer.push("view")
    before = scorer.score
    with pytest.raises(UnknownEventError, match="'checkout'"):
        scorer.push("checkout")
    assert scorer.score == before and scorer.events == 1


def test_a_stream_scores_interleaved_sessions_and_names_bad_records(bundle):
    stream = StreamScorer(bundle)
    records = [
        {"session_id": "a", "event": "view", "event_id": 7},
        {"session_id": "b", "event": "cart"},
        {"session_id": "a", "event": "hover"},
        {"session_id": "a", "event": "view"},
    ]
    out = [stream.push(r) for r in records]
    assert out[0] == {
        "session_id": "a",
        "index": 0,
        "event_id": 7,
        "score": sigma(1.5),
        "flagged": True,
    }
    assert out[1]["session_id"] == "b" and out[2] is None and out[3]["index"] == 2
    for record, problem in (
        ({"event": "view"}, "missing session_id"),
        ({"session_id": "c", "event": "nope"}, "unknown event 'nope'"),
        ([1, 2], "expected a JSON object"),
    ):
        with pytest.raises(ValueError, match=problem):
            stream.push(record)
    assert set(stream.sessions) == {"a", "b"}


def test_a_bundle_round_trips_exactly_through_its_file(bundle, tmp_path: Path):
    path = tmp_path / "detector.json"
    path.write_text(json.dumps(bundle.to_dict()))
    assert DetectorBundle.load(path) == bundle


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"format": "phantom-detector/0"}, "not a phantom-detector/2 bundle"),
        ({"classifier": {"features": ["kernel_gap"]}}, "classifier features must be"),
        (
            {"classifier": {**CLASSIFIER, "scale": [1.0, 1.0, 0.0, 1.0, 1.0]}},
            "classifier scales must be > 0",
        ),
        ({"log_ratio": [[0.0] * 5] * 4}, "log_ratio must be 5 x 5"),
        ({"quote_event": "buy"}, "quote_event 'buy' is not an event"),
        ({"threshold": 1.5}, "threshold must be in"),
        ({"aliases": {"x": "buy"}}, "aliases map onto unknown events"),
    ],
)
def test_a_broken_bundle_file_fails_naming_the_file_and_the_problem(
    bundle, tmp_path: Path, change, problem
):
    path = tmp_path / "detector.json"
    path.write_text(json.dumps(bundle.to_dict() | change))
    with pytest.raises(ValueError, match=problem) as raised:
        DetectorBundle.load(path)
    assert str(path) in str(raised.value)


def test_detector_v2_scores_the_kernel_gap_and_the_timing_so_far_at_each_quote(bundle):
    timed = DetectorBundle.from_dict(bundle.to_dict() | {"classifier": CLASSIFIER})
    # Gaps 2 s, 0.5 s, 1 s. First quote: kernel gap −0.875, one gap of 2 s (sd 0), 2 s elapsed;
    # second: kernel gap −0.125, log gaps (log 2, −log 2, 0): mean 0, sd √(2/3)·log 2, 3.5 s.
    quotes = timed.quotes(["hover", "view", "hover", "item_view"], [0, 2000, 2500, 3500])
    first = 0.1 - 0.875 - math.log(2) + 0.25 * math.log1p(2.0)
    second = 0.1 - 0.125 + 0.5 * math.sqrt(2 / 3) * math.log(2) + 0.25 * math.log1p(3.5)
    assert quotes[0].score == pytest.approx(sigma(first), abs=1e-12)
    assert quotes[1].score == pytest.approx(sigma(second), abs=1e-12)
    (alone,) = timed.quotes(["cart"], [7])  # one event: no gap yet
    assert alone.score == pytest.approx(sigma(0.1 + 2.0 + 3.0), abs=1e-12)


def test_detector_v2_refuses_events_without_a_time_or_out_of_order(bundle):
    timed = DetectorBundle.from_dict(bundle.to_dict() | {"classifier": CLASSIFIER})
    scorer = timed.session()
    with pytest.raises(ValueError, match="needs its time"):
        scorer.push("hover")
    scorer.push("hover", 1000)
    with pytest.raises(ValueError, match="before the previous event"):
        scorer.push("view", 999)
    stream = StreamScorer(timed)
    with pytest.raises(ValueError, match="missing ts_ms"):
        stream.push({"session_id": "s", "event": "view"})
    with pytest.raises(ValueError, match="ts_ms must be a number"):
        stream.push({"session_id": "s", "event": "view", "ts_ms": "soon"})
    assert stream.push({"session_id": "s", "event": "view", "ts_ms": 5})["index"] == 0
