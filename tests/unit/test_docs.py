"""The project's documentation holds together: every link and section reference in the README and
docs/ resolves to a file and a heading, every `docs/<page>.md#<section>` a module cites exists,
and nothing cites DESIGN, a document users never see."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.pipeline_helpers import REPO_ROOT

DOCS = REPO_ROOT / "docs"
PAGES = (
    REPO_ROOT / "README.md",
    REPO_ROOT / "dbt_project" / "README.md",
    *sorted(DOCS.glob("*.md")),
)
SOURCE_ROOTS = ("phantom_assets", "orchestration", "tests", "dbt_project", "docs")
SOURCE_SUFFIXES = {".py", ".md", ".sql", ".yml", ".yaml", ".toml"}
EXCLUDED_PARTS = {"target", "__pycache__", "dbt_packages", "logs"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CITATION = re.compile(r"docs/([\w-]+\.md)#([^\s)`'\",;:]+)")
QUOTED_SECTION = re.compile(r"\bsee \"[^\"]+\"")
FENCE = re.compile(r"^(```|~~~)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: inline markup dropped, lower case, punctuation removed
    (letters of any script, digits, `_` and `-` kept), spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a markdown page (outside code blocks; repeats get -1, -2, ...)."""
    found: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"^#{1,6} (.+)$", line)):
            anchor = github_anchor(heading[1])
            found[anchor] = found.get(anchor, -1) + 1
            if found[anchor]:
                found[f"{anchor}-{found[anchor]}"] = 0
    return set(found)


def _outside_code_blocks(page: Path) -> str:
    kept, fenced = [], False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            kept.append(line)
    return "\n".join(kept)


def _problem(source: Path, target: str) -> str | None:
    """What is wrong with a link target of `source` (None: it resolves)."""
    if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
        return None
    path, _, anchor = target.partition("#")
    page = (source.parent / path).resolve() if path else source
    if not page.exists():
        return f"{target}: no file {page}"
    if anchor and (page.suffix != ".md" or anchor not in anchors(page)):
        return f"{target}: no heading #{anchor} in {page.name}"
    return None


def _sources() -> list[Path]:
    files = [REPO_ROOT / name for name in ("README.md", "Makefile", "pyproject.toml")]
    for root in SOURCE_ROOTS:
        files += [
            p
            for p in (REPO_ROOT / root).rglob("*")
            if p.suffix in SOURCE_SUFFIXES and p.is_file() and not EXCLUDED_PARTS & set(p.parts)
        ]
    return files


def test_the_anchor_of_a_heading_is_githubs():
    assert github_anchor("The market: the store's own prices, and `K`") == (
        "the-market-the-stores-own-prices-and-k"
    )
    assert github_anchor("Contamination generator G(α)") == "contamination-generator-gα"


def test_a_missing_file_or_heading_is_named(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n```\n# not a heading\n```\n")
    assert _problem(page, "#title") is None
    assert "no heading #not-a-heading in page.md" in (_problem(page, "#not-a-heading") or "")
    assert "no file" in (_problem(page, "other.md#title") or "")


def test_the_docs_pages_exist():
    names = {page.name for page in DOCS.glob("*.md")}
    assert {"method.md", "architecture.md", "statistics.md", "glossary.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_link_of_a_page_resolves_to_a_file_and_heading(page: Path):
    broken = [
        problem
        for target in LINK.findall(_outside_code_blocks(page))
        if (problem := _problem(page, target))
    ]
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_section_references_are_links_not_quoted_titles(page: Path):
    # A quoted title ("see "What a demo run shows"") broke silently when the section was renamed.
    assert QUOTED_SECTION.findall(_outside_code_blocks(page)) == []


def test_every_docs_section_the_code_cites_exists():
    broken = sorted(
        f"{source.relative_to(REPO_ROOT)}: docs/{page}#{anchor}"
        for source in _sources()
        for page, anchor in CITATION.findall(source.read_text())
        if not (DOCS / page).exists() or anchor.rstrip(".") not in anchors(DOCS / page)
    )
    assert broken == []


def test_no_module_cites_the_internal_design_document():
    citing = sorted(
        str(source.relative_to(REPO_ROOT))
        for source in _sources()
        if re.search(r"DESIGN\s*§", source.read_text())
    )
    assert citing == [], "cite the docs/ section that says it instead"


def test_the_readmes_example_config_loads_with_the_values_it_shows(tmp_path: Path):
    # Settings are renamed as the project grows; an example naming a removed key fails at load.
    from phantom_assets.config import load_settings

    readme = (REPO_ROOT / "README.md").read_text()
    start = readme.index("# phantom.toml  (PHANTOM_CONFIG")
    example = readme[start : readme.index("```", start)]
    path = tmp_path / "phantom.toml"
    path.write_text(example)
    settings = load_settings("demo", config_file=path)
    assert settings.evaluation.test_episodes == 24 and settings.evaluation.max_human_harm == 0.02
    assert settings.market.bank == "empirical" and "tuned" in settings.training.tiers
