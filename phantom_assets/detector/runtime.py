"""The quote-time detector a pricing service runs: the bundle format and its incremental scorer.

Standard library only, on purpose: this file can be copied next to a `detector.json` and used
without PHANTOM, its settings or its lake (docs/detector.md).

A bundle (`detector.json`, format `FORMAT`) holds everything the score needs:

- `states`: the kernel states in row/column order (`<start>`, the canonical events, `<end>`);
  `aliases`: other spellings of events, mapped onto the canonical names;
- `log_ratio`: the S × S matrix log K_A − log K_H of the store's two class kernels (agents',
  humans'), fitted on all its labelled sessions;
- `f_intercept`, `f_slope`: the store's kernel-only agent probability f = σ(a + b · gap), where
  gap is the mean log-ratio of the session's moves so far (`<start>` → e_1, e_1 → e_2, …);
- `classifier` (detector v2; absent: the kernel-only f is the score): f = σ(intercept +
  Σ coef_j · (x_j − mean_j) / scale_j) over `QUOTE_FEATURES` of the session so far -- the kernel
  gap, the mean and standard deviation of log(seconds between events), log(1 + seconds since
  the first event) and whether no gap was seen yet; events then need their time (`ts_ms`);
- `threshold`: τ; a quote is flagged iff f > τ; τ flags `false_positive_rate` of the store's
  human sessions, scored out of fold (what the detector gives sessions it never saw);
- `quote_event`, `lock_event`: a quote is a `quote_event` before the session's first
  `lock_event` (the price is locked in the cart from there on), or that lock itself when no
  `quote_event` came before it (the cart shows the price) -- the market's rule, whose quote is
  the last of these;
- `provenance`: store, code and data versions, what it was fitted on.

A session is scored event by event (`SessionScorer.push`): one table lookup, one addition, a
logarithm for the timing and one exponential per event.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "phantom-detector/2"
READABLE_FORMATS = ("phantom-detector/1", FORMAT)  # /1: no classifier (kernel-only)
# `constants.START_TOKEN`/`END_TOKEN`, repeated: this file imports nothing of PHANTOM.
START, END = "<start>", "<end>"
QUOTE_FEATURES = ("kernel_gap", "mean_log_gap", "sd_log_gap", "log_elapsed", "no_timing")
"""Detector v2's features, in order (the pipeline computes the same, vectorized, from these
names)."""
MIN_GAP_S = 0.001
"""Gaps are floored at one millisecond (the logs' resolution) before the log."""


class UnknownEventError(ValueError):
    """An event name that is neither a state of the bundle nor one of its aliases."""


@dataclass(frozen=True)
class Quote:
    """One quote of a session: the index of its event (0 = the session's first), the agent
    probability f of the session so far and whether f exceeds the bundle's threshold."""

    index: int
    score: float
    flagged: bool


@dataclass(frozen=True)
class DetectorBundle:
    """A store's quote-time detector (module docstring): load with `DetectorBundle.load`."""

    states: tuple[str, ...]
    log_ratio: tuple[tuple[float, ...], ...]
    f_intercept: float
    f_slope: float
    threshold: float
    false_positive_rate: float
    quote_event: str
    lock_event: str
    aliases: Mapping[str, str] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    classifier: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        n = len(self.states)
        problems = []
        if n < 3 or self.states[0] != START or self.states[-1] != END:
            problems.append(f"states must run from {START!r} to {END!r}")
        if len(self.log_ratio) != n or any(len(row) != n for row in self.log_ratio):
            problems.append(f"log_ratio must be {n} x {n}")
        elif not all(math.isfinite(x) for row in self.log_ratio for x in row):
            problems.append("log_ratio must be finite")
        for name in ("quote_event", "lock_event"):
            if getattr(self, name) not in self.states[1:-1]:
                problems.append(f"{name} {getattr(self, name)!r} is not an event of the states")
        unknown = sorted(set(self.aliases.values()) - set(self.states[1:-1]))
        if unknown:
            problems.append(f"aliases map onto unknown events {unknown}")
        if not (math.isfinite(self.f_intercept) and math.isfinite(self.f_slope)):
            problems.append("f_intercept and f_slope must be finite")
        if not 0.0 <= self.threshold <= 1.0 or not 0.0 < self.false_positive_rate < 1.0:
            problems.append("threshold must be in [0, 1] and false_positive_rate in (0, 1)")
        problems += _classifier_problems(self.classifier)
        if problems:
            raise ValueError(f"invalid detector bundle: {'; '.join(problems)}")
        codes = {name: i for i, name in enumerate(self.states) if name not in (START, END)}
        codes.update({alias: codes[name] for alias, name in self.aliases.items()})
        object.__setattr__(self, "_codes", codes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DetectorBundle:
        """A bundle from its JSON object; another format fails naming it."""
        if data.get("format") not in READABLE_FORMATS:
            raise ValueError(f"not a {FORMAT} bundle: format {data.get('format')!r}")
        return cls(
            states=tuple(data["states"]),
            log_ratio=tuple(tuple(float(x) for x in row) for row in data["log_ratio"]),
            f_intercept=float(data["f_intercept"]),
            f_slope=float(data["f_slope"]),
            threshold=float(data["threshold"]),
            false_positive_rate=float(data["false_positive_rate"]),
            quote_event=data["quote_event"],
            lock_event=data["lock_event"],
            aliases=dict(data.get("aliases", {})),
            provenance=dict(data.get("provenance", {})),
            classifier=data.get("classifier"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The bundle's JSON object (floats written exactly: `json` round-trips them)."""
        return {
            "format": FORMAT,
            "states": list(self.states),
            "aliases": dict(self.aliases),
            "log_ratio": [list(row) for row in self.log_ratio],
            "f_intercept": self.f_intercept,
            "f_slope": self.f_slope,
            "threshold": self.threshold,
            "false_positive_rate": self.false_positive_rate,
            "quote_event": self.quote_event,
            "lock_event": self.lock_event,
            "provenance": dict(self.provenance),
            "classifier": None if self.classifier is None else dict(self.classifier),
        }

    @classmethod
    def load(cls, path: str | Path) -> DetectorBundle:
        """Read a `detector.json`; a file that is not one fails naming it."""
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: {error}") from error

    def code(self, event: str) -> int:
        """The state index of an event name (canonical or alias)."""
        try:
            return self._codes[event]  # type: ignore[attr-defined]
        except KeyError:
            raise UnknownEventError(f"unknown event {event!r}") from None

    def session(self) -> SessionScorer:
        """A scorer for one new session."""
        return SessionScorer(self)

    @property
    def needs_time(self) -> bool:
        """Whether events need their time (`ts_ms`): detector v2 scores timing."""
        return self.classifier is not None

    def quotes(
        self, events: Iterable[str], times_ms: Iterable[float | None] | None = None
    ) -> list[Quote]:
        """Every quote of one whole session, in order (`times_ms`: each event's time in ms)."""
        scorer = self.session()
        events = list(events)
        times = [None] * len(events) if times_ms is None else list(times_ms)
        return [q for q in map(scorer.push, events, times) if q is not None]


class SessionScorer:
    """One session's running score (`DetectorBundle.session`): `push` each event as it happens;
    it returns the `Quote` when the event is a quote, else None."""

    __slots__ = (
        "_bundle",
        "_first_ms",
        "_gaps",
        "_last_ms",
        "_lock",
        "_log_gaps",
        "_moves",
        "_quote",
        "_row",
        "_square_log_gaps",
        "_sum",
        "closed",
        "events",
        "locked",
        "quoted",
    )

    def __init__(self, bundle: DetectorBundle) -> None:
        self._bundle = bundle
        self._quote, self._lock = bundle.code(bundle.quote_event), bundle.code(bundle.lock_event)
        self._row, self._sum, self._moves = 0, 0.0, 0  # at <start>
        self._first_ms = self._last_ms = 0.0
        self._gaps, self._log_gaps, self._square_log_gaps = 0, 0.0, 0.0
        self.events, self.locked, self.quoted, self.closed = 0, False, False, False

    @property
    def score(self) -> float:
        """f of the session so far (σ(a) before any event)."""
        gap = self._sum / self._moves if self._moves else 0.0
        model = self._bundle.classifier
        if model is None:
            return _sigmoid(self._bundle.f_intercept + self._bundle.f_slope * gap)
        n = self._gaps
        mean = self._log_gaps / n if n else 0.0
        variance = self._square_log_gaps / n - mean * mean if n > 1 else 0.0
        elapsed = (self._last_ms - self._first_ms) / 1000.0
        features = (
            gap,
            mean,
            math.sqrt(max(variance, 0.0)),
            math.log1p(elapsed),
            0.0 if n else 1.0,
        )
        logit = model["intercept"]
        for x, m, s, c in zip(features, model["mean"], model["scale"], model["coef"], strict=True):
            logit += c * ((x - m) / s)
        return _sigmoid(logit)

    def push(self, event: str, ts_ms: float | None = None) -> Quote | None:
        """Score one more event (`ts_ms`: its time in ms, needed by a v2 bundle); raises
        `UnknownEventError` (nothing changes) on an unknown one, `ValueError` after `close`, on
        a missing time or on a time before the previous event's."""
        code = self._bundle.code(event)
        if self.closed:
            raise ValueError("the session is closed")
        if self._bundle.classifier is not None:
            self._time(ts_ms)
        self._move(code)
        index, self.events = self.events, self.events + 1
        if self.locked:
            return None
        if code == self._lock:
            self.locked = True
            if self.quoted:
                return None
        elif code != self._quote:
            return None
        self.quoted = True
        score = self.score
        return Quote(index, score, score > self._bundle.threshold)

    def close(self) -> float:
        """End the session (the move to `<end>`) and return f of the whole session."""
        if not self.closed:
            self._move(len(self._bundle.states) - 1)
            self.closed = True
        return self.score

    def _time(self, ts_ms: float | None) -> None:
        if ts_ms is None or not math.isfinite(ts_ms):
            raise ValueError("this detector scores timing: every event needs its time (ts_ms)")
        if self.events == 0:
            self._first_ms = self._last_ms = ts_ms
            return
        if ts_ms < self._last_ms:
            raise ValueError(f"event time {ts_ms} is before the previous event's {self._last_ms}")
        # Seconds since the first event, differenced: the pipeline's arithmetic, bit for bit.
        since = (ts_ms - self._first_ms) / 1000.0, (self._last_ms - self._first_ms) / 1000.0
        log_gap = math.log(max(since[0] - since[1], MIN_GAP_S))
        self._gaps += 1
        self._log_gaps += log_gap
        self._square_log_gaps += log_gap * log_gap
        self._last_ms = ts_ms

    def _move(self, code: int) -> None:
        self._sum += self._bundle.log_ratio[self._row][code]
        self._moves += 1
        self._row = code


class StreamScorer:
    """Scores a stream of event records of many sessions (they may interleave): `push` each
    record (`session_id`, `event`, `ts_ms` for a v2 bundle, optionally `event_id`); it returns
    the JSON-ready quote (`session_id`, `index`: the event's within its session, `event_id`
    when given, `score`, `flagged`) when the event is a quote, else None. Keeps ten numbers per
    open session;
    `close(session_id)` forgets one."""

    def __init__(self, bundle: DetectorBundle) -> None:
        self.bundle = bundle
        self.sessions: dict[str, SessionScorer] = {}

    def push(self, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """Score one record; a record without `session_id` or `event`, or with an unknown event,
        raises ValueError naming the problem (the stream's state is unchanged)."""
        if not isinstance(record, Mapping):
            raise ValueError(f"expected a JSON object, got {type(record).__name__}")
        missing = [key for key in ("session_id", "event") if record.get(key) is None]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        session_id, event = str(record["session_id"]), record["event"]
        if not isinstance(event, str):
            raise ValueError(f"event must be a string, got {event!r}")
        self.bundle.code(event)  # an unknown event opens no session
        ts_ms = record.get("ts_ms")
        if ts_ms is not None and (isinstance(ts_ms, bool) or not isinstance(ts_ms, int | float)):
            raise ValueError(f"ts_ms must be a number, got {ts_ms!r}")
        if self.bundle.needs_time and ts_ms is None:
            raise ValueError("missing ts_ms (this detector scores timing)")
        scorer = self.sessions.get(session_id)
        if scorer is None:
            scorer = self.sessions[session_id] = self.bundle.session()
        quote = scorer.push(event, ts_ms)
        if quote is None:
            return None
        out: dict[str, Any] = {"session_id": session_id, "index": quote.index}
        if "event_id" in record:
            out["event_id"] = record["event_id"]
        return out | {"score": quote.score, "flagged": quote.flagged}

    def close(self, session_id: str) -> None:
        """Forget a session (e.g. when the service ends it)."""
        self.sessions.pop(session_id, None)


def _classifier_problems(model: Mapping[str, Any] | None) -> list[str]:
    """What is wrong with a bundle's `classifier` (nothing when absent)."""
    if model is None:
        return []
    try:
        if tuple(model["features"]) != QUOTE_FEATURES:
            return [f"classifier features must be {QUOTE_FEATURES}, got {model['features']}"]
        numbers = [*model["mean"], *model["scale"], *model["coef"], model["intercept"]]
        sizes = {len(model[key]) for key in ("mean", "scale", "coef")}
    except (KeyError, TypeError) as error:
        return [f"classifier lacks {error}"]
    if sizes != {len(QUOTE_FEATURES)} or not all(math.isfinite(float(x)) for x in numbers):
        return ["classifier mean, scale and coef need one finite number per feature"]
    if min(model["scale"]) <= 0:
        return ["classifier scales must be > 0"]
    return []


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
