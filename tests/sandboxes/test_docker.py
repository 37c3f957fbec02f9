"""What only the docker provider promises: isolation, limits, labels, cleanup."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from repogym.config import Settings
from repogym.errors import SandboxError
from repogym.sandboxes.base import Limits
from repogym.sandboxes.docker import DockerProvider, DockerSandbox, cleanup_images
from repogym.schemas.records import EnvImage
from tests.sandboxes.test_conformance import make_checkout, make_spec

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def provider(docker_client: Any, base_image: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerProvider]:
    out = tmp_path_factory.mktemp("docker-out")
    settings = Settings(out=out, base_image=base_image, memory_mb=1024, pids=256)
    prov = DockerProvider(settings, docker_client, namespace=f"test-{secrets.token_hex(4)}")
    yield prov
    prov.cleanup()
    cleanup_images(docker_client, prov.namespace)


@pytest.fixture(scope="module")
def env(provider: DockerProvider, tmp_path_factory: pytest.TempPathFactory) -> EnvImage:
    """The tiny project without an install: these tests need python and git only."""
    tmp = tmp_path_factory.mktemp("docker-env")
    repo = make_checkout(tmp / "tinycalc")
    return provider.build_env(make_spec(repo, provider.settings.base_image, ()), repo, tmp / "logs")


@pytest.fixture
def sb(provider: DockerProvider, env: EnvImage) -> Iterator[DockerSandbox]:
    with closing(provider.open(env)) as sandbox:
        yield sandbox


def test_network_is_off(sb: DockerSandbox) -> None:
    probe = "import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)"
    res = sb.exec(["python3", "-c", probe], timeout=30)
    assert not res.ok and "Error" in res.stderr
    assert sb.container is not None
    assert sb.container.attrs["HostConfig"]["NetworkMode"] == "none"


def test_network_on_request(provider: DockerProvider, env: EnvImage) -> None:
    with closing(provider.open(env, Limits(network=True))) as sandbox:
        assert sandbox.container is not None
        assert sandbox.container.attrs["HostConfig"]["NetworkMode"] == "bridge"


def test_commands_run_as_non_root(sb: DockerSandbox) -> None:
    assert sb.exec("id -u", timeout=30).stdout.strip() == "1000"
    assert sb.exec("id -un", timeout=30).stdout.strip() == "repogym"
    assert sb.exec("id -u", timeout=30, user="root").stdout.strip() == "0"
    assert not sb.exec("touch /etc/owned", timeout=30).ok


def test_venv_is_read_only_for_code_under_test(sb: DockerSandbox) -> None:
    res = sb.exec("touch /opt/venv/lib/python3*/site-packages/sitecustomize.py", timeout=30)
    assert not res.ok
    # the prepared layer's folders were repogym's during the install: handed to root too
    assert not sb.exec("rm -rf /opt/venv/lib/python3*/site-packages/pip", timeout=30).ok
    owned = sb.exec("find /opt/venv ! -user root -o ! -group root", timeout=30, user="root")
    assert owned.ok and owned.stdout == ""


def test_builds_start_from_one_prepared_layer(provider: DockerProvider, env: EnvImage,
                                              docker_client: Any) -> None:
    """The venv with current pip, setuptools and wheel comes from the prepared layer, built
    once per image to build from and interpreter and labelled as a layer."""
    from repogym.sandboxes.env_build import prepared_layer

    assert env.spec is not None
    tag = prepared_layer(env.spec.python).tag(env.spec.build_from)
    layer = docker_client.images.get(tag)
    assert layer.labels.get("repogym") == "layer"
    with closing(provider.open(env)) as sandbox:
        listed = sandbox.exec("/opt/venv/bin/python -m pip list --format=freeze", timeout=60)
    assert {line.split("==")[0] for line in listed.stdout.split()} >= {"pip", "setuptools",
                                                                     "wheel"}
    assert layer.id in {h["Id"] for h in docker_client.images.get(env.ref).history()}


def test_limits_are_applied(provider: DockerProvider, env: EnvImage) -> None:
    with closing(provider.open(env, Limits(memory_mb=300, cpus=0.5, pids=77))) as sandbox:
        assert sandbox.container is not None
        host = sandbox.container.attrs["HostConfig"]
    assert host["Memory"] == 300 * 1024 * 1024 and host["MemorySwap"] == host["Memory"]
    assert host["NanoCpus"] == 500_000_000 and host["PidsLimit"] == 77
    assert host["Init"] is True and "no-new-privileges" in host["SecurityOpt"]
    assert "/tmp" in host["Tmpfs"]


def test_memory_hog_is_killed_and_sandbox_recovers(provider: DockerProvider,
                                                   env: EnvImage) -> None:
    with closing(provider.open(env, Limits(memory_mb=256))) as sandbox:
        res = sandbox.exec(["python3", "-c", "b = b'x' * (4 * 1024**3)"], timeout=60)
        assert not res.ok and not res.timed_out
        sandbox.reset()
        assert sandbox.exec("echo alive", timeout=30).stdout == "alive\n"


def test_fork_bomb_is_contained(provider: DockerProvider, env: EnvImage) -> None:
    with closing(provider.open(env, Limits(pids=64))) as sandbox:
        start = time.monotonic()
        sandbox.exec(":(){ :|:& };:", timeout=5)
        assert time.monotonic() - start < 20
        sandbox.reset()
        assert sandbox.exec("echo alive", timeout=30).stdout == "alive\n"


def test_the_disk_guard_counts_the_sandbox_s_writes_not_the_host_s(
        provider: DockerProvider, env: EnvImage, docker_client: Any) -> None:
    """Free space on the engine's disk drops when anything writes there (image builds, other
    containers): that alone must not stop a sandbox (CI stopped sandboxes of a test while
    other tests built images). What the sandbox itself writes past its limit does."""
    sandbox = DockerSandbox(provider.client, env, provider.default_limits(),
                            provider.labels("sandbox"), disk_mb=64)
    sandbox.start()
    with closing(sandbox):
        hog = Path(docker_client.info()["DockerRootDir"]) / f"rg-host-{secrets.token_hex(4)}"
        try:
            with hog.open("wb") as fh:
                for _ in range(160):
                    fh.write(b"\1" * (1 << 20))
                fh.flush()
                os.fsync(fh.fileno())
            time.sleep(1.5)  # fifteen of the guard's polls
            assert sandbox.exec("echo alive", timeout=30).stdout == "alive\n"
        finally:
            hog.unlink(missing_ok=True)
            os.sync()  # the file system frees the blocks a moment after the unlink
            time.sleep(1.0)
        with pytest.raises(SandboxError, match=r"wrote more than its disk limit \(64 MB\)"):
            sandbox.exec("head -c 100M /dev/zero > /var/tmp/fill && sync && sleep 20",
                         timeout=30)


def test_escaping_the_process_group_does_not_escape_the_timeout(sb: DockerSandbox) -> None:
    start = time.monotonic()
    res = sb.exec("setsid sleep 60 & sleep 60", timeout=2)
    assert res.timed_out and res.exit_code == -9
    assert time.monotonic() - start < 15
    sb.reset()
    assert sb.exec("echo alive", timeout=30).stdout == "alive\n"


def test_code_under_test_cannot_freeze_the_inner_timeout(sb: DockerSandbox) -> None:
    res = sb.exec("kill -STOP $PPID", timeout=10)  # $PPID: the root agent (or `timeout`)
    assert not res.ok and "not permitted" in res.stderr
    assert sb.exec("echo alive", timeout=30).stdout == "alive\n"


def test_host_kills_a_command_that_freezes_the_inner_timeout(sb: DockerSandbox) -> None:
    start = time.monotonic()
    # only root could do this; the host must still get the time limit back
    res = sb.exec("kill -STOP $PPID; sleep 60", timeout=2, user="root")
    assert res.timed_out and res.exit_code == -9
    assert time.monotonic() - start < 15
    assert sb.broken
    with pytest.raises(SandboxError):
        sb.exec("true", timeout=30)
    sb.reset()  # a fresh container from the same image
    assert sb.exec("echo alive", timeout=30).stdout == "alive\n"


def test_everything_is_labelled(provider: DockerProvider, env: EnvImage, sb: DockerSandbox,
                                docker_client: Any) -> None:
    assert sb.container is not None and sb.container.labels["repogym"] == "sandbox"
    image = docker_client.images.get(env.ref)
    assert image.labels["repogym"] == "env"
    assert image.labels["repogym.repo"] == env.spec.repo
    assert image.labels["repogym.digest"] == env.spec.digest()
    assert env.ref.startswith("repogym-env/tinycalc:")
    mine = {"label": f"repogym.namespace={provider.namespace}"}
    for container in docker_client.containers.list(all=True, ignore_removed=True, filters=mine):
        assert container.labels["repogym"] in {"sandbox", "build"}


def test_one_env_wanted_twice_at_once_is_built_once(provider: DockerProvider,
                                                    tmp_path: Path) -> None:
    """Two builders of one environment at the same time (two flows, two test workers): one
    builds, the other waits on the host's build lock and reuses it."""
    from concurrent.futures import ThreadPoolExecutor

    repo = make_checkout(tmp_path / "tinycalc")
    spec = make_spec(repo, provider.settings.base_image, ())
    with ThreadPoolExecutor(2) as pool:
        envs = list(pool.map(lambda i: provider.build_env(spec, repo, tmp_path / f"logs{i}"),
                             range(2)))
    assert sorted(e.reused for e in envs) == [False, True]
    assert envs[0].ref == envs[1].ref


def test_build_leaves_no_container(provider: DockerProvider, docker_client: Any) -> None:
    mine = {"label": [f"repogym.namespace={provider.namespace}", "repogym=build"]}
    assert docker_client.containers.list(all=True, ignore_removed=True, filters=mine) == []


def test_cleanup_removes_left_behind_containers_only(provider: DockerProvider, env: EnvImage,
                                                     docker_client: Any, base_image: str) -> None:
    leftover = provider.open(env)  # never closed: as after a crash
    stranger = docker_client.containers.create(base_image, ["true"])
    try:
        assert provider.cleanup() >= 1
        names = {c.id for c in docker_client.containers.list(all=True, ignore_removed=True)}
        assert leftover.container is not None and leftover.container.id not in names
        assert stranger.id in names
    finally:
        stranger.remove(force=True)
        leftover.close()


def test_cleanup_images_only_touches_env_images(docker_client: Any, base_image: str) -> None:
    ns, tag = f"test-{secrets.token_hex(4)}", secrets.token_hex(4)
    box = docker_client.containers.create(base_image, ["true"], labels={"repogym": "build"})
    try:
        box.commit("repogym-test/env", tag, conf={"Labels": {
            "repogym": "env", "repogym.namespace": ns}})
        box.commit("repogym-test/other", tag, conf={"Labels": {"repogym.namespace": ns}})
    finally:
        box.remove(force=True)
    try:
        assert cleanup_images(docker_client, ns) >= 1
        tags = {t for image in docker_client.images.list() for t in image.tags}
        assert f"repogym-test/env:{tag}" not in tags
        assert f"repogym-test/other:{tag}" in tags
    finally:
        docker_client.images.remove(f"repogym-test/other:{tag}")


def test_files_written_belong_to_repogym(sb: DockerSandbox) -> None:
    sb.write_file("new/dir/f.txt", "x", mode=0o640)
    res = sb.exec("stat -c '%U %a' new/dir/f.txt", timeout=30)
    assert res.stdout.strip() == "repogym 640"


def test_reset_restores_home(sb: DockerSandbox) -> None:
    sb.exec("mkdir -p ~/.local/lib && echo bad > ~/.local/lib/planted.py", timeout=30)
    sb.reset()
    assert not sb.exec("test -e ~/.local/lib/planted.py", timeout=30).ok


def test_reset_restores_git_hooks_and_config(sb: DockerSandbox) -> None:
    hook = "#!/bin/sh\ntouch /tmp/hooked\n"
    sb.write_file(".git/hooks/post-checkout", hook, mode=0o755)
    assert sb.exec("git config core.pager cat && git config alias.x status", timeout=30).ok
    sb.reset()
    assert not sb.exec("test -e .git/hooks/post-checkout", timeout=30).ok
    assert sb.exec("git config alias.x", timeout=30).stdout == ""


def test_open_unknown_image_raises_sandbox_error(provider: DockerProvider,
                                                 env: EnvImage) -> None:
    ghost = env.model_copy(update={"ref": "repogym-env/ghost:0000000000000000"})
    with pytest.raises(SandboxError):
        provider.open(ghost)


def test_build_env_with_unavailable_base_is_an_image_build_error(
        provider: DockerProvider, tmp_path: Path) -> None:
    from repogym.errors import ImageBuildError

    repo = make_checkout(tmp_path / "tinycalc")
    spec = make_spec(repo, "repogym-test.invalid/nope:1", ())
    with pytest.raises(ImageBuildError):
        provider.build_env(spec, repo, tmp_path / "logs")
