"""A real PostgreSQL server for tests: one per test session (per xdist worker), started from
Debian's binaries (``/usr/lib/postgresql/<version>/bin``, installed by ``scripts/setup``), and
a fresh database per test.

* :func:`postgres_server` (session): ``initdb`` into a new temporary folder, ``pg_ctl start``
  on a free port of 127.0.0.1 with durability off (a test's data needs no crash safety);
  stopped (``-m immediate``) and removed at the end of the session.
* :func:`postgres_url` (function): ``CREATE DATABASE rg_<n>`` on that server; the test gets
  its SQLAlchemy URL (``postgresql+psycopg://postgres@127.0.0.1:<port>/rg_<n>``), and the
  database is dropped afterwards, connections still open or not.

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user (through
``runuser``), in a folder under the system's temporary directory (pytest's own is private to
root, so ``postgres`` could not reach one inside it). Missing binaries or driver fail the test
with what to run; they are never a reason to skip.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

PG_ROOT = Path("/usr/lib/postgresql")
PG_USER = "postgres"
INITDB_SECONDS = 60.0
START_SECONDS = 30  # pg_ctl's own wait (-t); the subprocess gets a little more
STOP_SECONDS = 20.0
CONNECT_SECONDS = 10
START_ATTEMPTS = 3  # a free port can be taken by someone else before the server binds it
LOG_TAIL_LINES = 40
SETUP_HINT = "run scripts/setup (it installs Debian's postgresql package and psycopg)"
SERVER_OPTIONS = ("-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                  "-c full_page_writes=off")


def pg_bin_dir(root: Path | None = None) -> Path | None:
    """The newest ``<root>/<version>/bin`` (default :data:`PG_ROOT`) holding ``initdb``,
    ``pg_ctl`` and ``postgres``."""
    found = []
    for initdb in (root or PG_ROOT).glob("*/bin/initdb"):
        bin_dir = initdb.parent
        version = bin_dir.parent.name
        if all(os.access(bin_dir / tool, os.X_OK) for tool in ("initdb", "pg_ctl", "postgres")):
            found.append((tuple(int(p) if p.isdigit() else 0 for p in version.split(".")),
                          bin_dir))
    return max(found)[1] if found else None


def free_port() -> int:
    """A TCP port of 127.0.0.1 nobody listens on (right now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no server log at {path}: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or f"(server log {path} is empty)"


@dataclass
class PostgresServer:
    """A running server: its binaries, folder (data, socket, log) and port."""

    bin_dir: Path
    base: Path  # owned by the server's user; data/, the socket and server.log inside
    port: int = 0
    user: str = PG_USER  # the database superuser (initdb -U)
    _as_postgres: bool = field(default=False, repr=False)  # root: run tools through runuser
    _numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def log(self) -> Path:
        return self.base / "server.log"

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of ``database`` on this server (psycopg 3 driver)."""
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> Any:
        """A psycopg connection (autocommit) to ``database``."""
        psycopg = import_psycopg()
        return psycopg.connect(host="127.0.0.1", port=self.port, user=self.user,
                               dbname=database, autocommit=True,
                               connect_timeout=CONNECT_SECONDS)

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        """A new, empty database for the block (its SQLAlchemy URL), dropped after it even
        while clients are still connected."""
        from psycopg import sql

        name = f"rg_{next(self._numbers)}"
        with self.connect() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield self.url(name)
        finally:
            with self.connect() as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(name)))

    # -- lifecycle ----------------------------------------------------------------------

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        """One of the server's tools, as the server's user; output captured, never raises
        for a non-zero exit (:class:`subprocess.TimeoutExpired` after ``timeout`` seconds)."""
        tool = [str(self.bin_dir / args[0]), *args[1:]]
        cmd = [runuser(), "-u", PG_USER, "--", *tool] if self._as_postgres else tool
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        return subprocess.run(cmd, cwd=self.base, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout)

    def init(self) -> None:
        done = self.run("initdb", "-D", str(self.data), "--auth=trust", "-U", self.user,
                        "-E", "UTF8", "--locale=C", "--no-sync", timeout=INITDB_SECONDS)
        if done.returncode != 0:
            pytest.fail(f"initdb failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}",
                        pytrace=False)

    def start(self) -> None:
        """Start on a free port (trying another when the chosen one was taken meanwhile)."""
        for attempt in range(1, START_ATTEMPTS + 1):
            self.port = free_port()
            options = f"-F -p {self.port} -k {shlex.quote(str(self.base))} {SERVER_OPTIONS}"
            try:
                done = self.run("pg_ctl", "start", "-w", "-t", str(START_SECONDS),
                                "-D", str(self.data), "-l", str(self.log), "-o", options,
                                timeout=START_SECONDS + 15)
            except subprocess.TimeoutExpired:
                self.stop()
                pytest.fail(f"pg_ctl start did not return in {START_SECONDS + 15}s; server "
                            f"log {self.log}:\n{log_tail(self.log)}", pytrace=False)
            if done.returncode == 0:
                return
            tail = log_tail(self.log)
            if attempt < START_ATTEMPTS and "already in use" in tail:
                continue
            pytest.fail(f"PostgreSQL did not start (pg_ctl exit {done.returncode}: "
                        f"{done.stdout.strip()} {done.stderr.strip()}); server log "
                        f"{self.log}:\n{tail}", pytrace=False)

    def stop(self) -> None:
        """Stop at once (no checkpoint: the data is thrown away); kill the postmaster if
        pg_ctl does not manage it in time."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w",
                     "-t", str(int(STOP_SECONDS)), timeout=STOP_SECONDS + 10)
        pid = self._postmaster_pid()
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def _postmaster_pid(self) -> int | None:
        """The pid of this server's postmaster if it still runs (its pid file names it, and
        that process's command line names this data folder), else None."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if str(self.data).encode() in cmdline else None


def runuser() -> str:
    return shutil.which("runuser") or "/usr/sbin/runuser"


def import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        pytest.fail(f"the PostgreSQL tests need psycopg ({exc}): {SETUP_HINT}", pytrace=False)
    return psycopg


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """Start a throwaway server (see the module docstring); stop and remove it after."""
    bin_dir = pg_bin_dir()
    if bin_dir is None:
        pytest.fail(f"no PostgreSQL server binaries in {PG_ROOT}/*/bin (initdb, pg_ctl, "
                    f"postgres): {SETUP_HINT}", pytrace=False)
    import_psycopg()
    as_postgres = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="repogym-pg-"))
    try:
        if as_postgres:
            try:
                account = pwd.getpwnam(PG_USER)
            except KeyError:
                pytest.fail(f"running as root, and there is no {PG_USER!r} user to run "
                            f"PostgreSQL as: {SETUP_HINT}", pytrace=False)
            os.chown(base, account.pw_uid, account.pw_gid)
        server = PostgresServer(bin_dir, base, _as_postgres=as_postgres)
        server.init()
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the session (one per xdist worker that needs one)."""
    with running_postgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The SQLAlchemy URL of a new, empty database, dropped after the test."""
    with postgres_server.database() as url:
        yield url
