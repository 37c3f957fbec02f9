"""Shared fixtures.

Docker tests are marked ``docker``. Without a reachable Docker engine they are skipped on a
developer's machine, but under CI (``CI=true``) a missing engine is an error: nothing is
silently skipped there.

``postgres_server`` and ``postgres_url`` (from :mod:`tests.postgres`): a real PostgreSQL
server for the session, a fresh database per test.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from repogym.config import DEFAULT_BASE_IMAGE
from tests.postgres import postgres_server, postgres_url  # noqa: F401 - fixtures

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")


def _docker_client():
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine"
        if IN_CI:
            raise RuntimeError(f"CI needs a Docker engine: {exc}") from exc
        return None


LOCAL_ENVS_KEEP_DAYS = 14


# tests that are each a unit of work of their own under pytest-xdist (the rest: a file each)
OWN_UNITS = ("tests/test_conformance.py::",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n auto`` in pyproject's ``addopts``; ``-n 0`` runs in one
    process) the work is handed out in units (:func:`pytest_xdist_make_scheduler`), the
    longest first so that none starts last and leaves one worker running alone at the end:
    the :data:`OWN_UNITS` (the conformance suite, the longest tests), then the files that
    hold a ``slow`` test, then the rest, each in collection order."""
    if not hasattr(config, "workerinput"):  # not an xdist worker: nothing is handed out
        return
    slow = {_unit_of(item.nodeid) for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        unit = _unit_of(item.nodeid)
        return 0 if unit.startswith(OWN_UNITS) else 1 if unit in slow else 2

    items.sort(key=rank)  # stable: a file's tests stay together and in order


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand out a test file at a time (so a module's fixtures -- a judged corpus, a built
    project -- are made once, by one worker), each of :data:`OWN_UNITS` alone, in the order
    the workers collected them (:func:`pytest_collection_modifyitems`).

    (``--dist loadgroup`` would do it with ``xdist_group`` marks, but pytest-xdist 3.8 marks
    a group by rewriting ``Item._nodeid``, which pytest 9.2 no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit_of(nodeid)

    config.option.loadscopereorder = False  # keep the order above, not largest-file-first
    return FileScheduling(config, log)


def _unit_of(nodeid: str) -> str:
    return nodeid if nodeid.startswith(OWN_UNITS) else nodeid.split("::", 1)[0]


@pytest.fixture(scope="session", autouse=True)
def shared_local_envs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One folder of local environments (``Settings.local_envs``), kept between sessions as
    the Docker engine keeps env images: they are content-addressed (commit, recipe, base),
    and the tests' repositories commit at one date, so a test whose project was built before
    (by another test, or an earlier session) reuses it instead of installing it again.

    ``REPOGYM_TEST_LOCAL_ENVS`` names the folder (default ``~/.cache/repogym-tests/
    local-envs``; ``fresh``: a new one for this session). Environments built for one test
    run only (a per-run recipe) are removed by a later session, the rest after
    :data:`LOCAL_ENVS_KEEP_DAYS` days."""
    wanted = os.environ.get("REPOGYM_TEST_LOCAL_ENVS", "")
    if wanted == "fresh":
        root = tmp_path_factory.mktemp("local-envs")
    else:
        root = Path(wanted or Path.home() / ".cache" / "repogym-tests" / "local-envs")
        root.mkdir(parents=True, exist_ok=True)
        prune_local_envs(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REPOGYM_LOCAL_ENVS", str(root))
        yield root


def prune_local_envs(root: Path, keep_days: float = LOCAL_ENVS_KEEP_DAYS) -> None:
    """Remove environments built for one test run (recipe ``test-*``) and half-built ones,
    once a few hours old (another session may be using them), and any older than
    ``keep_days``; one being built (its build lock held) stays.

    Housekeeping only, so it never fails a session: under xdist every worker starts a
    session, one of them prunes (the others find ``.prune.lock`` held and go on), and an
    environment that vanishes or cannot be read meanwhile is left alone."""
    import fcntl

    with (root / ".prune.lock").open("a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        now = time.time()
        for env in sorted(root.iterdir()):
            try:
                _prune_env(env, now, keep_days)
            except OSError:
                continue


def _prune_env(env: Path, now: float, keep_days: float) -> None:
    import fcntl
    import json
    import shutil

    from repogym.sandboxes.local import MARKER

    if not env.is_dir():
        return
    marker = env / MARKER
    try:
        built = marker.stat().st_mtime
        one_run = json.loads(marker.read_text()).get("recipe_version", "").startswith("test-")
    except (OSError, ValueError):
        built, one_run = None, True
    age = now - (built if built is not None else env.stat().st_mtime)
    if not (age > keep_days * 86400 or (one_run and age > 3 * 3600)):
        return
    lock = env.with_name(env.name + ".build.lock")
    with lock.open("a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        shutil.rmtree(env, ignore_errors=True)
    lock.unlink(missing_ok=True)


SHARED_REPOS = Path(__file__).resolve().parents[2] / "shared" / "repos"


def open_bundle_env(root: Path, bundle: str, toolchain: type) -> tuple[Any, Any]:
    """(toolchain, an open-able sandbox) of a ``../shared/repos`` bundle cloned into
    ``root`` and built into its Docker environment; the toolchain detected must be a
    ``toolchain``. Use the sandbox as a context manager."""
    from repogym.config import Settings
    from repogym.repos import clone
    from repogym.sandboxes import get_provider
    from repogym.schemas.records import RepoSpec
    from repogym.toolchains import detect_toolchain

    src = root / bundle.split("+", 1)[1]
    subprocess.run(["git", "clone", "-q", str(SHARED_REPOS / f"{bundle}.bundle"), str(src)],
                   check=True)
    settings = Settings(out=root / "data", provider="docker")
    checkout = clone(RepoSpec(source=str(src)), settings.cache_dir)
    tc = detect_toolchain(checkout.path)
    assert isinstance(tc, toolchain), tc
    provider = get_provider("docker", settings)
    env = provider.build_env(tc.env_spec(checkout, settings.base_image), checkout.path,
                             root / "logs")
    return tc, provider.open(env)


@pytest.fixture(scope="session")
def docker_client():
    client = _docker_client()
    if client is None:
        pytest.skip("no Docker engine reachable (set CI=true to make this an error)")
    return client


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """The repogym base image, built from Debian packages if it is missing (~1 min)."""
    from repogym.sandboxes.images import ensure_base_image

    name = os.environ.get("REPOGYM_BASE_IMAGE", DEFAULT_BASE_IMAGE)
    ensure_base_image(name, client=docker_client)
    return name


# one date for every commit a test makes (unless it sets its own): the same files give the
# same commit, so the same content-addressed environment image, in every test and CI run
FIXED_GIT_DATE = "2024-01-01T00:00:00Z"


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_DATE": FIXED_GIT_DATE, "GIT_COMMITTER_DATE": FIXED_GIT_DATE,
           **os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def make_git_repo(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``make_git_repo({"pkg/a.py": "...", ...}, name="demo")`` -> a committed repo."""

    def make(files: dict[str, str], name: str = "demo") -> Path:
        root = tmp_path / name
        root.mkdir(parents=True)
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
        return root

    return make


TINY_PROJECT: dict[str, str] = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "tinycalc"\nversion = "0.1"\n\n'
        '[project.optional-dependencies]\ntest = ["pytest"]\n'
        '[tool.setuptools]\npackages = ["tinycalc"]\n'
    ),
    "tinycalc/__init__.py": "",
    "tinycalc/ops.py": (
        "def add(a, b):\n    return a + b\n\n\n"
        "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n\n\n"
        "def first_n(items, n):\n    return list(items)[:n]\n\n\n"
        "def is_even(n):\n    return n % 2 == 0\n"
    ),
    "tests/test_ops.py": (
        "from tinycalc.ops import add, clamp, first_n, is_even\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_clamp_low():\n    assert clamp(-5, 0, 10) == 0\n\n\n"
        "def test_clamp_high():\n    assert clamp(50, 0, 10) == 10\n\n\n"
        "def test_clamp_mid():\n    assert clamp(5, 0, 10) == 5\n\n\n"
        "def test_first_n():\n    assert first_n([1, 2, 3, 4], 2) == [1, 2]\n\n\n"
        "def test_is_even():\n    assert is_even(4) and not is_even(3)\n"
    ),
}


@pytest.fixture
def tiny_repo(make_git_repo) -> Path:
    """A small installable package with a pytest suite, committed in a git repo."""
    return make_git_repo(TINY_PROJECT, name="tinycalc")


def commit_files(root: Path, files: dict[str, str], message: str = "initial") -> str:
    """Write ``files`` under ``root`` (a git repo is created if needed), commit; the sha."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@dataclass
class TinyEnv:
    """A built environment of a small repository, for tests that need a real sandbox."""

    provider: Any
    env: Any
    checkout: Any
    toolchain: Any


def build_tiny_env(provider_name: str, src: Path, out: Path) -> TinyEnv:
    """Clone ``src`` and build its env with ``provider_name`` (settings under ``out``)."""
    from repogym.config import Settings
    from repogym.repos import clone
    from repogym.sandboxes import get_provider
    from repogym.schemas.records import RepoSpec
    from repogym.toolchains import PythonToolchain

    settings = Settings(out=out / "data", provider=provider_name)
    checkout = clone(RepoSpec(source=str(src)), settings.cache_dir)
    tc = PythonToolchain()
    provider = get_provider(provider_name, settings)
    env = provider.build_env(tc.env_spec(checkout, settings.base_image), checkout.path, out / "logs")
    return TinyEnv(provider, env, checkout, tc)


PROVIDER_PARAMS = [pytest.param("docker", marks=pytest.mark.docker), "local"]


def need_provider(request: pytest.FixtureRequest, name: str) -> None:
    """Docker-backed fixtures need the base image (built once per session)."""
    if name == "docker":
        request.getfixturevalue("base_image")
