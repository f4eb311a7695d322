"""The dataset card (`README.md` with YAML front matter) of the published dataset (DESIGN §7).

Rendering is deterministic: the same counts and parameters give the same bytes (no dates), so the
staged folder's content hash only changes when the data or the card parameters change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import yaml

__all__ = ["SIZE_CATEGORIES", "CardParams", "ConfigInfo", "render_card", "size_category"]

# Hugging Face's size buckets, by upper bound (exclusive); the last one is open-ended.
SIZE_CATEGORIES: Final[tuple[tuple[float, str], ...]] = (
    (1e3, "n<1K"),
    (1e4, "1K<n<10K"),
    (1e5, "10K<n<100K"),
    (1e6, "100K<n<1M"),
    (1e7, "1M<n<10M"),
    (1e8, "10M<n<100M"),
    (1e9, "100M<n<1B"),
    (1e10, "1B<n<10B"),
    (1e11, "10B<n<100B"),
    (1e12, "100B<n<1T"),
    (float("inf"), "n>1T"),
)
DEFAULT_CITATION: Final[str] = """@misc{phantom_sessions,
  title        = {PHANTOM storefront sessions: humans and LLM agents on hotel and airline shops},
  howpublished = {Hugging Face Hub dataset, built by the PHANTOM asset pipeline},
  note         = {Methodology: PHANTOM, agent-aware dynamic pricing (2025 thesis, public code)}
}"""


@dataclass(frozen=True)
class CardParams:
    """What the card says besides the counts (license, names, tags, citation)."""

    pretty_name: str = "PHANTOM storefront sessions (humans and LLM shopping agents)"
    license: str = "cc-by-4.0"
    task_categories: tuple[str, ...] = ("tabular-classification",)
    tags: tuple[str, ...] = (
        "dynamic-pricing", "llm-agents", "bot-detection", "clickstream", "markov-chains",
        "synthetic", "phantom",
    )  # fmt: skip
    citation: str = DEFAULT_CITATION
    config_hash: str | None = None

    def __post_init__(self) -> None:
        """Reject empty names (the Hub refuses a card without them)."""
        for name in ("pretty_name", "license"):
            if not getattr(self, name).strip():
                raise ValueError(
                    f"CardParams.{name} must be non-empty, got {getattr(self, name)!r}"
                )


@dataclass(frozen=True)
class ConfigInfo:
    """One dataset config as the card lists it: name, data file, rows and column dtypes."""

    name: str
    path: str
    rows: int
    columns: tuple[tuple[str, str], ...]
    description: str


def size_category(n_rows: int) -> str:
    """Hugging Face `size_categories` bucket of `n_rows` (e.g. 2500 -> `1K<n<10K`).

    Raises:
        ValueError: `n_rows` is negative.
    """
    if n_rows < 0:
        raise ValueError(f"n_rows must be >= 0, got {n_rows}")
    return next(label for bound, label in SIZE_CATEGORIES if n_rows < bound)


def _front_matter(params: CardParams, configs: Sequence[ConfigInfo], n_rows: int) -> str:
    """YAML metadata block (between `---` lines) with one `configs` entry per config."""
    meta = {
        "license": params.license,
        "pretty_name": params.pretty_name,
        "task_categories": list(params.task_categories),
        "tags": list(params.tags),
        "size_categories": [size_category(n_rows)],
        "configs": [
            {
                "config_name": config.name,
                "data_files": [{"split": "train", "path": config.path}],
                **({"default": True} if index == 0 else {}),
            }
            for index, config in enumerate(configs)
        ],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _counts_section(counts: Mapping[str, int], groups: Sequence[Mapping[str, object]]) -> str:
    """Totals and the store x actor breakdown."""
    totals = _table(("quantity", "value"), sorted(counts.items()))
    by_group = _table(
        ("store", "actor", "sessions", "rows"),
        [(g["store"], g["actor"], g["sessions"], g["rows"]) for g in groups],
    )
    return f"## Counts\n\n{totals}\n\nBy store and actor (`unknown` = unlabeled):\n\n{by_group}\n"


def _schema_section(configs: Sequence[ConfigInfo]) -> str:
    """One column/dtype table per config."""
    parts = ["## Schema\n"]
    for config in configs:
        parts.append(f"### `{config.name}` (`{config.path}`)\n\n{config.description}\n")
        parts.append(_table(("column", "dtype"), config.columns) + "\n")
    return "\n".join(parts)


_COLLECTION = """## Collection method

Storefront sessions of human visitors and LLM shopping agents on a hotel shop and an airline shop,
logged as Kafka events (`user-interactions`, `price-logs`) and exported as raw batches. The PHANTOM
pipeline ingests every batch (format detected from content), maps event names onto a 17-name
canonical vocabulary, drops `/admin/` pages and quarantines malformed rows with a reason; nothing
is silently lost. Labels come from the experiment sidecar (`xp_human_only`) or the actor column;
unlabeled sessions have empty `actor_type` / `is_agent`. The session table is flattened back into
the public `whoclickedit` column layout: `source_file` is the PHANTOM batch id, `source_row_index`
the row inside it, `ingest_format` is `phantom_canonical`, and `kafka_*` columns are empty because
the canonical events do not keep Kafka coordinates. Data made by `phantom simulate` is synthetic.
"""
_INTENDED_USE = """## Intended use

Research on telling LLM shopping agents from human visitors by their navigation (Markov
transition kernels, divergence scores), on how agent traffic leaks the *cost of information* of
session-based dynamic pricing, and on robust pricing policies trained under contamination.
"""
_LIMITATIONS = """## Limitations

- Two storefronts (hotel, airline) and the agents and humans who took part; behaviour elsewhere
  may differ, and agent behaviour changes with model versions and prompts.
- The `contaminated` config mixes real human sessions with *synthetic* agent sessions sampled from
  a fitted kernel (`source = synthetic`); it is not observed agent traffic.
- Detector scores `f` are model outputs, not ground truth. Not for decisions about individuals.
- Metadata values that did not fit their column type are published as empty (see Counts).
"""


def render_card(
    params: CardParams,
    configs: Sequence[ConfigInfo],
    counts: Mapping[str, int],
    groups: Sequence[Mapping[str, object]],
) -> str:
    """The full `README.md`: YAML front matter, then the body sections.

    Args:
        params: License, names, tags, citation.
        configs: Configs present, the default (session table) first.
        counts: Totals shown in the Counts section; `rows` sets `size_categories`.
        groups: Rows `{store, actor, sessions, rows}` for the breakdown table.

    Returns:
        The card text.

    Raises:
        ValueError: no config, or `counts` lacks `rows`.
    """
    if not configs:
        raise ValueError("render_card needs at least the sessions config, got none")
    if "rows" not in counts:
        raise ValueError(f"counts must include 'rows', got keys {sorted(counts)}")
    overview = "\n".join(f"- `{c.name}`: {c.rows} rows, `{c.path}`" for c in configs)
    provenance = f"\nBuilt with PHANTOM configuration `{params.config_hash}`.\n"
    body = [
        f"# {params.pretty_name}\n",
        "Flattened storefront event log (one row per event or price quote) in the `whoclickedit`"
        f" column layout, with extra configs from the PHANTOM pipeline.\n\n{overview}\n"
        + (provenance if params.config_hash else ""),
        _counts_section(counts, groups),
        _schema_section(configs),
        _COLLECTION,
        _INTENDED_USE,
        _LIMITATIONS,
        f"## Citation\n\n```bibtex\n{params.citation.strip()}\n```\n",
    ]
    return _front_matter(params, configs, int(counts["rows"])) + "\n" + "\n".join(body)
