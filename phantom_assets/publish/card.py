"""The dataset card (`README.md`) of the published dataset (docs/architecture.md#publishing).

The YAML header is built with `huggingface_hub.DatasetCardData` and the card with
`huggingface_hub.DatasetCard`; the body follows the sections of the Hub's dataset-card template
(`huggingface_hub/templates/datasetcard_template.md`), including *Personal and Sensitive
Information* and *Bias, Risks, and Limitations*. `DatasetCard.validate()` posts the card to the
Hub, so offline the card is checked by `check_card`: the header round-trips through
`DatasetCardData`, carries every required field, and the body has every required heading.

Rendering is deterministic: the same counts and parameters give the same bytes (no dates), so the
staged folder's content hash only changes when the data or the card parameters change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from phantom_assets.publish.card_text import card_body

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard

__all__ = [
    "REQUIRED_FIELDS",
    "REQUIRED_SECTIONS",
    "SIZE_CATEGORIES",
    "CardParams",
    "ConfigInfo",
    "build_card",
    "check_card",
    "render_card",
    "size_category",
]

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
REQUIRED_FIELDS: Final[tuple[str, ...]] = (
    "license",
    "pretty_name",
    "task_categories",
    "tags",
    "size_categories",
    "configs",
)
# Headings of the Hub template the card must have (the template's own levels).
REQUIRED_SECTIONS: Final[tuple[str, ...]] = (
    "## Dataset Details",
    "### Dataset Description",
    "## Uses",
    "### Direct Use",
    "### Out-of-Scope Use",
    "## Dataset Structure",
    "## Dataset Creation",
    "### Curation Rationale",
    "### Source Data",
    "#### Data Collection and Processing",
    "#### Who are the source data producers?",
    "#### Personal and Sensitive Information",
    "## Bias, Risks, and Limitations",
    "### Recommendations",
    "## Citation",
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
        "dynamic-pricing",
        "llm-agents",
        "bot-detection",
        "clickstream",
        "markov-chains",
        "synthetic",
        "phantom",
    )
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


def _card_data(params: CardParams, configs: Sequence[ConfigInfo], n_rows: int) -> Any:
    """The `DatasetCardData` header: one `configs` entry per config, the first the default."""
    from huggingface_hub import DatasetCardData  # heavy import, only when a card is built

    return DatasetCardData(
        license=params.license,
        pretty_name=params.pretty_name,
        task_categories=list(params.task_categories),
        tags=list(params.tags),
        size_categories=[size_category(n_rows)],
        configs=[
            {
                "config_name": config.name,
                "data_files": [{"split": "train", "path": config.path}],
                **({"default": True} if index == 0 else {}),
            }
            for index, config in enumerate(configs)
        ],
    )


def build_card(
    params: CardParams,
    configs: Sequence[ConfigInfo],
    counts: Mapping[str, int],
    groups: Sequence[Mapping[str, object]],
) -> DatasetCard:
    """The dataset card: `DatasetCardData` header, then the Hub template's sections.

    Args:
        params: License, names, tags, citation.
        configs: Configs present, the default (session table) first.
        counts: Totals shown under Dataset Structure; `rows` sets `size_categories`.
        groups: Rows `{store, actor, sessions, rows}` for the breakdown table.

    Returns:
        The `huggingface_hub.DatasetCard`.

    Raises:
        ValueError: no config, or `counts` lacks `rows`.
    """
    from huggingface_hub import DatasetCard

    if not configs:
        raise ValueError("render_card needs at least the sessions config, got none")
    if "rows" not in counts:
        raise ValueError(f"counts must include 'rows', got keys {sorted(counts)}")
    data = _card_data(params, configs, int(counts["rows"]))
    body = card_body(
        pretty_name=params.pretty_name,
        license_id=params.license,
        citation=params.citation,
        config_hash=params.config_hash,
        configs=[(c.name, c.path, c.rows, c.columns, c.description) for c in configs],
        counts=counts,
        groups=groups,
    )
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}")


def render_card(
    params: CardParams,
    configs: Sequence[ConfigInfo],
    counts: Mapping[str, int],
    groups: Sequence[Mapping[str, object]],
) -> str:
    """The full `README.md` text of `build_card` (same arguments and errors)."""
    return str(build_card(params, configs, counts, groups))


def check_card(text: str) -> list[str]:
    """Offline validation of a card: what is wrong with it (empty list: nothing found).

    Checks that the YAML header parses into `DatasetCardData` and round-trips unchanged
    (`DatasetCardData(**data.to_dict())`), that every `REQUIRED_FIELDS` entry is non-empty, that
    `size_categories` holds Hub buckets, that each `configs` entry names a config and its data
    files, and that the body has every `REQUIRED_SECTIONS` heading. `DatasetCard.validate()`
    needs the Hub, so this is the check that runs without a network.

    Args:
        text: The card (`README.md`) text.

    Returns:
        One message per problem.
    """
    import yaml
    from huggingface_hub import DatasetCard, DatasetCardData

    try:
        card = DatasetCard(text)
    except (ValueError, yaml.YAMLError) as exc:
        return [f"YAML header does not parse into DatasetCardData: {exc}"]
    meta = card.data.to_dict()
    problems = [
        f"header field {name!r} is missing or empty"
        for name in REQUIRED_FIELDS
        if not meta.get(name)
    ]
    if DatasetCardData(**meta).to_dict() != meta:
        problems.append("header does not round-trip through DatasetCardData")
    known = {label for _, label in SIZE_CATEGORIES}
    problems += [
        f"size category {s!r} is not a Hub bucket"
        for s in meta.get("size_categories") or []
        if s not in known
    ]
    for entry in meta.get("configs") or []:
        if not entry.get("config_name") or not entry.get("data_files"):
            problems.append(f"configs entry {entry!r} lacks config_name or data_files")
    lines = {line.rstrip() for line in card.text.splitlines()}
    problems += [
        f"section {heading!r} is missing" for heading in REQUIRED_SECTIONS if heading not in lines
    ]
    return problems
