"""The sandbox pool on real containers (tinycalc's environment image): warm sandboxes
reset in place and handed out again, never dirty; its size limit, idle eviction, broken
sandboxes replaced; and the reaper that removes a dead process's containers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Iterator

import pytest

from repogym.config import Settings
from repogym.sandboxes import get_provider
from repogym.sandboxes.docker import DockerProvider
from repogym.sandboxes.pool import PoolExhausted, SandboxPool
from tests.exports.conftest import real_tasks  # noqa: F401

pytestmark = pytest.mark.docker


@pytest.fixture
def provider(request) -> Iterator[DockerProvider]:
    prov = get_provider("docker", Settings(), namespace=f"rg-test-pool-{time.time_ns()}")
    yield prov
    prov.cleanup()


def ids(sandbox) -> str:
    return str(sandbox.container_id)


def test_a_sandbox_handed_back_is_reset_in_place_and_leased_again(provider, real_tasks):  # noqa: F811
    pool = SandboxPool(provider, max_size=2)
    with pool.lease(real_tasks.image) as first:
        cid = ids(first)
        first.exec("echo dirty > tinycalc/units.py; echo x > /tmp/x; sleep 600 &",
                   timeout=30)
    with pool.lease(real_tasks.image) as again:
        assert ids(again) == cid  # warm: the same container
        out = again.exec("cat tinycalc/units.py; ls /tmp; pgrep sleep || echo none",
                         timeout=30).stdout
        assert "dirty" not in out and "def celsius_to_fahrenheit" in out and "none" in out
    stats = pool.stats()
    assert (stats.opened, stats.reused, stats.idle, stats.leased) == (1, 1, 1, 0)
    pool.close()
    assert provider.cleanup() == 0


def test_a_block_that_raises_discards_its_sandbox(provider, real_tasks):  # noqa: F811
    pool = SandboxPool(provider, max_size=1)
    with pytest.raises(RuntimeError):
        with pool.lease(real_tasks.image) as sandbox:
            cid = ids(sandbox)
            raise RuntimeError("the episode crashed")
    with pool.lease(real_tasks.image) as fresh:
        assert ids(fresh) != cid
    assert pool.stats().discarded == 1
    pool.close()


def test_a_killed_container_is_replaced_not_handed_out(provider, real_tasks, docker_client):  # noqa: F811
    pool = SandboxPool(provider, max_size=1)
    with pool.lease(real_tasks.image) as sandbox:
        cid = ids(sandbox)
    docker_client.containers.get(cid).kill()  # dies while idle in the pool
    with pool.lease(real_tasks.image) as sandbox:
        assert ids(sandbox) != cid and sandbox.exec("true", timeout=30).ok
    assert pool.stats().discarded == 1
    pool.close()


def test_a_full_pool_makes_the_next_lease_wait_then_gives_up(provider, real_tasks):  # noqa: F811
    pool = SandboxPool(provider, max_size=1, wait=1.0)
    held = pool.acquire(real_tasks.image)
    with pytest.raises(PoolExhausted, match="no sandbox came free"):
        pool.acquire(real_tasks.image)
    threading.Timer(0.5, pool.release, [held]).start()
    pool.wait = 60.0
    got = pool.acquire(real_tasks.image)  # waits for the one handed back
    assert ids(got) == ids(held)
    pool.release(got)
    pool.close()


def test_idle_sandboxes_are_evicted(provider, real_tasks):  # noqa: F811
    pool = SandboxPool(provider, max_size=2, idle_seconds=0.0)
    with pool.lease(real_tasks.image):
        pass
    time.sleep(0.05)
    assert pool.evict_idle() == 0  # release already evicted it (idle_seconds=0)
    assert pool.stats().evicted == 1 and pool.stats().size == 0
    assert provider.cleanup() == 0
    pool.close()


def test_the_reaper_removes_a_dead_process_s_sandboxes(real_tasks, docker_client):  # noqa: F811
    namespace = f"rg-test-reaper-{time.time_ns()}"
    script = (f"import time; from repogym.config import Settings;"
              f"from repogym.sandboxes import get_provider;"
              f"from repogym.sandboxes.reaper import start_reaper;"
              f"p = get_provider('docker', Settings(), namespace='{namespace}');"
              f"start_reaper('docker', '{namespace}');"
              f"p.open(p.env_for('{real_tasks.image}')); print('open', flush=True);"
              f"time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    label = {"label": f"repogym.namespace={namespace}"}
    assert len(docker_client.containers.list(all=True, filters=label)) == 1
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 60
    # sparse: no inspect of each listed container, which the reaper may remove meanwhile
    # (CI: a 404 from inspecting a container removed between the listing and the inspect)
    while docker_client.containers.list(all=True, filters=label, sparse=True):
        assert time.monotonic() < deadline, "the reaper left the container"
        time.sleep(0.2)
