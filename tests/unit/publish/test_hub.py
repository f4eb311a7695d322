"""Planning and dry runs (no server): what would be sent; nothing is sent without a token."""

from __future__ import annotations

import hashlib
import json
import socket

import pytest

from phantom_assets.publish import (
    KEEP_IN_REPO,
    PublishError,
    StagedDataset,
    plan_operations,
    publish,
    visibility_warning,
)

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
    assert {op["operation"] for op in plan} == {"add"}
    for op in plan:
        content = (staged.path / op["path_in_repo"]).read_bytes()
        assert op["size"] == len(content)
        assert op["sha256"] == hashlib.sha256(content).hexdigest()


@pytest.mark.parametrize(
    ("remote", "deleted"),
    [
        ((), []),
        ((".gitattributes",), []),
        ((".gitattributes", "README.md", "data/kernels/kernels.parquet"), []),
        (("data/old/old.parquet", ".gitattributes"), ["data/old/old.parquet"]),
        (("notes.txt", "data/a.csv"), ["data/a.csv", "notes.txt"]),
    ],
)
def test_plan_operations_deletes_remote_files_the_folder_lacks_but_keeps_gitattributes(
    staged: StagedDataset, remote: tuple[str, ...], deleted: list[str]
) -> None:
    plan = plan_operations(staged, remote)

    adds = [op["path_in_repo"] for op in plan if op["operation"] == "add"]
    deletes = [op["path_in_repo"] for op in plan if op["operation"] == "delete"]
    assert adds == sorted(staged.files)
    assert deletes == deleted
    assert not KEEP_IN_REPO & set(deletes)
    assert [op["operation"] for op in plan] == ["add"] * len(adds) + ["delete"] * len(deletes)


@pytest.mark.parametrize(
    ("private", "repo_private", "warns"),
    [
        (True, False, True),
        (True, True, False),
        (True, None, False),
        (False, False, False),
        (False, True, False),
    ],
)
def test_visibility_warning_only_when_private_was_asked_and_the_repo_is_public(
    private: bool, repo_private: bool | None, warns: bool
) -> None:
    warning = visibility_warning("lab/sessions", private, repo_private)

    assert (warning is not None) == warns
    if warning:
        assert "lab/sessions" in warning and "PUBLIC" in warning


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
    assert (result.private, result.remote_listed, result.repo_private) == (True, False, None)
    assert TOKEN not in repr(result)
    assert json.loads(json.dumps(result.to_dict()))["operations"] == plan_operations(staged)


def test_publish_rejects_a_missing_staged_file_before_any_request(staged: StagedDataset) -> None:
    (staged.path / "README.md").unlink()

    with pytest.raises(ValueError, match=r"README\.md"):
        publish(staged, "lab/sessions", TOKEN, endpoint=_closed_port_url())


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
