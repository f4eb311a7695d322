"""The stores' quote-time detectors staged as a Hub model repo (docs/detector.md): one
`<store>/detector.json` per store, the stdlib-only scorer that reads them (`runtime.py`, so the
repo is usable on its own) and a model card (what each was fitted on, its threshold and the rates
it flags at, intended use, limits)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from phantom_assets.detector import BUNDLE_FILE, DetectorBundle, save_bundle
from phantom_assets.detector import runtime as runtime_module
from phantom_assets.publish.stage import CARD_PATH, write_folder_atomically

RUNTIME_FILE = "runtime.py"
MODEL_LICENSE = "cc-by-4.0"
MODEL_TAGS = ("llm-agents", "bot-detection", "dynamic-pricing", "markov-chains", "phantom")
DETECTOR_REPO_SUFFIX = "-detector"
CARD_TABLE_HEADER = (
    "| store | sessions (humans / agents) | calibration | τ | target FPR | humans flagged "
    "| agent sessions flagged | code version |\n|---|---|---|---|---|---|---|---|"
)

__all__ = [
    "DETECTOR_REPO_SUFFIX",
    "RUNTIME_FILE",
    "StagedModel",
    "detector_repo_id",
    "model_card",
    "stage_detector_model",
]


@dataclass(frozen=True)
class StagedModel:
    """A staged model folder: `path`, every file in it (relative, POSIX-style, sorted) and the
    stores whose detectors it holds."""

    path: Path
    files: tuple[str, ...]
    stores: tuple[str, ...]


def detector_repo_id(dataset_repo_id: str | None) -> str | None:
    """The model repo next to the dataset repo `org/name`: `org/name-detector`."""
    return f"{dataset_repo_id}{DETECTOR_REPO_SUFFIX}" if dataset_repo_id else None


def model_card(bundles: Mapping[str, DetectorBundle], config_hash: str) -> str:
    """The model card (README.md): YAML header, then what each detector is, was fitted on and
    flags, how to use it and what it does not do."""
    rows = []
    for store, bundle in bundles.items():
        p = bundle.provenance
        fitted = p.get("fitted_on_sessions", {})
        rows.append(
            f"| {store} | {fitted.get('human', '?')} / {fitted.get('agent', '?')} | "
            f"{p.get('calibration', '?')} | {bundle.threshold:.4f} | "
            f"{bundle.false_positive_rate:.1%} | "
            f"{p.get('out_of_fold_human_flag_rate', float('nan')):.1%} | "
            f"{p.get('out_of_fold_agent_recall_at_quote', float('nan')):.1%} | "
            f"`{p.get('code_version', '?')}` |"
        )
    tags = "\n".join(f"- {tag}" for tag in MODEL_TAGS)
    return f"""---
license: {MODEL_LICENSE}
tags:
{tags}
---

# PHANTOM quote-time agent detectors

One detector per store: given the events of a storefront session so far, the probability f that
an LLM shopping agent (not a human) is browsing, and a flag at each price quote when f exceeds
the store's threshold τ. It is the detector of PHANTOM's certified quoting rule: a flagged
session is quoted as an engaged one, so an agent that reconnoitres in clean sessions cannot buy
at the floor quote. Produced by PHANTOM's `detector_bundle` asset (configuration hash
`{config_hash}`).

## Files

- `<store>/{BUNDLE_FILE}`: the detector (format `{runtime_module.FORMAT}`): the log-ratios of the
  store's human and agent Markov transition kernels over 17 canonical events, the kernel-only
  f = σ(a + b · mean log-ratio of the session's moves), detector v2's logistic classifier of
  that statistic and the session's timing (mean and spread of log seconds between events,
  log seconds since its first event), τ, the quote rule and provenance (hashes of the inputs,
  code version).
- `{RUNTIME_FILE}`: the scorer, Python standard library only.

```python
from runtime import DetectorBundle

bundle = DetectorBundle.load("hotel/{BUNDLE_FILE}")
session = bundle.session()
for event, ts_ms in (("session_start", 0), ("search", 2400), ("view_item_page", 5100)):
    quote = session.push(event, ts_ms)  # Quote(index, score, flagged) at a quote, else None
```

## Fitted on, and what it flags

Sessions are the store's labelled sessions (humans / agents). τ flags the target share of the
store's human sessions, set on out-of-fold scores (sessions the kernels never saw); the two
rates are measured out of fold at each session's quote (the agent rate is per agent session,
not per agent: an agent is quoted up only if every one of its clean sessions is flagged).

{CARD_TABLE_HEADER}
{chr(10).join(rows)}

## Intended use

Flag a session at the moment of a price quote, in a pricing service that quotes by engagement,
for the store it was fitted on. Scoring one event is one table lookup, a few additions, a
logarithm and one exponential (microseconds in Python).

## Limits

- It reads event names and their times (no user agent: trivially spoofed). An agent that
  browses like a human, at a human's pace, is not flagged, and an agent that learns it is
  quoted up can adapt; nothing here measures that.
- Fitted on one store's sessions (the demo's are simulated): another store needs its own.
- The flag raises a quote; the certificate of the rule that uses it (profit against the best
  undefended response, detector value, human harm) is PHANTOM's `certification_report`, not
  this card.
"""


def stage_detector_model(
    bundles: Mapping[str, Path], out_dir: Path, config_hash: str
) -> StagedModel:
    """Write the model folder `out_dir` atomically (a temp folder, then swapped into place):
    each store's bundle (`bundles`: store → its `detector.json`, loaded, so a broken file
    fails here naming it), the scorer and the card."""
    if not bundles:
        raise ValueError("no detector bundle to stage: materialize detector_bundle first")
    loaded = {store: DetectorBundle.load(path) for store, path in sorted(bundles.items())}
    files = write_folder_atomically(
        out_dir, lambda folder: _write_model_folder(folder, loaded, config_hash)
    )
    return StagedModel(out_dir, tuple(sorted(files)), tuple(loaded))


def _write_model_folder(
    folder: Path, bundles: Mapping[str, DetectorBundle], config_hash: str
) -> list[str]:
    files = [CARD_PATH, RUNTIME_FILE]
    for store, bundle in bundles.items():
        save_bundle(bundle, folder / store)
        files.append(f"{store}/{BUNDLE_FILE}")
    (folder / RUNTIME_FILE).write_text(Path(runtime_module.__file__).read_text())
    (folder / CARD_PATH).write_text(model_card(bundles, config_hash), encoding="utf-8")
    return files
