"""A tiny local stand-in for the Hugging Face Hub API (just enough for create_repo + create_commit).

Serves on 127.0.0.1 from a daemon thread; nothing leaves the machine. Endpoints, as called by
`huggingface_hub` 2.4 (`hf_api.py`, `_commit_api.py`):

- `POST /api/repos/create` -> `{"url": ...}`
- `POST /api/validate-yaml` (README.md in a commit) -> `{"errors": [], "warnings": []}`
- `POST /api/{type}s/{owner}/{name}/branch/{branch}` -> `{}`
- `POST /api/{type}s/{owner}/{name}/preupload/{rev}` -> every file `regular` (no LFS/Xet)
- `POST /api/{type}s/{owner}/{name}/commit/{rev}` (NDJSON: header line + one line per file,
  base64 content) -> `{"commitUrl", "commitOid", "pullRequestUrl"}`

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

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_CHUNKS = 10_000


@dataclass
class Commit:
    """One commit the fake Hub accepted."""

    repo: str
    revision: str
    summary: str
    files: dict[str, bytes]
    oid: str


@dataclass
class HubState:
    """What the fake Hub saw (read by the tests; guarded by `lock`)."""

    fail_on: str | None = None
    repos: list[str] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    requests: list[tuple[str, str, dict[str, str]]] = field(
        default_factory=list
    )  # lower-case header names
    lock: threading.Lock = field(default_factory=threading.Lock)


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


class _Server(ThreadingHTTPServer):
    """The HTTP server, carrying the shared state and its own base URL."""

    daemon_threads = True

    def __init__(self, state: HubState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"


def _commit(server: _Server, kind: str, repo: str, revision: str, body: bytes) -> dict[str, Any]:
    """Record the NDJSON commit `body`; return the Hub's commit answer."""
    lines = [json.loads(line) for line in body.splitlines() if line.strip()]
    header = next(line["value"] for line in lines if line["key"] == "header")
    files = {
        line["value"]["path"]: base64.b64decode(line["value"]["content"])
        for line in lines
        if line["key"] == "file"
    }
    oid = hashlib.sha1(body).hexdigest()
    with server.state.lock:
        server.state.commits.append(Commit(repo, revision, header["summary"], files, oid))
    return {
        "commitUrl": f"{server.base_url}/{kind}/{repo}/commit/{oid}",
        "commitOid": oid,
        "pullRequestUrl": None,
    }


def _repo_action(server: _Server, parts: list[str], body: bytes) -> tuple[int, Any]:
    """`/api/<type>s/<owner>/<name>/<action>/<revision>` requests."""
    kind, repo, action, revision = parts[1], f"{parts[2]}/{parts[3]}", parts[4], parts[5]
    if action == "preupload":
        files = json.loads(body)["files"]
        modes = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
        return 200, {"files": modes}
    if action == "commit":
        return 200, _commit(server, kind, repo, revision, body)
    if action == "branch":
        return 200, {}
    return 404, {"error": f"fake hub has no action {action!r}"}


def _route(server: _Server, path: str, body: bytes) -> tuple[int, Any]:
    """Status and JSON answer for a POST to `path`."""
    if path == "/api/repos/create":
        payload = json.loads(body)
        repo = f"{payload.get('organization')}/{payload['name']}"
        with server.state.lock:
            server.state.repos.append(repo)
        return 200, {"url": f"{server.base_url}/{payload.get('type', 'model')}s/{repo}"}
    if path == "/api/validate-yaml":
        return 200, {"errors": [], "warnings": []}
    parts = path.strip("/").split("/")
    if len(parts) == 6 and parts[0] == "api":
        return _repo_action(server, parts, body)
    return 404, {"error": f"fake hub has no POST {path}"}


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

    def do_GET(self) -> None:
        self._reply(404, {"error": f"fake hub has no GET {self.path}"})

    def do_POST(self) -> None:
        state = self.server.state
        body = _read_body(self)
        path = self.path.split("?", 1)[0]
        with state.lock:
            state.requests.append(("POST", path, {k.lower(): v for k, v in self.headers.items()}))
        if state.fail_on and state.fail_on in path:
            echoed = f"internal error; you sent Authorization: {self.headers['Authorization']}"
            self._reply(500, {"error": echoed}, {"X-Error-Message": echoed})
            return
        self._reply(*_route(self.server, path, body))


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
