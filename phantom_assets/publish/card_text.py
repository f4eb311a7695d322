"""The markdown body of the dataset card, in the sections of the Hub's dataset-card template.

Split from `card.py` (which builds the `DatasetCardData` header and validates) so the prose lives
in one place. Pure string building; no dates, so the same inputs give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["card_body"]

# (name, path, rows, ((column, dtype), ...), description)
ConfigRow = tuple[str, str, int, tuple[tuple[str, str], ...], str]

_DETAILS = """## Dataset Details

### Dataset Description

Storefront sessions of human visitors and LLM shopping agents on a hotel shop and an airline shop:
every page view, click, cart change and price quote, with the actor class (human / agent) where it
is known. The extra configs hold what the PHANTOM pipeline derives from them: per-store transition
kernels of each actor class and contaminated datasets that mix human sessions with synthetic agent
sessions at a contamination level alpha.

- **Curated by:** the operators of the PHANTOM pipeline that built this folder
- **License:** {license}
- **Language(s):** not applicable (event logs; page paths and UI texts are English)
"""
_USES = """## Uses

### Direct Use

Research on telling LLM shopping agents from human visitors by their navigation (Markov
transition kernels, divergence scores), on how agent traffic leaks the *cost of information* of
session-based dynamic pricing, and on robust pricing policies trained under contamination.

### Out-of-Scope Use

- Decisions about individual visitors (blocking, pricing, profiling a person): detector scores
  `f` are model outputs, not ground truth.
- Re-identifying visitors, or linking `sessionId` / `experimentId` / `userAgent` to other data.
- Treating the `contaminated` config's synthetic agent sessions as observed agent traffic.
"""
_CREATION = """## Dataset Creation

### Curation Rationale

Public agent-vs-human clickstreams with labels are rare; this dataset makes the sessions behind
PHANTOM's detector and pricing experiments reusable in the public `whoclickedit` column layout.

### Source Data

#### Data Collection and Processing

Sessions were logged as Kafka events (`user-interactions`, `price-logs`) and exported as raw
batches. The PHANTOM pipeline ingests every batch (format detected from content), maps event names
onto a 17-name canonical vocabulary, drops `/admin/` pages and quarantines malformed rows with a
reason; nothing is silently lost. Labels come from the experiment sidecar (`xp_human_only`) or the
actor column; unlabeled sessions have empty `actor_type` / `is_agent`. The session table is
flattened back into the `whoclickedit` layout: `source_file` is the PHANTOM batch id,
`source_row_index` the row inside it, `ingest_format` is `phantom_canonical`, and `kafka_*` columns
are empty because the canonical events do not keep Kafka coordinates. Metadata values that do not
fit their column type are published as empty (`metadata_values_dropped` above). Data made by
`phantom simulate` is synthetic.

#### Who are the source data producers?

Human participants of the storefront study and the LLM shopping agents run in it (or, for
simulated data, the PHANTOM simulator).

#### Personal and Sensitive Information

The tables hold no names, e-mail addresses, IP addresses or payment data, but they do hold
**pseudonymous identifiers and behavioural traces**:

- `sessionId` and `experimentId`: identifiers of a visit and of a study run; whoever holds the
  study's enrolment records can link them to a person.
- `userAgent`: the browser or agent user-agent string, which narrows down a device and can help
  fingerprint a visitor.
- `ts` (millisecond timestamps), `page`, `metadata_referrer` (URLs, query strings included) and
  `metadata_elementText`: what a visitor did and when.

For this reason the pipeline publishes to a **private** repository by default
(`phantom publish --public` opts out). Publish publicly only when every participant consented to
a public release; consider hashing the identifiers and coarsening `userAgent` first.
"""
_RISKS = """## Bias, Risks, and Limitations

- Two storefronts (hotel, airline) and the agents and humans who took part; behaviour elsewhere
  may differ, and agent behaviour changes with model versions and prompts.
- Class balance follows the study design, not real traffic: agent shares here say nothing about
  agent shares on live shops.
- The `contaminated` config mixes real human sessions with *synthetic* agent sessions sampled from
  a fitted kernel (`source = synthetic`); it is not observed agent traffic.
- Detector scores `f` are model outputs with errors; a human flagged as an agent could be priced
  or served differently if a score were used on its own.
- Session-level identifiers and user agents are quasi-identifiers (see above).

### Recommendations

Report results per store and per actor class, keep synthetic and observed agent sessions apart,
never act on a single visitor's score, and keep the repository private unless participants agreed
to a public release.
"""


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _structure(
    configs: Sequence[ConfigRow],
    counts: Mapping[str, int],
    groups: Sequence[Mapping[str, object]],
) -> str:
    """Configs, totals, the store x actor breakdown and one column/dtype table per config."""
    overview = "\n".join(f"- `{name}`: {rows} rows, `{path}`" for name, path, rows, _, _ in configs)
    totals = _table(("quantity", "value"), sorted(counts.items()))
    by_group = _table(
        ("store", "actor", "sessions", "rows"),
        [(g["store"], g["actor"], g["sessions"], g["rows"]) for g in groups],
    )
    parts = [
        "## Dataset Structure\n",
        f"One `train` split per config; the first is the default.\n\n{overview}\n",
        f"### Counts\n\n{totals}\n\nBy store and actor (`unknown` = unlabeled):\n\n{by_group}\n",
    ]
    for name, path, _, columns, description in configs:
        parts.append(f"### `{name}` (`{path}`)\n\n{description}\n")
        parts.append(_table(("column", "dtype"), columns) + "\n")
    return "\n".join(parts)


def card_body(
    *,
    pretty_name: str,
    license_id: str,
    citation: str,
    config_hash: str | None,
    configs: Sequence[ConfigRow],
    counts: Mapping[str, int],
    groups: Sequence[Mapping[str, object]],
) -> str:
    """The card's markdown body (everything after the YAML header).

    Args:
        pretty_name: Title of the card.
        license_id: License identifier shown under Dataset Details.
        citation: BibTeX entry.
        config_hash: PHANTOM configuration the folder was built with (`None`: not shown).
        configs: `(name, path, rows, columns, description)` per config, the default first.
        counts: Totals for the Counts table.
        groups: Rows `{store, actor, sessions, rows}` for the breakdown table.

    Returns:
        The markdown text, ending with a newline.
    """
    provenance = f"\n\nBuilt with PHANTOM configuration `{config_hash}`." if config_hash else ""
    summary = (
        f"# Dataset Card for {pretty_name}\n\n"
        "Flattened storefront event log (one row per event or price quote) in the `whoclickedit`"
        f" column layout, with extra configs from the PHANTOM pipeline.{provenance}\n"
    )
    sections = [
        summary,
        _DETAILS.format(license=license_id),
        _USES,
        _structure(configs, counts, groups),
        _CREATION,
        _RISKS,
        f"## Citation\n\n**BibTeX:**\n\n```bibtex\n{citation.strip()}\n```\n",
    ]
    return "\n".join(sections)
