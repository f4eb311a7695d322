"""Publish a staged dataset to a local fake Hub: one commit, right files, token never leaked."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants
import pytest

from phantom_assets.publish import (
    PublishError,
    PublishInputs,
    StagedDataset,
    publish,
    stage_dataset,
)
from tests.integration.fake_hub import FakeHub
from tests.unit.publish.builders import canonical_events, contaminated, kernels

pytestmark = pytest.mark.integration

TOKEN = "hf_FakeHubSecretToken0123456789abcdEF"
REPO = "phantom-lab/storefront-sessions"


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allow requests to the local server even if offline mode was set at import time."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("HF_TOKEN", raising=False)


def _hub(request: pytest.FixtureRequest, fail_on: str | None = None) -> FakeHub:
    hub = FakeHub(fail_on=fail_on).start()
    request.addfinalizer(hub.stop)
    return hub


@pytest.fixture
def hub(request: pytest.FixtureRequest, online: None) -> Iterator[FakeHub]:
    yield _hub(request)


@pytest.fixture
def staged(tmp_path: Path) -> StagedDataset:
    inputs = PublishInputs(canonical_events(), kernels(), contaminated())
    return stage_dataset(inputs, tmp_path / "publish" / "hf_dataset")


def _leaks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Captured log lines (message and traceback) that contain the token."""
    formatter = logging.Formatter("%(message)s")
    return [text for record in caplog.records if TOKEN in (text := formatter.format(record))]


def test_publish_makes_exactly_one_commit_with_every_staged_file(
    hub: FakeHub, staged: StagedDataset, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    result = publish(staged, REPO, TOKEN, endpoint=hub.url, commit_message="Publish sessions")

    assert len(hub.state.commits) == 1
    commit = hub.state.commits[0]
    assert commit.repo == REPO
    assert commit.revision == "main"
    assert commit.summary == "Publish sessions"
    assert sorted(commit.files) == sorted(staged.files)
    for name, content in commit.files.items():
        assert content == (staged.path / name).read_bytes(), name
    assert hub.state.repos == [REPO]
    assert result.dry_run is False
    assert result.commit_oid == commit.oid
    assert result.commit_url == f"{hub.url}/datasets/{REPO}/commit/{commit.oid}"
    assert [op["path_in_repo"] for op in result.operations] == sorted(staged.files)


def test_publish_sends_the_token_only_in_the_authorization_header(
    hub: FakeHub, staged: StagedDataset, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    result = publish(staged, REPO, TOKEN, endpoint=hub.url)

    auth = {headers.get("authorization") for _, _, headers in hub.state.requests}
    assert auth == {f"Bearer {TOKEN}"}
    assert TOKEN not in repr(result)
    assert not _leaks(caplog)


def test_publish_commits_to_a_named_revision(hub: FakeHub, staged: StagedDataset) -> None:
    result = publish(staged, REPO, TOKEN, endpoint=hub.url, revision="v1")

    paths = [path for _, path, _ in hub.state.requests]
    assert f"/api/datasets/{REPO}/branch/v1" in paths
    assert [c.revision for c in hub.state.commits] == ["v1"]
    assert result.revision == "v1"


@pytest.mark.parametrize("fail_on", ["/api/repos/create", "/commit/"])
def test_publish_failure_message_never_contains_the_token(
    request: pytest.FixtureRequest,
    online: None,
    staged: StagedDataset,
    caplog: pytest.LogCaptureFixture,
    fail_on: str,
) -> None:
    hub = _hub(request, fail_on=fail_on)
    caplog.set_level(logging.DEBUG)

    with pytest.raises(PublishError) as caught:
        publish(staged, REPO, TOKEN, endpoint=hub.url)

    # The server did echo the token back: the scrubbing is what keeps it out.
    assert any(fail_on in path for _, path, _ in hub.state.requests)
    assert "500" in str(caught.value)
    assert TOKEN not in str(caught.value)
    assert TOKEN not in repr(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert hub.state.commits == []
    assert not _leaks(caplog)
