"""``repogym env serve``: the dataset's tasks as an OpenEnv environment server.

Built on OpenEnv's own server (``openenv.core.env_server``): HTTP ``/reset``, ``/step``,
``/state``, ``/health``, ``/metadata``, ``/schema``, the ``/ws`` WebSocket route whose
sessions hold one episode each (concurrent sessions up to the pool's size), and ``/mcp``.
Episodes are :class:`~repogym.envs.environment.RepoEnvironment`; their sandboxes come from
one :class:`~repogym.sandboxes.pool.SandboxPool` whose containers carry a namespace of this
server's own, and a reaper (:mod:`repogym.sandboxes.reaper`) removes them when the server
exits, however it exits. Every ended episode's reward is journalled first
(:mod:`repogym.envs.journal`).
"""

from __future__ import annotations

import secrets
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

from repogym.config import Settings
from repogym.envs.environment import EnvLimits, EnvService, RepoEnvironment
from repogym.envs.journal import Journal
from repogym.envs.models import RepoAction, RepoObservation, RepoState
from repogym.errors import InputError
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Status


def load_tasks(dataset: Path, snapshot: str | None = None) -> list[TaskRow]:
    """The accepted tasks of a dataset folder, or of one of its snapshots.

    Raises:
        InputError: no dataset there, or no such snapshot.
        DatasetError: the dataset is unreadable.
    """
    from repogym.datasets.snapshots import read_snapshot_rows
    from repogym.datasets.store import DatasetStore

    if not dataset.is_dir():
        raise InputError(f"no dataset at {dataset}")
    rows = (read_snapshot_rows(dataset, snapshot) if snapshot
            else DatasetStore(dataset).rows("tasks"))
    return [r for r in rows if r.status is Status.accept]


@dataclass
class Server:
    """A running server's parts (for tests and the command)."""

    app: Any
    service: EnvService
    namespace: str


def build_server(tasks: list[TaskRow], journal_path: Path, *, sessions: int = 8,
                 limits: EnvLimits | None = None, settings: Settings | None = None,
                 idle_seconds: float = 300.0, namespace: str | None = None) -> Server:
    """The FastAPI app serving ``tasks`` with a pool of ``sessions`` sandboxes.

    The pool's containers are labelled with ``namespace`` (a fresh one by default); the
    reaper starts with the app and removes them when this process ends.
    """
    from openenv.core.env_server.http_server import create_fastapi_app
    from openenv.core.env_server.types import ConcurrencyConfig

    from repogym.sandboxes import get_provider
    from repogym.sandboxes.pool import SandboxPool
    from repogym.sandboxes.reaper import start_reaper

    settings = settings or Settings()
    if settings.provider != "docker":
        raise InputError("live environments need the docker provider (the local one is no "
                         "isolation boundary)")
    namespace = namespace or f"env-serve-{secrets.token_hex(4)}"
    provider = get_provider("docker", settings, namespace=namespace)
    pool = SandboxPool(provider, max_size=sessions, idle_seconds=idle_seconds)
    service = EnvService(tasks, pool, Journal(journal_path), limits=limits, settings=settings)
    # a session idle past its episode's time is closed by OpenEnv's reaper: its sandbox
    # goes back to the pool instead of waiting for a client that is gone
    concurrency = ConcurrencyConfig(max_concurrent_envs=sessions,
                                    session_timeout=service.limits.episode_seconds + 60)
    app = create_fastapi_app(lambda: RepoEnvironment(service), RepoAction, RepoObservation,
                             concurrency_config=concurrency, env_name="repogym",
                             state_cls=RepoState)
    stop = threading.Event()

    def evict() -> None:
        while not stop.wait(min(idle_seconds, 30.0)):
            pool.evict_idle()

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        reaper = start_reaper("docker", namespace)
        threading.Thread(target=evict, name="pool-evict", daemon=True).start()
        try:
            yield
        finally:
            stop.set()
            pool.close()
            provider.cleanup()
            if reaper.stdin is not None:
                reaper.stdin.close()

    app.router.lifespan_context = _chained(app.router.lifespan_context, lifespan)

    @app.get("/pool", tags=["Health"])
    def pool_stats() -> dict[str, Any]:
        """The sandbox pool's counts."""
        return pool.stats().model_dump()

    return Server(app=app, service=service, namespace=namespace)


def _chained(first: Any, second: Any) -> Any:
    @asynccontextmanager
    async def both(app: Any) -> AsyncIterator[None]:
        async with first(app), second(app):
            yield
    return both


def serve(dataset: Path, *, snapshot: str | None = None, host: str = "127.0.0.1",
          port: int = 8000, sessions: int = 8, journal: Path | None = None,
          limits: EnvLimits | None = None, settings: Settings | None = None,
          namespace: str | None = None) -> None:
    """Serve the dataset's accepted tasks until interrupted (sandboxes labelled with
    ``namespace``, a fresh one by default)."""
    import uvicorn

    tasks = load_tasks(dataset, snapshot)
    server = build_server(tasks, journal or dataset / "episodes" / "episodes.jsonl",
                          sessions=sessions, limits=limits, settings=settings,
                          namespace=namespace)
    uvicorn.run(server.app, host=host, port=port, log_level="info", ws="websockets")


__all__ = ["Server", "build_server", "load_tasks", "serve"]
