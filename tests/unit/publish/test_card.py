"""Dataset card: size buckets, front matter that huggingface_hub parses, required sections."""

from __future__ import annotations

import pytest
from huggingface_hub import DatasetCard

from phantom_assets.publish import CardParams, ConfigInfo, render_card, size_category

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


def test_render_card_has_every_body_section() -> None:
    text = render_card(CardParams(config_hash="abc123"), [SESSIONS], {"rows": 12}, GROUPS)

    for heading in ("## Counts", "## Schema", "## Collection method", "## Intended use",
                    "## Limitations", "## Citation"):  # fmt: skip
        assert f"\n{heading}\n" in text, heading
    assert "| hotel | human | 3 | 12 |" in text
    assert "`abc123`" in text


def test_render_card_rejects_counts_without_rows() -> None:
    with pytest.raises(ValueError, match="rows"):
        render_card(CardParams(), [SESSIONS], {"sessions": 3}, GROUPS)


def test_render_card_rejects_an_empty_config_list() -> None:
    with pytest.raises(ValueError, match="sessions config"):
        render_card(CardParams(), [], {"rows": 3}, GROUPS)


def test_card_params_reject_an_empty_license() -> None:
    with pytest.raises(ValueError, match="license"):
        CardParams(license=" ")
