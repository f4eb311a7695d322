"""A tiny local stand-in for the Hugging Face Hub API: repos with visibility, branches and trees.

Serves on 127.0.0.1 from a daemon thread; nothing leaves the machine. Endpoints, as called by
`huggingface_hub` 2.4 (`hf_api.py`, `_commit_api.py`); errors carry the `X-Error-Code` header
that `hf_raise_for_status` turns into `RepositoryNotFoundError` / `RevisionNotFoundError`:

- `POST /api/repos/create` (`visibility` private|public, default public) -> `{"url": ...}`; the
  repo starts with `.gitattributes` on `main`, like the Hub; 409 if it exists.
- `GET /api/{type}s/{owner}/{name}[/revision/{rev}]` -> `{"id", "private", "sha"}`; a private repo
  is a 404 `RepoNotFound` for a request without `Authorization`, as on the Hub.
- `GET /api/{type}s/{owner}/{name}/tree/{rev}` (recursive) -> files and folders at `rev`.
- `PUT /api/{type}s/{owner}/{name}/settings` (`visibility`) -> `{}`.
- `POST /api/validate-yaml` (README.md in a commit) -> `{"errors": [], "warnings": []}`
- `POST /api/{type}s/{owner}/{name}/branch/{branch}` -> `{}` (from `startingPoint` or `main`;
  409 if it exists)
- `POST /api/{type}s/{owner}/{name}/preupload/{rev}` -> every file `regular` (no LFS/Xet)
- `POST /api/{type}s/{owner}/{name}/commit/{rev}` (NDJSON: header line, then `file` lines with
  base64 content and `deletedFile` / `deletedFolder` lines) -> `{"commitUrl", "commitOid",
  "pullRequestUrl"}`; 412 when the header's `parentCommit` is not the branch head.

`fail_on` (a path substring) makes matching requests answer 500 with the request's
`Authorization` header echoed in the body and in `X-Error-Message`, like a careless server would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_CHUNKS = 10_000
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"

Reply = tuple[int, Any, dict[str, str]]


@dataclass
class Commit:
    """One commit the fake Hub accepted (through the commit endpoint)."""

    repo: str
    revision: str
    summary: str
    files: dict[str, bytes]  # added or replaced
    oid: str
    deleted: tuple[str, ...] = ()
    parent: str | None = None


@dataclass
class Repo:
    """A repo: visibility, branch heads and the file tree of every commit."""

    private: bool
    branches: dict[str, str]
    trees: dict[str, dict[str, bytes]]

    def tree(self, revision: str) -> dict[str, bytes] | None:
        """Files at a branch name or commit id (None if neither)."""
        return self.trees.get(self.branches.get(revision, revision))


@dataclass
class HubState:
    """What the fake Hub saw and holds (read by the tests; guarded by `lock`)."""

    fail_on: str | None = None
    repos: dict[str, Repo] = field(default_factory=dict)
    commits: list[Commit] = field(default_factory=list)
    requests: list[tuple[str, str, dict[str, str]]] = field(
        default_factory=list
    )  # lower-case header names
    lock: threading.Lock = field(default_factory=threading.Lock)

    def files(self, repo: str, revision: str = "main") -> dict[str, bytes]:
        """The files of `repo` at `revision` (KeyError if either is missing)."""
        with self.lock:
            tree = self.repos[repo].tree(revision)
            if tree is None:
                raise KeyError(f"{repo} has no revision {revision!r}")
            return dict(tree)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """Request body by Content-Length or (bounded) chunked transfer encoding."""
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        parts = []
        for _ in range(MAX_CHUNKS):
            size = int(handler.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                handler.rfile.readline()
                break
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
        return b"".join(parts)
    length = int(handler.headers.get("Content-Length") or 0)
    if length > MAX_BODY_BYTES:
        raise ValueError(f"request body of {length} bytes is over the fake Hub's limit")
    return handler.rfile.read(length)


def _not_found(code: str, what: str) -> Reply:
    return 404, {"error": f"{what} not found"}, {"X-Error-Code": code}


class _Server(ThreadingHTTPServer):
    """The HTTP server, carrying the shared state and its own base URL."""

    daemon_threads = True

    def __init__(self, state: HubState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"

    # Every method below runs with `state.lock` held.

    def create(self, payload: dict[str, Any]) -> Reply:
        repo = f"{payload.get('organization')}/{payload['name']}"
        url = f"{self.base_url}/{payload.get('type', 'model')}s/{repo}"
        if repo in self.state.repos:
            return 409, {"error": "You already created this repo", "url": url}, {}
        oid = hashlib.sha1(f"init {repo}".encode()).hexdigest()
        private = payload.get("visibility", "private" if payload.get("private") else "public")
        self.state.repos[repo] = Repo(
            private == "private", {"main": oid}, {oid: {".gitattributes": GITATTRIBUTES}}
        )
        return 200, {"url": url}, {}

    def info(self, repo: Repo, name: str, revision: str) -> Reply:
        if repo.tree(revision) is None:
            return _not_found("RevisionNotFound", f"revision {revision}")
        sha = repo.branches.get(revision, revision)
        return 200, {"id": name, "private": repo.private, "sha": sha}, {}

    def listing(self, repo: Repo, revision: str) -> Reply:
        tree = repo.tree(revision)
        if tree is None:
            return _not_found("RevisionNotFound", f"revision {revision}")
        folders = {"/".join(p.split("/")[:i]) for p in tree for i in range(1, p.count("/") + 1)}
        entries = [{"type": "directory", "path": f, "oid": "0" * 40, "size": 0} for f in folders]
        entries += [
            {"type": "file", "path": p, "oid": hashlib.sha1(c).hexdigest(), "size": len(c)}
            for p, c in tree.items()
        ]
        return 200, sorted(entries, key=lambda e: e["path"]), {}

    def branch(self, repo: Repo, branch: str, body: bytes) -> Reply:
        if branch in repo.branches:
            return 409, {"error": f"branch {branch} already exists"}, {}
        start = (json.loads(body) if body else {}).get("startingPoint") or "main"
        repo.branches[branch] = repo.branches.get(start, start)
        return 200, {}, {}

    def commit(self, repo: Repo, name: str, kind: str, revision: str, body: bytes) -> Reply:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        head = repo.branches.get(revision)
        if head is None:
            return _not_found("RevisionNotFound", f"revision {revision}")
        if header.get("parentCommit") not in (None, head):
            return 412, {"error": "A commit has happened since. Please refresh and try again."}, {}
        added = {
            v["path"]: base64.b64decode(v["content"])
            for v in (line["value"] for line in lines if line["key"] == "file")
        }
        deleted = [line["value"]["path"] for line in lines if line["key"].startswith("deleted")]
        tree = {
            p: c
            for p, c in repo.trees[head].items()
            if not any(p == d or p.startswith(d.rstrip("/") + "/") for d in deleted)
        }
        tree.update(added)
        oid = hashlib.sha1(head.encode() + body).hexdigest()
        repo.trees[oid], repo.branches[revision] = tree, oid
        self.state.commits.append(
            Commit(name, revision, header["summary"], added, oid, tuple(deleted), head)
        )
        url = f"{self.base_url}/{kind}/{name}/commit/{oid}"
        return 200, {"commitUrl": url, "commitOid": oid, "pullRequestUrl": None}, {}


def _repo_request(server: _Server, method: str, path: str, body: bytes, authed: bool) -> Reply:
    """Requests under `/api/<type>s/<owner>/<name>`, dispatched on method and action."""
    parts = path.strip("/").split("/")
    kind, name, rest = parts[1], f"{parts[2]}/{parts[3]}", parts[4:]
    repo = server.state.repos.get(name)
    if repo is None or (repo.private and not authed):
        return _not_found("RepoNotFound", f"repository {name}")
    action = rest[0] if rest else ""
    revision = unquote(rest[1]) if len(rest) >= 2 else "main"
    if method == "GET" and not rest:
        return server.info(repo, name, "main")
    if method == "GET" and action == "revision":
        return server.info(repo, name, revision)
    if method == "GET" and action == "tree":
        return server.listing(repo, revision)
    if method == "PUT" and action == "settings":
        visibility = json.loads(body).get("visibility")
        repo.private = repo.private if visibility is None else visibility == "private"
        return 200, {}, {}
    if method == "POST" and action == "preupload":
        files = json.loads(body)["files"]
        modes = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
        return 200, {"files": modes}, {}
    if method == "POST" and action == "commit":
        return server.commit(repo, name, kind, revision, body)
    if method == "POST" and action == "branch":
        return server.branch(repo, revision, body)
    return 404, {"error": f"fake hub has no {method} {path}"}, {}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet (the default writes every request to stderr)."""

    def _reply(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method: str) -> None:
        state = self.server.state
        body = _read_body(self)
        path = self.path.split("?", 1)[0]
        with state.lock:
            state.requests.append((method, path, {k.lower(): v for k, v in self.headers.items()}))
        if state.fail_on and state.fail_on in path:
            echoed = f"internal error; you sent Authorization: {self.headers['Authorization']}"
            self._reply(500, {"error": echoed}, {"X-Error-Message": echoed})
            return
        with state.lock:
            if method == "POST" and path == "/api/repos/create":
                reply = self.server.create(json.loads(body))
            elif method == "POST" and path == "/api/validate-yaml":
                reply = (200, {"errors": [], "warnings": []}, {})
            elif path.startswith("/api/") and len(path.strip("/").split("/")) >= 4:
                authed = bool(self.headers.get("Authorization"))
                reply = _repo_request(self.server, method, path, body, authed)
            else:
                reply = (404, {"error": f"fake hub has no {method} {path}"}, {})
        self._reply(*reply)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")


class FakeHub:
    """The server plus its state; `start()` then `stop()` (the fixture's finalizer)."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.state = HubState(fail_on=fail_on)
        self._server = _Server(self.state)
        self.url = self._server.base_url
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FakeHub:
        """Serve in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the socket and join the thread (bounded)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
