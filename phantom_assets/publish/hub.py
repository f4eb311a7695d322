"""Publish a staged dataset folder to the Hugging Face Hub in one atomic commit (DESIGN §7).

Without a token or a repo id, `publish` is a dry run: it returns the planned operations and sends
nothing. The token never leaves this module except in the `Authorization` header that
`huggingface_hub` builds: it is not logged, not stored on the result, and scrubbed from the message
of any error (which is raised without chaining, so the original exception cannot leak it).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from phantom_assets.publish.redact import redact, redacting_logs
from phantom_assets.publish.stage import StagedDataset

__all__ = ["DEFAULT_COMMIT_MESSAGE", "PublishError", "PublishResult", "plan_operations", "publish"]

logger = logging.getLogger(__name__)

DEFAULT_COMMIT_MESSAGE: Final[str] = "Publish PHANTOM session dataset"
_CHUNK: Final[int] = 1 << 20
_DEFAULT_BRANCH: Final[str] = "main"


class PublishError(RuntimeError):
    """The Hub refused or failed the publish; the message never contains the token."""


@dataclass(frozen=True)
class PublishResult:
    """What a publish (or dry run) did.

    Attributes:
        repo_id: Target dataset repo (`None` in a dry run without one).
        dry_run: True when nothing was sent.
        operations: The planned file additions (`path_in_repo`, `size`, `sha256`).
        commit_url: URL of the commit (None in a dry run).
        commit_oid: Commit id (None in a dry run).
        revision: Branch committed to.
    """

    repo_id: str | None
    dry_run: bool
    operations: tuple[dict[str, Any], ...]
    commit_url: str | None = None
    commit_oid: str | None = None
    revision: str = _DEFAULT_BRANCH


def _sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def plan_operations(staged: StagedDataset) -> list[dict[str, Any]]:
    """One planned addition per staged file, sorted by path.

    Args:
        staged: The staged folder.

    Returns:
        Dicts `{path_in_repo, size, sha256}`.

    Raises:
        ValueError: a listed file is missing from the folder.
    """
    plan = []
    for name in sorted(staged.files):
        path = staged.path / name
        if not path.is_file():
            raise ValueError(f"staged file {path} is missing; stage the dataset again")
        plan.append({"path_in_repo": name, "size": path.stat().st_size, "sha256": _sha256(path)})
    return plan


def _commit(
    staged: StagedDataset,
    plan: list[dict[str, Any]],
    repo_id: str,
    token: str,
    endpoint: str | None,
    revision: str,
    commit_message: str,
) -> tuple[str, str]:
    """Create the repo (and branch) if needed, then commit every planned file at once."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    if revision != _DEFAULT_BRANCH:
        api.create_branch(repo_id, branch=revision, repo_type="dataset", exist_ok=True)
    operations = [
        CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(staged.path / name))
        for name in (item["path_in_repo"] for item in plan)
    ]
    info = api.create_commit(
        repo_id,
        operations,
        commit_message=commit_message,
        repo_type="dataset",
        revision=revision,
    )
    return str(info.commit_url), str(info.oid)


def publish(
    staged: StagedDataset,
    repo_id: str | None,
    token: str | None,
    *,
    endpoint: str | None = None,
    revision: str | None = None,
    commit_message: str = DEFAULT_COMMIT_MESSAGE,
) -> PublishResult:
    """Upload the staged folder as ONE commit to dataset repo `repo_id`, or plan it (dry run).

    Args:
        staged: The staged folder (`stage_dataset`).
        repo_id: `owner/name` of the dataset repo; `None`/empty -> dry run.
        token: Hub token with write access; `None`/empty -> dry run.
        endpoint: Hub URL (default: `huggingface_hub`'s, i.e. `HF_ENDPOINT` or huggingface.co).
        revision: Branch to commit to (created if missing); default `main`.
        commit_message: Commit summary.

    Returns:
        The `PublishResult` (commit url/oid unless dry run).

    Raises:
        ValueError: a staged file is missing or `commit_message` is empty.
        PublishError: the Hub call failed (message scrubbed of the token).
    """
    if not commit_message.strip():
        raise ValueError(f"commit_message must be non-empty, got {commit_message!r}")
    plan = plan_operations(staged)
    branch = revision or _DEFAULT_BRANCH
    total = sum(item["size"] for item in plan)
    if not token or not repo_id:
        missing = "token" if not token else "repo_id"
        logger.info("dry run (no %s): %d files, %d bytes planned", missing, len(plan), total)
        return PublishResult(repo_id or None, True, tuple(plan), revision=branch)
    failure: str | None = None
    try:
        with redacting_logs(token):
            url, oid = _commit(staged, plan, repo_id, token, endpoint, branch, commit_message)
    except Exception as exc:  # re-raised below as PublishError, never swallowed
        failure = redact(f"{type(exc).__name__}: {exc}", token)
    if failure is not None:
        # Raised outside the except block so the original exception (which may quote the
        # token, e.g. an echoed header) is neither the cause nor the context.
        raise PublishError(
            f"publishing {staged.path} to dataset {repo_id!r} (revision {branch!r}) failed: "
            f"{failure}. Check the repo id, the endpoint and that the token has write access."
        )
    logger.info("published %d files (%d bytes) to %s in commit %s", len(plan), total, repo_id, oid)
    return PublishResult(
        repo_id, False, tuple(plan), redact(url, token), redact(oid, token), revision=branch
    )
