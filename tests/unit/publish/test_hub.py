"""Planning and dry runs (no server): what would be sent; nothing is sent without a token."""

from __future__ import annotations

import hashlib
import socket

import pytest

from phantom_assets.publish import PublishError, StagedDataset, plan_operations, publish

TOKEN = "hf_UnitTestSecretToken0123456789"


def _closed_port_url() -> str:
    """A local URL nobody listens on (bound then released): any request to it fails fast."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_plan_operations_lists_every_file_with_size_and_sha256(staged: StagedDataset) -> None:
    plan = plan_operations(staged)

    assert [op["path_in_repo"] for op in plan] == sorted(staged.files)
    for op in plan:
        content = (staged.path / op["path_in_repo"]).read_bytes()
        assert op["size"] == len(content)
        assert op["sha256"] == hashlib.sha256(content).hexdigest()


def test_plan_operations_rejects_a_missing_file(staged: StagedDataset) -> None:
    (staged.path / "README.md").unlink()

    with pytest.raises(ValueError, match=r"README\.md"):
        plan_operations(staged)


@pytest.mark.parametrize(
    ("repo_id", "token"),
    [("lab/sessions", None), ("lab/sessions", ""), (None, TOKEN), ("", TOKEN)],
)
def test_publish_without_token_or_repo_is_a_dry_run(
    staged: StagedDataset, repo_id: str | None, token: str | None
) -> None:
    # The endpoint refuses connections: a dry run that tried to send would raise.
    result = publish(staged, repo_id, token, endpoint=_closed_port_url())

    assert result.dry_run is True
    assert list(result.operations) == plan_operations(staged)
    assert (result.commit_url, result.commit_oid) == (None, None)
    assert TOKEN not in repr(result)


def test_publish_rejects_an_empty_commit_message(staged: StagedDataset) -> None:
    with pytest.raises(ValueError, match="commit_message"):
        publish(staged, "lab/sessions", TOKEN, commit_message="  ")


def test_publish_wraps_connection_errors_without_chaining(
    staged: StagedDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)

    with pytest.raises(PublishError, match="lab/sessions") as caught:
        publish(staged, "lab/sessions", TOKEN, endpoint=_closed_port_url())

    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert TOKEN not in str(caught.value)


def test_publish_dry_run_does_not_touch_the_staged_folder(staged: StagedDataset) -> None:
    before = plan_operations(staged)

    publish(staged, None, None)

    assert plan_operations(staged) == before
    assert sorted(p.name for p in staged.path.iterdir()) == ["README.md", "data"]
