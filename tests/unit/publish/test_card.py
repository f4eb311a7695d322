"""Dataset card: size buckets, front matter that huggingface_hub parses, required sections."""

from __future__ import annotations

import pytest
from huggingface_hub import DatasetCard, DatasetCardData

from phantom_assets.publish import (
    REQUIRED_SECTIONS,
    CardParams,
    ConfigInfo,
    build_card,
    check_card,
    render_card,
    size_category,
)

SESSIONS = ConfigInfo(
    "sessions", "data/sessions/sessions.parquet", 12, (("sessionId", "String"),), "Events."
)
KERNELS = ConfigInfo("kernels", "data/kernels/kernels.parquet", 50, (("src", "String"),), "K.")
GROUPS = [{"store": "hotel", "actor": "human", "sessions": 3, "rows": 12}]


@pytest.mark.parametrize(
    ("n_rows", "expected"),
    [
        (0, "n<1K"),
        (999, "n<1K"),
        (1_000, "1K<n<10K"),
        (12_345, "10K<n<100K"),
        (999_999, "100K<n<1M"),
        (1_000_000, "1M<n<10M"),
        (10**12, "n>1T"),
    ],
)
def test_size_category_buckets_row_counts_like_the_hub(n_rows: int, expected: str) -> None:
    assert size_category(n_rows) == expected


def test_size_category_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="-1"):
        size_category(-1)


def test_render_card_front_matter_parses_with_dataset_card() -> None:
    text = render_card(CardParams(), [SESSIONS, KERNELS], {"rows": 12_000}, GROUPS)

    data = DatasetCard(text).data

    assert data.license == "cc-by-4.0"
    assert data.pretty_name == CardParams().pretty_name
    assert data.task_categories == ["tabular-classification"]
    assert "llm-agents" in data.tags
    assert data.size_categories == ["10K<n<100K"]
    assert data.configs == [
        {
            "config_name": "sessions",
            "data_files": [{"split": "train", "path": "data/sessions/sessions.parquet"}],
            "default": True,
        },
        {
            "config_name": "kernels",
            "data_files": [{"split": "train", "path": "data/kernels/kernels.parquet"}],
        },
    ]


def test_render_card_has_every_template_section() -> None:
    text = render_card(CardParams(config_hash="abc123"), [SESSIONS], {"rows": 12}, GROUPS)

    lines = text.splitlines()
    for heading in REQUIRED_SECTIONS:
        assert heading in lines, heading
    assert "| hotel | human | 3 | 12 |" in text
    assert "`abc123`" in text


def _section(text: str, heading: str) -> str:
    """The body under `heading`, up to the next heading."""
    after = text.split(f"\n{heading}\n", 1)[1]
    return after.split("\n#", 1)[0]


def test_render_card_names_the_quasi_identifiers_and_the_private_default() -> None:
    text = render_card(CardParams(), [SESSIONS], {"rows": 12}, GROUPS)

    personal = _section(text, "#### Personal and Sensitive Information")
    for column in ("sessionId", "experimentId", "userAgent", "metadata_referrer"):
        assert f"`{column}`" in personal, column
    assert "private" in personal and "--public" in personal
    assert "synthetic" in _section(text, "## Bias, Risks, and Limitations")


def test_build_card_header_round_trips_through_dataset_card_data() -> None:
    card = build_card(CardParams(), [SESSIONS, KERNELS], {"rows": 12}, GROUPS)

    meta = card.data.to_dict()
    assert isinstance(card.data, DatasetCardData)
    assert DatasetCardData(**meta).to_dict() == meta
    assert DatasetCard(str(card)).data.to_dict() == meta


def test_check_card_accepts_the_rendered_card() -> None:
    text = render_card(CardParams(), [SESSIONS, KERNELS], {"rows": 12}, GROUPS)

    assert check_card(text) == []


@pytest.mark.parametrize("heading", REQUIRED_SECTIONS)
def test_check_card_reports_a_missing_section(heading: str) -> None:
    text = render_card(CardParams(), [SESSIONS], {"rows": 12}, GROUPS)
    broken = "\n".join(line for line in text.splitlines() if line != heading)

    assert check_card(broken) == [f"section {heading!r} is missing"]


@pytest.mark.parametrize(
    ("replace", "expected"),
    [
        (("- tabular-classification", ""), "'task_categories' is missing or empty"),
        (("- n<1K", "- tiny"), "size category 'tiny' is not a Hub bucket"),
        (("license: cc-by-4.0", "license: [unclosed"), "does not parse"),
        (("  - split: train\n    path: data/sessions/sessions.parquet\n", ""), "data_files"),
    ],
)
def test_check_card_reports_a_broken_header(replace: tuple[str, str], expected: str) -> None:
    text = render_card(CardParams(), [SESSIONS], {"rows": 12}, GROUPS)
    assert replace[0] in text

    problems = check_card(text.replace(*replace, 1))

    assert any(expected in problem for problem in problems), problems


def test_check_card_reports_empty_tags() -> None:
    text = render_card(CardParams(tags=()), [SESSIONS], {"rows": 12}, GROUPS)

    assert check_card(text) == ["header field 'tags' is missing or empty"]


def test_render_card_rejects_counts_without_rows() -> None:
    with pytest.raises(ValueError, match="rows"):
        render_card(CardParams(), [SESSIONS], {"sessions": 3}, GROUPS)


def test_render_card_rejects_an_empty_config_list() -> None:
    with pytest.raises(ValueError, match="sessions config"):
        render_card(CardParams(), [], {"rows": 3}, GROUPS)


def test_card_params_reject_an_empty_license() -> None:
    with pytest.raises(ValueError, match="license"):
        CardParams(license=" ")
