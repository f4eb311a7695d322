"""Publish a staged folder (the session dataset, or the detector as a model) to the Hugging Face
Hub in one atomic commit (docs/architecture.md#publishing).

The commit makes the repo's branch equal to the staged folder: it adds every staged file AND
deletes every file the branch holds that the folder does not (`.gitattributes` is kept), so a file
dropped between two publishes disappears from the Hub too. The repo is created **private** unless
`private=False`; an existing public repo is never silently treated as private (the result carries
a warning, logged at WARNING). The commit names its parent, so a concurrent push to the branch
between listing and committing makes the commit fail instead of resurrecting deleted files.

Without a token or a repo id, or with `dry_run=True`, nothing is written: the result holds the
planned operations (deletions only when the repo could be listed, i.e. with a token and repo).
The token never leaves this module except in the `Authorization` header that `huggingface_hub`
builds: it is not logged, not stored on the result, and scrubbed from the message of any error
(which is raised without chaining, so the original exception cannot leak it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from phantom_assets.publish.redact import redact, redacting_logs

__all__ = [
    "DEFAULT_BRANCH",
    "DEFAULT_COMMIT_MESSAGE",
    "KEEP_IN_REPO",
    "REPO_TYPES",
    "PublishError",
    "PublishResult",
    "RemoteState",
    "plan_operations",
    "publish",
    "visibility_warning",
]

logger = logging.getLogger(__name__)

DEFAULT_COMMIT_MESSAGE: Final[str] = "Publish PHANTOM session dataset"
DEFAULT_BRANCH: Final[str] = "main"
# Files the Hub manages itself: never deleted even though the staged folder lacks them.
KEEP_IN_REPO: Final[frozenset[str]] = frozenset({".gitattributes"})
_CHUNK: Final[int] = 1 << 20
REPO_TYPES: Final[tuple[str, ...]] = ("dataset", "model")


class Staged(Protocol):
    """A staged folder: `path` and every file in it (relative, POSIX-style)."""

    @property
    def path(self) -> Path: ...

    @property
    def files(self) -> tuple[str, ...]: ...


class PublishError(RuntimeError):
    """The Hub refused or failed the publish; the message never contains the token."""


@dataclass(frozen=True)
class RemoteState:
    """What the target branch holds before the commit.

    Attributes:
        private: The repo's visibility as the Hub reports it (`None` if it does not say).
        head: Commit id the branch points at (the new commit's parent).
        files: Every file on the branch.
    """

    private: bool | None
    head: str | None
    files: tuple[str, ...]


@dataclass(frozen=True)
class PublishResult:
    """What a publish (or dry run) did.

    Attributes:
        repo_id: Target dataset repo (`None` in a dry run without one).
        dry_run: True when nothing was sent.
        operations: Planned or committed operations: `{operation: "add", path_in_repo, size,
            sha256}` per staged file, then `{operation: "delete", path_in_repo}` per stale file.
        commit_url: URL of the commit (None in a dry run).
        commit_oid: Commit id (None in a dry run).
        revision: Branch committed to.
        private: Whether a private repo was requested.
        repo_private: The repo's visibility as the Hub reported it (None: not known, e.g. the
            repo does not exist yet in a dry run, or there was no token).
        remote_listed: True when the branch's files were listed (deletions are then complete).
        warnings: Things the operator must see (e.g. a public repo where private was asked).
    """

    repo_id: str | None
    dry_run: bool
    operations: tuple[dict[str, Any], ...]
    commit_url: str | None = None
    commit_oid: str | None = None
    revision: str = DEFAULT_BRANCH
    private: bool = True
    repo_private: bool | None = None
    remote_listed: bool = False
    warnings: tuple[str, ...] = ()

    def paths(self, operation: str) -> list[str]:
        """`path_in_repo` of every operation of kind `operation` (`add` or `delete`)."""
        return [op["path_in_repo"] for op in self.operations if op["operation"] == operation]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for `last_publish.json`); holds no secret."""
        return {
            **asdict(self),
            "operations": list(self.operations),
            "warnings": list(self.warnings),
        }


def _sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def plan_operations(staged: Staged, remote_files: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The commit that makes a branch holding `remote_files` equal to the staged folder.

    Args:
        staged: The staged folder.
        remote_files: Files on the target branch now (empty: a new repo, or not listed).

    Returns:
        One `{operation: "add", path_in_repo, size, sha256}` per staged file (sorted), then one
        `{operation: "delete", path_in_repo}` per remote file the folder lacks (sorted), never
        for `KEEP_IN_REPO` files.

    Raises:
        ValueError: a listed file is missing from the folder.
    """
    plan: list[dict[str, Any]] = []
    for name in sorted(staged.files):
        path = staged.path / name
        if not path.is_file():
            raise ValueError(f"staged file {path} is missing; stage the dataset again")
        size, digest = path.stat().st_size, _sha256(path)
        plan.append({"operation": "add", "path_in_repo": name, "size": size, "sha256": digest})
    stale = set(remote_files) - set(staged.files) - KEEP_IN_REPO
    plan += [{"operation": "delete", "path_in_repo": name} for name in sorted(stale)]
    return plan


def visibility_warning(
    repo_id: str, private: bool, repo_private: bool | None, repo_type: str = "dataset"
) -> str | None:
    """The warning owed when a private publish meets a repo the Hub reports as public."""
    if not private or repo_private is not False:
        return None
    return (
        f"{repo_type} repo {repo_id!r} already exists and is PUBLIC although a private publish "
        "was requested: the files are world-readable. Make it private (Hub settings page, or "
        f"HfApi().update_repo_settings({repo_id!r}, private=True, repo_type={repo_type!r})), or "
        "publish with --public to confirm a public release."
    )


def _read_remote(api: Any, repo_id: str, branch: str, repo_type: str) -> RemoteState | None:
    """Visibility, head and files of `branch` (of `main` if the branch is missing); None if
    the repo does not exist."""
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    try:
        info = api.repo_info(repo_id, repo_type=repo_type, revision=branch)
    except RevisionNotFoundError:  # a branch to create: it starts from main
        if branch == DEFAULT_BRANCH:
            return None
        return _read_remote(api, repo_id, DEFAULT_BRANCH, repo_type)
    except RepositoryNotFoundError:
        return None
    head = info.sha
    files = api.list_repo_files(repo_id, revision=head or branch, repo_type=repo_type)
    return RemoteState(info.private, head, tuple(sorted(files)))


def _api(endpoint: str | None, token: str) -> Any:
    """An `HfApi` client (imported here: `huggingface_hub` is heavy and only needed online)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint, token=token)


def _require_files(staged: Staged) -> None:
    """ValueError naming the first staged file missing from the folder."""
    for name in staged.files:
        if not (staged.path / name).is_file():
            raise ValueError(
                f"staged file {staged.path / name} is missing; stage the dataset again"
            )


def _commit(
    api: Any,
    staged: Staged,
    repo_id: str,
    branch: str,
    private: bool,
    message: str,
    repo_type: str,
) -> PublishResult:
    """Create the repo (private as asked) and branch if needed, then commit adds + deletes."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
    if branch != DEFAULT_BRANCH:
        api.create_branch(repo_id, branch=branch, repo_type=repo_type, exist_ok=True)
    remote = _read_remote(api, repo_id, branch, repo_type)
    if remote is None:
        raise RuntimeError(f"{repo_type} repo {repo_id!r} is not readable right after creating it")
    plan = plan_operations(staged, remote.files)
    operations = [
        CommitOperationAdd(
            path_in_repo=op["path_in_repo"], path_or_fileobj=str(staged.path / op["path_in_repo"])
        )
        if op["operation"] == "add"
        else CommitOperationDelete(path_in_repo=op["path_in_repo"], is_folder=False)
        for op in plan
    ]
    info = api.create_commit(
        repo_id,
        operations,
        commit_message=message,
        repo_type=repo_type,
        revision=branch,
        parent_commit=remote.head,
    )
    warning = visibility_warning(repo_id, private, remote.private, repo_type)
    deleted = sum(op["operation"] == "delete" for op in plan)
    logger.info(
        "published %s@%s in commit %s: %d adds, %d deletes",
        repo_id,
        branch,
        info.oid,
        len(plan) - deleted,
        deleted,
    )
    return PublishResult(
        repo_id,
        False,
        tuple(plan),
        str(info.commit_url),
        str(info.oid),
        revision=branch,
        private=private,
        repo_private=remote.private,
        remote_listed=True,
        warnings=(warning,) if warning else (),
    )


def _dry_run(
    api: Any | None,
    staged: Staged,
    repo_id: str | None,
    branch: str,
    private: bool,
    repo_type: str,
) -> PublishResult:
    """Plan without writing; with an `api` (token and repo) the branch is listed, read-only."""
    listed = api is not None and repo_id
    remote = _read_remote(api, repo_id, branch, repo_type) if listed else None
    plan = plan_operations(staged, remote.files if remote else ())
    warning = (
        visibility_warning(repo_id, private, remote.private, repo_type)
        if remote and repo_id
        else None
    )
    logger.info("dry run: %d operations planned for %s@%s", len(plan), repo_id, branch)
    return PublishResult(
        repo_id or None,
        True,
        tuple(plan),
        revision=branch,
        private=private,
        repo_private=remote.private if remote else None,
        remote_listed=api is not None,
        warnings=(warning,) if warning else (),
    )


def publish(
    staged: Staged,
    repo_id: str | None,
    token: str | None,
    *,
    endpoint: str | None = None,
    revision: str | None = None,
    private: bool = True,
    dry_run: bool = False,
    commit_message: str = DEFAULT_COMMIT_MESSAGE,
    repo_type: str = "dataset",
) -> PublishResult:
    """Make branch `revision` of repo `repo_id` equal the staged folder in ONE commit.

    Args:
        staged: The staged folder (`stage_dataset`).
        repo_id: `owner/name` of the dataset repo; `None`/empty -> dry run.
        token: Hub token with write access; `None`/empty -> dry run.
        endpoint: Hub URL (default: `huggingface_hub`'s, i.e. `HF_ENDPOINT` or huggingface.co).
        revision: Branch to commit to (created from `main` if missing); default `main`.
        private: Create the repo private (an existing repo keeps its visibility; a public one
            where private was asked yields a warning, logged and on the result).
        dry_run: Plan only; with a token and repo the branch is still listed (read-only) so the
            planned deletions are complete.
        commit_message: Commit summary.
        repo_type: "dataset" (the session dataset) or "model" (the detector bundle).

    Returns:
        The `PublishResult` (commit url/oid unless dry run).

    Raises:
        ValueError: a staged file is missing or `commit_message` is empty.
        PublishError: the Hub call failed (message scrubbed of the token).
    """
    if not commit_message.strip():
        raise ValueError(f"commit_message must be non-empty, got {commit_message!r}")
    if repo_type not in REPO_TYPES:
        raise ValueError(f"repo_type must be one of {REPO_TYPES}, got {repo_type!r}")
    _require_files(staged)
    branch = revision or DEFAULT_BRANCH
    failure: str | None = None
    try:
        with redacting_logs(token):
            api = _api(endpoint, token) if token and repo_id else None
            if dry_run or api is None or not repo_id:
                result = _dry_run(api, staged, repo_id, branch, private, repo_type)
            else:
                result = _commit(api, staged, repo_id, branch, private, commit_message, repo_type)
    except Exception as exc:  # re-raised below as PublishError, never swallowed
        failure = redact(f"{type(exc).__name__}: {exc}", token)
    if failure is not None:
        # Raised outside the except block so the original exception (which may quote the
        # token, e.g. an echoed header) is neither the cause nor the context.
        raise PublishError(
            f"publishing {staged.path} to {repo_type} {repo_id!r} (revision {branch!r}) failed: "
            f"{failure}. Check the repo id, the endpoint and that the token has write access."
        )
    for warning in result.warnings:
        logger.warning(warning)
    url, oid = (None, None) if result.dry_run else (result.commit_url, result.commit_oid)
    scrubbed = (redact(url, token), redact(str(oid), token)) if url else (None, None)
    return dataclasses.replace(result, commit_url=scrubbed[0], commit_oid=scrubbed[1])
