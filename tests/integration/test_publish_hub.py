"""Publish to a local fake Hub: private by default, one commit with adds AND deletes, branches,
the token never leaked; and the real pipeline's staged folder loads with `datasets`."""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import datasets
import huggingface_hub.constants
import polars as pl
import pytest
from huggingface_hub import DatasetCard, HfApi, ModelCard
from huggingface_hub.errors import RepositoryNotFoundError

from orchestration import cli
from orchestration.resources import HubResource, build_resources
from orchestration.runner import run_pipeline
from phantom_assets.config import Settings
from phantom_assets.detector import DetectorBundle
from phantom_assets.publish import (
    CARD_PATH,
    CONFIG_PATHS,
    KEEP_IN_REPO,
    PublishError,
    PublishInputs,
    StagedDataset,
    check_card,
    publish,
    stage_dataset,
)
from tests.built_pipeline import BuiltPipeline
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


def _stage(folder: Path, *, with_kernels: bool = True) -> StagedDataset:
    inputs = PublishInputs(canonical_events(), kernels() if with_kernels else None, contaminated())
    return stage_dataset(inputs, folder)


@pytest.fixture
def staged(tmp_path: Path) -> StagedDataset:
    return _stage(tmp_path / "publish" / "hf_dataset")


def _leaks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Captured log lines (message and traceback) that contain the token."""
    formatter = logging.Formatter("%(message)s")
    return [text for record in caplog.records if TOKEN in (text := formatter.format(record))]


def _same_files(hub: FakeHub, staged: StagedDataset, revision: str = "main") -> None:
    """The branch holds exactly the staged files (same bytes) plus the Hub's own files."""
    remote = hub.state.files(REPO, revision)
    assert sorted(set(remote) - KEEP_IN_REPO) == sorted(staged.files)
    for name in staged.files:
        assert remote[name] == (staged.path / name).read_bytes(), name
    assert ".gitattributes" in remote


def test_publish_makes_exactly_one_commit_with_every_staged_file(
    hub: FakeHub, staged: StagedDataset
) -> None:
    result = publish(staged, REPO, TOKEN, endpoint=hub.url, commit_message="Publish sessions")

    assert len(hub.state.commits) == 1
    commit = hub.state.commits[0]
    assert (commit.repo, commit.revision, commit.summary) == (REPO, "main", "Publish sessions")
    assert sorted(commit.files) == sorted(staged.files)
    assert commit.deleted == ()  # a new repo only has .gitattributes, which is kept
    _same_files(hub, staged)
    assert list(hub.state.repos) == [REPO]
    assert result.dry_run is False
    assert result.commit_oid == commit.oid
    assert result.commit_url == f"{hub.url}/datasets/{REPO}/commit/{commit.oid}"
    assert result.paths("add") == sorted(staged.files)
    assert result.paths("delete") == []


def test_publish_creates_the_repo_private_by_default(hub: FakeHub, staged: StagedDataset) -> None:
    result = publish(staged, REPO, TOKEN, endpoint=hub.url)

    assert hub.state.repos[REPO].private is True
    assert (result.private, result.repo_private, result.warnings) == (True, True, ())
    with pytest.raises(RepositoryNotFoundError):  # anonymous readers do not see it
        HfApi(endpoint=hub.url, token=False).repo_info(REPO, repo_type="dataset")


def test_publish_with_private_false_creates_a_public_repo(
    hub: FakeHub, staged: StagedDataset
) -> None:
    result = publish(staged, REPO, TOKEN, endpoint=hub.url, private=False)

    assert hub.state.repos[REPO].private is False
    assert (result.private, result.repo_private, result.warnings) == (False, False, ())
    assert (
        HfApi(endpoint=hub.url, token=False).repo_info(REPO, repo_type="dataset").private is False
    )


def test_republishing_after_a_file_is_dropped_commits_the_adds_and_the_delete_at_once(
    hub: FakeHub, staged: StagedDataset
) -> None:
    """Regression: files dropped between publishes used to stay on the Hub forever."""
    first = publish(staged, REPO, TOKEN, endpoint=hub.url)
    restaged = _stage(staged.path, with_kernels=False)  # data/kernels/kernels.parquet is gone

    second = publish(restaged, REPO, TOKEN, endpoint=hub.url)

    assert len(hub.state.commits) == 2  # exactly one new commit
    commit = hub.state.commits[1]
    assert commit.deleted == (CONFIG_PATHS["kernels"],)
    assert sorted(commit.files) == sorted(restaged.files)
    assert commit.parent == first.commit_oid  # committed on top of what was listed
    assert second.paths("delete") == [CONFIG_PATHS["kernels"]]
    _same_files(hub, restaged)


def test_publish_warns_loudly_when_the_existing_repo_is_public_and_private_was_asked(
    hub: FakeHub, staged: StagedDataset, caplog: pytest.LogCaptureFixture
) -> None:
    publish(staged, REPO, TOKEN, endpoint=hub.url, private=False)
    caplog.set_level(logging.WARNING)

    result = publish(staged, REPO, TOKEN, endpoint=hub.url)

    assert result.repo_private is False
    assert len(result.warnings) == 1 and "PUBLIC" in result.warnings[0]
    assert any("PUBLIC" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert hub.state.repos[REPO].private is False  # visibility is the owner's call, not ours
    HfApi(endpoint=hub.url, token=TOKEN).update_repo_settings(
        REPO, private=True, repo_type="dataset"
    )
    assert publish(staged, REPO, TOKEN, endpoint=hub.url).warnings == ()


def test_publish_commits_to_a_named_revision_created_from_main(
    hub: FakeHub, staged: StagedDataset
) -> None:
    publish(staged, REPO, TOKEN, endpoint=hub.url)
    restaged = _stage(staged.path, with_kernels=False)

    result = publish(restaged, REPO, TOKEN, endpoint=hub.url, revision="v1")

    paths = [path for method, path, _ in hub.state.requests if method == "POST"]
    assert f"/api/datasets/{REPO}/branch/v1" in paths
    assert [c.revision for c in hub.state.commits] == ["main", "v1"]
    assert hub.state.commits[1].deleted == (CONFIG_PATHS["kernels"],)  # listed on the branch
    assert result.revision == "v1"
    _same_files(hub, restaged, "v1")
    assert CONFIG_PATHS["kernels"] in hub.state.files(REPO, "main")  # main untouched


def test_dry_run_with_a_token_plans_adds_and_deletes_and_writes_nothing(
    hub: FakeHub, staged: StagedDataset
) -> None:
    publish(staged, REPO, TOKEN, endpoint=hub.url)
    restaged = _stage(staged.path, with_kernels=False)
    writes_before = sum(method != "GET" for method, _, _ in hub.state.requests)

    result = publish(restaged, REPO, TOKEN, endpoint=hub.url, dry_run=True)

    assert result.dry_run and result.remote_listed
    assert result.paths("add") == sorted(restaged.files)
    assert result.paths("delete") == [CONFIG_PATHS["kernels"]]
    assert sum(method != "GET" for method, _, _ in hub.state.requests) == writes_before
    assert len(hub.state.commits) == 1


def test_publish_sends_the_token_only_in_the_authorization_header(
    hub: FakeHub, staged: StagedDataset, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    result = publish(staged, REPO, TOKEN, endpoint=hub.url)

    auth = {headers.get("authorization") for _, _, headers in hub.state.requests}
    assert auth == {f"Bearer {TOKEN}"}
    assert TOKEN not in repr(result) and TOKEN not in json.dumps(result.to_dict())
    assert not _leaks(caplog)


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


# --- The real pipeline (ingest -> dbt -> kernels -> contamination -> hf_dataset), run once ---


@dataclass
class Pipeline:
    settings: Settings
    hub: FakeHub
    metadata: dict[str, object]
    detector_metadata: dict[str, object]

    @property
    def folder(self) -> Path:
        return self.settings.publish_dir / "hf_dataset"


@pytest.fixture(scope="module")
def pipeline(
    built_pipeline: BuiltPipeline, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pipeline]:
    """A copy of the session's built pipeline, then `hf_dataset` publishing to a fake Hub with
    the default (private) settings."""
    copy = built_pipeline.copy_to(tmp_path_factory.mktemp("pipeline"))
    settings = copy.settings
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        hub = FakeHub().start()
        try:
            resources = {
                **build_resources(settings),
                "hub": HubResource(repo_id=REPO, token=TOKEN, endpoint=hub.url),
            }
            with copy.instance() as instance:
                report = run_pipeline(
                    settings,
                    instance,
                    resources=resources,
                    selection='key:"hf_dataset" or key:"hf_detector"',
                )
                assert not report.failed, report.failed
                metadata = {}
                for asset in ("hf_dataset", "hf_detector"):
                    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
                    assert event is not None and event.asset_materialization is not None
                    metadata[asset] = {
                        k: v.value for k, v in event.asset_materialization.metadata.items()
                    }
            yield Pipeline(settings, hub, metadata["hf_dataset"], metadata["hf_detector"])
        finally:
            hub.stop()


def test_pipeline_staged_folder_loads_every_card_config_with_datasets(
    pipeline: Pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    card_text = (pipeline.folder / CARD_PATH).read_text(encoding="utf-8")
    configs = DatasetCard(card_text).data.configs

    assert check_card(card_text) == []
    assert [c["config_name"] for c in configs] == ["sessions", "kernels", "contaminated"]
    for config in configs:
        name, path = config["config_name"], config["data_files"][0]["path"]
        loaded = datasets.load_dataset(str(pipeline.folder), name, cache_dir=str(tmp_path))
        expected = pl.read_parquet(pipeline.folder / path).height
        assert expected > 0, name
        assert loaded["train"].num_rows == expected, name
        assert pipeline.metadata[f"n_rows_{name}"] == expected, name


def test_pipeline_publish_creates_a_private_repo_equal_to_the_staged_folder(
    pipeline: Pipeline,
) -> None:
    state = pipeline.hub.state
    remote = state.files(REPO)

    assert state.repos[REPO].private is True
    assert [c.repo for c in state.commits].count(REPO) == 1
    assert sorted(set(remote) - KEEP_IN_REPO) == sorted(
        p.relative_to(pipeline.folder).as_posix() for p in pipeline.folder.rglob("*") if p.is_file()
    )
    assert pipeline.metadata["private_requested"] is True
    assert pipeline.metadata["repo_private"] is True
    assert pipeline.metadata["n_files_deleted"] == 0
    assert pipeline.metadata["warnings"] == []


def test_cli_publish_public_on_a_branch_creates_a_public_repo(
    pipeline: Pipeline,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(pipeline.settings.lake_dir, data_dir / "lake")
    public_repo = "phantom-lab/public-sessions"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    for name in ("PHANTOM_CONFIG", "PHANTOM_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    env = {
        "PHANTOM_DATA_DIR": str(data_dir),
        "DAGSTER_HOME": str(tmp_path / "home"),
        "PHANTOM_HF_REPO": public_repo,
        "HF_TOKEN": TOKEN,
        "HF_ENDPOINT": pipeline.hub.url,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    code = cli.main(["publish", "--public", "--revision", "v2"])

    assert code == 0
    state = pipeline.hub.state
    assert state.repos[public_repo].private is False
    assert [(c.repo, c.revision) for c in state.commits if c.repo == public_repo] == [
        (public_repo, "v2")
    ]
    printed = json.loads(capsys.readouterr().out)
    for asset, repo in (("hf_dataset", public_repo), ("hf_detector", f"{public_repo}-detector")):
        plan = printed[asset]
        assert (plan["repo_id"], plan["private"], plan["repo_private"], plan["revision"]) == (
            repo,
            False,
            False,
            "v2",
        )
        assert state.repos[repo].private is False
    for name in ("last_publish.json", "last_publish_detector.json"):
        assert TOKEN not in (data_dir / "publish" / name).read_text()


def test_pipeline_publishes_the_detectors_as_a_private_model_repo_usable_on_its_own(
    pipeline: Pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model repo next to the dataset holds each store's bundle, the scorer and a card; its
    `runtime.py`, imported from the Hub's bytes alone, scores the store's sessions as the lake's
    bundle does."""
    repo = f"{REPO}-detector"
    state = pipeline.hub.state
    remote = state.files(repo)
    folder = pipeline.settings.publish_dir / "hf_detector"
    assert state.repos[repo].private is True
    assert sorted(set(remote) - KEEP_IN_REPO) == sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
    )
    assert {"README.md", "runtime.py", "hotel/detector.json", "airline/detector.json"} <= set(
        remote
    )
    card = ModelCard(remote["README.md"].decode())
    assert card.data.license == "cc-by-4.0" and "bot-detection" in card.data.tags
    assert "## Limits" in card.text and "| hotel |" in card.text
    (tmp_path / "runtime.py").write_bytes(remote["runtime.py"])
    spec = importlib.util.spec_from_file_location("hub_runtime", tmp_path / "runtime.py")
    hub_runtime = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "hub_runtime", hub_runtime)  # as an import would
    spec.loader.exec_module(hub_runtime)  # the stdlib alone: no phantom_assets import in it
    assert "phantom_assets" not in remote["runtime.py"].decode()
    lake = pipeline.settings.lake
    for store in ("hotel", "airline"):
        published = hub_runtime.DetectorBundle.from_dict(
            json.loads(remote[f"{store}/detector.json"])
        )
        local = DetectorBundle.load(lake.detector_dir(store) / "detector.json")
        humans = pl.read_parquet(lake.labeled_sessions(store, "human"))
        assert published.needs_time  # detector v2: events carry their times
        for events, times in humans.select("trajectory", "event_offsets_ms").iter_rows():
            assert [(q.index, q.score) for q in published.quotes(events, times)] == [
                (q.index, q.score) for q in local.quotes(events, times)
            ]
    assert pipeline.detector_metadata["repo_id"] == repo
    assert pipeline.detector_metadata["stores"] == ["airline", "hotel"]
