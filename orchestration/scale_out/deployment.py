"""A throwaway scale-out deployment of PHANTOM on one machine, started and stopped from Python.

Redis (Celery broker and result backend) and PostgreSQL (Dagster run/event/schedule storage,
configured by `orchestration/scale_out/dagster.yaml`) on free localhost ports in temp dirs, and
`dagster-celery` workers with one task slot each, all sharing one `PHANTOM_DATA_DIR`.
`orchestration/scale_out/demo.py` (`make scale-demo`) and `tests/integration/test_scale_out.py`
both start the deployment with `deployment()`; every wait has a timeout and every process is
stopped on exit.

The processes started here get this process's environment plus the deployment's variables
(`child_env`); the code they run still reads settings only in `orchestration.resources`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg


SCALE_OUT_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCALE_OUT_DIR.parents[1]
INSTANCE_TEMPLATE = SCALE_OUT_DIR / "dagster.yaml"
WORKER_CONFIG = SCALE_OUT_DIR / "celery.yaml"
CODE_LOCATION = "orchestration.scale_out.celery"
DEMO_CONFIG = SCALE_OUT_DIR / "demo.toml"  # tiny simulation and training budgets

PG_USER = "dagster"
PG_PASSWORD = "phantom-scale-demo"  # a throwaway server on 127.0.0.1 that lives for one demo
PG_DB = "dagster"
APT_HINT = "install them with `apt-get install redis-server postgresql` (Debian/Ubuntu)"


class MissingBinaryError(FileNotFoundError):
    """A server binary the deployment needs is not installed."""


@dataclasses.dataclass(frozen=True)
class Binaries:
    """Where the Redis and PostgreSQL server programs are."""

    redis_server: Path
    postgres_bin: Path  # the folder holding initdb, pg_ctl, createdb


@dataclasses.dataclass(frozen=True)
class Postgres:
    """A running PostgreSQL server: TCP on 127.0.0.1, a database for Dagster."""

    port: int
    folder: Path

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the Dagster database."""
        return f"postgresql+psycopg2://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{self.port}/{PG_DB}"


@dataclasses.dataclass(frozen=True)
class Worker:
    """One `dagster-celery` worker process group (the CLI, the Celery main and its pool child)."""

    name: str
    process: subprocess.Popen
    log: Path


@dataclasses.dataclass(frozen=True)
class Deployment:
    """A started deployment: servers, workers, DAGSTER_HOME and its processes' environment."""

    root: Path
    postgres: Postgres
    broker_url: str
    workers: tuple[Worker, ...]
    env: Mapping[str, str]

    @property
    def dagster_home(self) -> Path:
        """DAGSTER_HOME of every process of the deployment."""
        return Path(self.env["DAGSTER_HOME"])

    @property
    def data_dir(self) -> Path:
        """PHANTOM_DATA_DIR shared by the workers."""
        return Path(self.env["PHANTOM_DATA_DIR"])


def find_binaries() -> Binaries:
    """The installed `redis-server` and PostgreSQL server programs.

    Raises:
        MissingBinaryError: naming each missing program and how to install it.
    """
    redis = shutil.which("redis-server")
    candidates = [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    on_path = shutil.which("pg_ctl")
    candidates += [Path(on_path).parent] if on_path else []
    postgres = next(
        (d for d in candidates if all((d / n).is_file() for n in ("initdb", "pg_ctl", "createdb"))),
        None,
    )
    missing = [
        name
        for name, found in (
            ("redis-server", redis),
            ("PostgreSQL initdb/pg_ctl/createdb", postgres),
        )
        if not found
    ]
    if missing or redis is None or postgres is None:
        raise MissingBinaryError(
            f"scale-out deployment needs {' and '.join(missing)} (looked on PATH and in "
            f"/usr/lib/postgresql/*/bin); {APT_HINT}"
        )
    return Binaries(Path(redis), postgres)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres_user(command: Sequence[str | Path]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run `command` as the `postgres` OS user."""
    args = [str(c) for c in command]
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def _run(command: Sequence[str], what: str, timeout: float, env: Mapping[str, str] | None = None):
    try:
        subprocess.run(
            command, check=True, capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"{what} failed ({' '.join(command)}):\n{e.stdout}{e.stderr}") from e
    except subprocess.TimeoutExpired as e:
        raise TimeoutError(f"{what} did not finish within {timeout:.0f}s") from e


@contextlib.contextmanager
def postgres_server(bin_dir: Path, timeout: float = 60.0) -> Iterator[Postgres]:
    """A fresh PostgreSQL cluster in its own temp dir, with a database for Dagster.

    `initdb`, `pg_ctl start`, `createdb`; on exit `pg_ctl stop` (fast shutdown; SIGKILL of the
    postmaster if that fails) and the folder is deleted. As root, the folder belongs to the
    `postgres` OS user, which runs the server (PostgreSQL refuses to run as root).
    """
    folder = Path(tempfile.mkdtemp(prefix="phantom-pg-"))
    data, port = folder / "data", free_port()
    try:
        password_file = folder / "password"
        password_file.write_text(PG_PASSWORD + "\n")
        if os.geteuid() == 0:
            for path in (folder, password_file):
                shutil.chown(path, "postgres", "postgres")
        _run(
            _as_postgres_user(
                [
                    bin_dir / "initdb",
                    "-D",
                    data,
                    "-U",
                    PG_USER,
                    "--pwfile",
                    password_file,
                    "--auth=scram-sha-256",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            "initdb",
            timeout,
        )
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        _run(
            _as_postgres_user(
                [
                    bin_dir / "pg_ctl",
                    "-D",
                    data,
                    "-l",
                    folder / "server.log",
                    "-o",
                    options,
                    "-w",
                    "-t",
                    str(int(timeout)),
                    "start",
                ]
            ),
            "pg_ctl start",
            timeout + 10,
        )
        try:
            env = {"PATH": os.defpath, "PGPASSWORD": PG_PASSWORD}
            _run(
                [
                    str(bin_dir / "createdb"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-U",
                    PG_USER,
                    PG_DB,
                ],
                "createdb",
                timeout,
                env=env,
            )
            yield Postgres(port, folder)
        finally:
            _stop_postgres(bin_dir, data)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stop_postgres(bin_dir: Path, data: Path) -> None:
    stop = _as_postgres_user(
        [bin_dir / "pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "20", "stop"]
    )
    if subprocess.run(stop, capture_output=True, timeout=30).returncode == 0:
        return
    pid_file = data / "postmaster.pid"  # pg_ctl could not stop it: kill the postmaster
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)


def _wait(ready, what: str, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode} before it was ready")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} was not ready within {timeout:.0f}s")
        time.sleep(0.2)


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _terminate(process: subprocess.Popen, grace: float, group: bool = False) -> None:
    """SIGTERM `process` (its whole process group when `group`), SIGKILL after `grace` seconds.

    With `group`, members that outlive the leader (a worker's Celery processes, a launcher's
    forked children) are signalled too.
    """

    def alive() -> bool:
        leader_alive = process.poll() is None
        if not group:
            return leader_alive
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return False
        return True

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if not alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig) if group else process.send_signal(sig)
        deadline = time.monotonic() + wait
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)


@contextlib.contextmanager
def redis_server(redis_bin: Path, folder: Path, timeout: float = 30.0) -> Iterator[str]:
    """A foreground `redis-server` without persistence on a free port; yields its URL (db 0)."""
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "redis.log", "wb") as log:
        process = subprocess.Popen(
            [
                str(redis_bin),
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(folder),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            _wait(lambda: _redis_answers(port), "redis-server", timeout, process)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            _terminate(process, grace=10.0)


def deployment_env(
    dagster_home: Path,
    postgres: Postgres,
    broker_url: str,
    data_dir: Path,
    config_file: Path | None,
    profile: str,
) -> dict[str, str]:
    """The variables every process of the deployment shares (instance, broker, PHANTOM settings;
    no `config_file`: the profile's own values, whatever this process's PHANTOM_CONFIG says)."""
    return {
        "DAGSTER_HOME": str(dagster_home),
        "DAGSTER_POSTGRES_HOST": "127.0.0.1",
        "DAGSTER_POSTGRES_PORT": str(postgres.port),
        "DAGSTER_POSTGRES_USER": PG_USER,
        "DAGSTER_POSTGRES_PASSWORD": PG_PASSWORD,
        "DAGSTER_POSTGRES_DB": PG_DB,
        "DAGSTER_CELERY_BROKER_URL": broker_url,
        "DAGSTER_CELERY_BACKEND_URL": broker_url.rsplit("/", 1)[0] + "/1",
        "PHANTOM_PROFILE": profile,
        "PHANTOM_DATA_DIR": str(data_dir),
        "PHANTOM_CONFIG": "" if config_file is None else str(config_file),
    }


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """This process's environment (PATH, locale, ...) plus the deployment's variables.

    This interpreter's scripts come first on PATH (`dagster-celery worker start` execs `celery`).
    """
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])
    return {**os.environ, **env, "PATH": path}


def venv_script(name: str) -> str:
    """A console script of this interpreter's environment (works without an activated venv)."""
    return str(Path(sys.executable).parent / name)


def open_instance(dagster_home: Path, postgres: Postgres) -> dg.DagsterInstance:
    """The deployment's instance, opened from this process; creates the schema on first use.

    The template's storage is replaced by a literal URL, so reading needs none of the
    deployment's variables in this process.
    """
    from phantom_assets.assets.dagster_internals import instance_from_dir

    overrides = {"storage": {"postgres": {"postgres_url": postgres.url}}}
    return instance_from_dir(str(dagster_home), overrides)


def _worker_ready(log: Path, name: str) -> bool:
    return (
        log.exists()
        and f"{name}@" in log.read_text(errors="replace")
        and " ready." in (log.read_text(errors="replace"))
    )


@contextlib.contextmanager
def celery_workers(
    env: Mapping[str, str], folder: Path, count: int = 2, timeout: float = 120.0
) -> Iterator[tuple[Worker, ...]]:
    """`count` `dagster-celery worker start` processes with one task slot each (`-c 1`).

    Each runs in its own process group; returns once every worker logs that it is ready. On exit
    each group gets SIGTERM (Celery's warm shutdown), then SIGKILL.
    """
    workers: list[Worker] = []
    logs: list[IO[bytes]] = []
    try:
        for index in range(1, count + 1):
            name, log = f"phantom-{index}", folder / f"worker-{index}.log"
            logs.append(open(log, "wb"))  # closed in `finally`
            process = subprocess.Popen(
                [
                    venv_script("dagster-celery"),
                    "worker",
                    "start",
                    "-A",
                    "dagster_celery.app",
                    "-y",
                    str(WORKER_CONFIG),
                    "-n",
                    name,
                    "--loglevel",
                    "INFO",
                    "--",
                    "-c",
                    "1",
                ],
                env=child_env(env),
                cwd=REPO_ROOT,
                stdout=logs[-1],
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            workers.append(Worker(name, process, log))
        for worker in workers:
            _wait(
                lambda w=worker: _worker_ready(w.log, w.name),
                f"celery worker {worker.name} (log {worker.log})",
                timeout,
                worker.process,
            )
        yield tuple(workers)
    finally:
        for worker in workers:
            _terminate(worker.process, grace=15.0, group=True)
        for log in logs:
            log.close()


@contextlib.contextmanager
def deployment(
    root: Path,
    binaries: Binaries,
    workers: int = 2,
    config_file: Path | None = DEMO_CONFIG,
    profile: str = "demo",
) -> Iterator[Deployment]:
    """Postgres, Redis, DAGSTER_HOME and `workers` Celery workers sharing `root/data`, with the
    settings of `profile` and `config_file`.

    DAGSTER_HOME holds `orchestration/scale_out/dagster.yaml`; the schema is created once,
    before any worker connects. Everything is stopped on exit, also when starting fails half-way.
    """
    root.mkdir(parents=True, exist_ok=True)
    home, data_dir = root / "dagster_home", root / "data"
    home.mkdir(exist_ok=True)
    data_dir.mkdir(exist_ok=True)
    shutil.copyfile(INSTANCE_TEMPLATE, home / "dagster.yaml")
    with contextlib.ExitStack() as stack:
        postgres = stack.enter_context(postgres_server(binaries.postgres_bin))
        broker = stack.enter_context(redis_server(binaries.redis_server, root / "redis"))
        with open_instance(home, postgres):
            pass  # creates the run/event/schedule tables once
        env = deployment_env(home, postgres, broker, data_dir, config_file, profile)
        started = stack.enter_context(celery_workers(env, root, count=workers))
        yield Deployment(root, postgres, broker, started, env)


def finish(launched: Sequence[tuple[subprocess.Popen, Path]], what: str, timeout: float) -> None:
    """Wait for every process; raise naming the logs of those that failed.

    Each process leads its own process group: at the deadline the groups still running are
    killed (a launcher's forked children too).
    """
    deadline = time.monotonic() + timeout
    try:
        for process, _ in launched:
            process.wait(max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired as e:
        raise TimeoutError(
            f"{what} did not finish within {timeout:.0f}s; logs: "
            f"{[str(log) for _, log in launched]}"
        ) from e
    finally:
        for process, _ in launched:
            _terminate(process, grace=5.0, group=True)
    failed = [(p.returncode, log) for p, log in launched if p.returncode != 0]
    if failed:
        tails = "\n".join(f"--- {log} (exit {rc}):\n{_tail(log)}" for rc, log in failed)
        raise RuntimeError(f"{what} failed:\n{tails}")


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
