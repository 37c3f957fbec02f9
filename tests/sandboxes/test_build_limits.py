"""Environment builds run the repository's code, so they are contained like sandboxes.

Each hostile repository has an in-tree build backend (``pyproject.toml``:
``build-backend = "hostile_backend"``, ``backend-path = ["."]``) that misbehaves as soon
as pip imports it: it fills the disk, fork-bombs, hogs memory or hangs. The real
:meth:`DockerProvider.build_env` must end each build with an
:class:`~repogym.errors.InstallError` (the repository's fault, not the infrastructure's)
naming the limit hit, leave no container, image or process behind, and the same
provider must still build a normal repository afterwards. Every process a hostile
backend starts carries :data:`MARK` in its command line, so the host can tell whether
any survived.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym.config import Settings
from repogym.errors import InstallError
from repogym.sandboxes.docker import DockerProvider, cleanup_images
from repogym.sandboxes.images import env_image_tag
from repogym.schemas.records import EnvSpec
from tests.processes import pids_marked, wait_until
from tests.sandboxes.test_conformance import INSTALL, make_checkout, make_spec

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MARK = "rg-build-hostile-mark"
MEMORY_MB, PIDS, BUILD_DISK_MB = 384, 96, 600
PIP_INSTALL = "python -m pip install -q --no-index --no-deps ."

PYPROJECT = """[build-system]
requires = []
build-backend = "hostile_backend"
backend-path = ["."]

[project]
name = "hostile"
version = "0.1"
"""

BACKEND = r'''"""A build backend that misbehaves when imported (%(case)s)."""
import os, subprocess, sys, time

MARK = "%(mark)s"

FILL = """
import os, sys
chunk = os.urandom(1 << 20)
with open(os.path.expanduser("~/fill"), "wb") as fh:
    for _ in range(4096):
        fh.write(chunk)
"""

FORKBOMB = """
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
"""

MEMHOG = """
hoard = []
while True:
    hoard.append(b"x" * (32 << 20))
"""


def run(code):
    return subprocess.call([sys.executable, "-c", code, MARK])


CASE = "%(case)s"
if CASE == "disk":
    run(FILL)
elif CASE == "pids":
    subprocess.Popen([sys.executable, "-c", FORKBOMB, MARK], start_new_session=True)
    time.sleep(120)
elif CASE == "memory":
    run(MEMHOG)
elif CASE == "time":
    run("import time; time.sleep(600)")


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("a hostile backend builds nothing")
'''


def hostile_repo(root: Path, case: str) -> Path:
    return make_checkout(root / f"hostile-{case}", {
        "pyproject.toml": PYPROJECT,
        "hostile_backend.py": BACKEND % {"case": case, "mark": MARK},
        "tests/test_nothing.py": "def test_nothing():\n    pass\n",
    })


def marked_pids() -> list[int]:
    """Host pids whose command line carries :data:`MARK` (container processes included)."""
    return pids_marked(MARK)


@pytest.fixture(scope="module")
def provider(docker_client: Any, base_image: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerProvider]:
    out = tmp_path_factory.mktemp("build-limits")
    settings = Settings(out=out, base_image=base_image, memory_mb=MEMORY_MB, pids=PIDS,
                        build_disk_mb=BUILD_DISK_MB, install_timeout=120)
    prov = DockerProvider(settings, docker_client, namespace=f"test-{secrets.token_hex(4)}")
    yield prov
    prov.cleanup()
    cleanup_images(docker_client, prov.namespace)


def build_hostile(provider: DockerProvider, tmp_path: Path, case: str) -> tuple[InstallError,
                                                                                 EnvSpec]:
    repo = hostile_repo(tmp_path, case)
    spec = make_spec(repo, provider.settings.base_image, (PIP_INSTALL,), name=f"hostile-{case}")
    with pytest.raises(InstallError) as info:
        provider.build_env(spec, repo, tmp_path / "logs")
    return info.value, spec


def assert_nothing_left(provider: DockerProvider, client: Any, spec: EnvSpec) -> None:
    mine = {"label": f"repogym.namespace={provider.namespace}"}
    assert client.containers.list(all=True, ignore_removed=True, filters=mine) == []
    assert client.images.list(filters=mine) == []
    assert client.images.list(name=env_image_tag(spec).rsplit(":", 1)[0]) == []
    assert wait_until(lambda: not marked_pids(), 15), f"left running: {marked_pids()}"


@pytest.mark.parametrize("case, limit", [
    ("disk", f"wrote more than its disk limit ({BUILD_DISK_MB} MB)"),
    ("pids", f"reached its process limit ({PIDS} processes)"),
    ("memory", f"ran out of its memory limit ({MEMORY_MB} MB)"),
])
def test_a_build_that_hits_a_limit_is_stopped_and_blamed_on_the_repository(
        provider: DockerProvider, docker_client: Any, tmp_path: Path, case: str,
        limit: str) -> None:
    start = time.monotonic()
    error, spec = build_hostile(provider, tmp_path, case)
    took = time.monotonic() - start
    message = str(error)
    assert f"hostile-{case}: install step stopped: the build {limit}" in message, message
    assert PIP_INSTALL in message and error.step == PIP_INSTALL
    assert error.limit == limit
    assert error.log_path is not None and limit in error.log_path.read_text()
    assert took < 60, f"{took:.0f}s: the build ran on after the limit was hit"
    assert_nothing_left(provider, docker_client, spec)


def test_a_build_step_that_hangs_is_stopped_at_its_time_limit(
        provider: DockerProvider, docker_client: Any, tmp_path: Path) -> None:
    quick = DockerProvider(provider.settings.model_copy(update={"install_timeout": 8.0}),
                           provider.client, namespace=provider.namespace)
    start = time.monotonic()
    error, spec = build_hostile(quick, tmp_path, "time")
    assert "the build ran out of its time limit (8 s per step)" in str(error), str(error)
    assert time.monotonic() - start < 45
    assert_nothing_left(provider, docker_client, spec)


def test_a_normal_build_still_works_with_the_same_provider(
        provider: DockerProvider, docker_client: Any, tmp_path: Path) -> None:
    """After the hostile builds (this test runs after them), with the same limits: the
    network is cut (after the install steps) before the image is committed."""
    repo = make_checkout(tmp_path / "tinycalc")
    since = time.time()
    env = provider.build_env(make_spec(repo, provider.settings.base_image, (INSTALL,)), repo,
                             tmp_path / "logs")
    until = time.time()
    assert not env.reused
    image = docker_client.images.get(env.ref)
    assert image.labels["repogym.namespace"] == provider.namespace
    with provider.open(env) as sandbox:
        res = sandbox.exec("python -m pytest -q tests", timeout=120)
    assert res.ok and "6 passed" in res.stdout, res.stdout + res.stderr

    events = list(docker_client.events(since=int(since), until=int(until) + 1, decode=True))
    build = [e["Actor"]["ID"] for e in events if e.get("Action") == "create"
             and e["Actor"]["Attributes"].get("name", "").startswith(
                 f"repogym-build-{env.spec.digest()}-")]
    assert len(build) == 1, events
    cut = [e["timeNano"] for e in events if e.get("Type") == "network"
           and e.get("Action") == "disconnect"
           and e["Actor"]["Attributes"].get("container") == build[0]]
    commit = [e["timeNano"] for e in events if e.get("Action") == "commit"
              and e["Actor"]["ID"] == build[0]]
    assert cut and commit and max(cut) < min(commit), (cut, commit)
