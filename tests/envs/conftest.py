"""Fixtures of the live-environment tests: tasks of two languages in one dataset, OpenEnv's
client in a virtualenv of its own, and ``repogym env serve`` in a process of its own."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from repogym.datasets.store import DatasetStore
from repogym.schemas.arrow import TaskRow
from tests.exports.conftest import JsTasks, RealTasks, js_tasks, real_tasks  # noqa: F401

OPENENV = "openenv==0.10.0"
CLIENT_VENVS = Path.home() / ".cache" / "repogym-tests" / "openenv-client"
POLICY = Path(__file__).with_name("client_policy.py")


@pytest.fixture(scope="session")
def openenv_python() -> Path:
    """The Python of a virtualenv holding OpenEnv's package (its client) and nothing of
    repogym's; made once per machine (under a lock: xdist workers share it)."""
    root = CLIENT_VENVS / OPENENV.replace("==", "-")
    python = root / "bin" / "python"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".complete").exists():
            shutil.rmtree(root, ignore_errors=True)
            venv.create(root, with_pip=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", OPENENV], check=True)
            (root / ".complete").write_text(OPENENV)
    found = subprocess.run([str(python), "-c", "import repogym"], capture_output=True)
    assert found.returncode != 0, "the client's virtualenv must not see repogym"
    return python


@dataclass
class EnvTasks:
    """Accepted tasks of two languages, in one dataset folder."""

    root: Path
    python: RealTasks
    js: JsTasks

    @property
    def rows(self) -> list[TaskRow]:
        return [*self.python.rows, *self.js.rows]


@pytest.fixture(scope="session")
def env_tasks(tmp_path_factory, real_tasks, js_tasks) -> EnvTasks:  # noqa: F811
    root = tmp_path_factory.mktemp("env-dataset")
    for store in (real_tasks.store, js_tasks.store):
        for part in store.part_files("tasks"):
            dest = root / part.relative_to(store.root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(part, dest)
    DatasetStore(root).refresh_manifest()
    return EnvTasks(root, real_tasks, js_tasks)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A ``repogym env serve`` process."""

    url: str
    namespace: str
    journal: Path
    process: subprocess.Popen[bytes]
    log: Path

    def containers(self, docker_client: Any) -> list[Any]:
        return list(docker_client.containers.list(
            all=True, filters={"label": f"repogym.namespace={self.namespace}"}))

    def journal_lines(self) -> list[dict[str, Any]]:
        if not self.journal.exists():
            return []
        return [json.loads(line) for line in self.journal.read_text().splitlines() if line]


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:g} s")
        time.sleep(0.2)


class Servers:
    """Starts ``repogym env serve`` processes on a dataset; :meth:`stop_all` stops them and
    checks that none left a container behind."""

    def __init__(self, root: Path, workdir: Path, docker_client: Any) -> None:
        self.root, self.workdir, self.docker = root, workdir, docker_client
        self.started: list[Served] = []

    def start(self, *extra: str, sessions: int = 8) -> Served:
        import httpx

        n = len(self.started)
        port, name = free_port(), f"rg-test-{os.getpid()}-{n}-{time.time_ns() % 10**6}"
        journal = self.workdir / f"episodes-{n}.jsonl"
        log = self.workdir / f"server-{n}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "repogym", "env", "serve", "--dataset", str(self.root),
             "--port", str(port), "--sessions", str(sessions), "--namespace", name,
             "--journal", str(journal), *extra],
            stdout=log.open("wb"), stderr=subprocess.STDOUT)
        served = Served(f"http://127.0.0.1:{port}", name, journal, process, log)
        self.started.append(served)

        def healthy() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {log.read_text()[-3000:]}")
            try:
                return httpx.get(f"{served.url}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(healthy, 60, "the server answering /health")
        return served

    def stop_all(self) -> None:
        for served in self.started:
            if served.process.poll() is None:
                served.process.send_signal(signal.SIGINT)
                try:
                    served.process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    served.process.kill()
            wait_for(lambda s=served: not s.containers(self.docker), 60,
                     f"no container of {served.namespace} left")


@pytest.fixture
def serve(env_tasks: EnvTasks, tmp_path: Path, docker_client: Any
          ) -> Iterator[Callable[..., Served]]:
    """Start ``repogym env serve`` on the tasks (``serve(sessions=8, ...)``); each server
    is stopped after the test, and must leave no container behind."""
    servers = Servers(env_tasks.root, tmp_path, docker_client)
    yield servers.start
    servers.stop_all()


@pytest.fixture(scope="module")
def served(env_tasks: EnvTasks, tmp_path_factory, docker_client: Any) -> Iterator[Served]:
    """One server (8 sessions) for a module's tests; stopped after them, leaving nothing."""
    servers = Servers(env_tasks.root, tmp_path_factory.mktemp("served"), docker_client)
    yield servers.start(sessions=8)
    servers.stop_all()


def run_policies(python: Path, served: Served, plans: list[dict[str, Any]], tmp_path: Path,
                 timeout: float = 900) -> list[dict[str, Any]]:
    """Run ``plans`` (see client_policy.py) through OpenEnv's client; one result each."""
    plan = tmp_path / f"plan-{time.time_ns()}.json"
    plan.write_text(json.dumps(plans))
    done = subprocess.run([str(python), str(POLICY), served.url, str(plan)],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (done.stderr[-4000:], served.log.read_text()[-4000:])
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
