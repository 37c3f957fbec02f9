"""The docker provider against an engine that is not this machine's (``DOCKER_HOST``).

There is no second machine, so :class:`~tests.sandboxes.engine_proxy.EngineProxy` makes
the local engine look remote: ``DOCKER_HOST=tcp://127.0.0.1:<port>`` (or TLS with a
client certificate) reaches it only through a proxy that counts what goes through.
What must hold for a real remote engine:

* every Docker client repogym makes comes from the environment (no request goes to the
  local socket behind the proxy's back);
* nothing relies on a file system shared with the engine: no container has a bind
  mount or volume, the checkout reaches the build as an archive over the API and images
  come from ``commit`` or an uploaded import, never from a path the engine would read;
* losing the engine, or never reaching it, is a :class:`~repogym.errors.RepogymError`
  naming its address, not a bare ``requests`` exception.
"""

from __future__ import annotations

import io
import logging
import re
import secrets
import socket
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from docker.api.client import APIClient
from docker.errors import NotFound

from repogym.config import Settings
from repogym.errors import ImageBuildError, SandboxError
from repogym.pipeline import run_repo
from repogym.sandboxes import get_provider
from repogym.sandboxes.docker import DockerProvider, cleanup_images
from repogym.sandboxes.images import _import
from repogym.schemas.records import RepoSpec
from tests.conftest import TINY_PROJECT
from tests.sandboxes.engine_proxy import EngineProxy, make_tls_material
from tests.sandboxes.test_conformance import make_checkout, make_spec

CLIENT_ENV = ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONTEXT",
              "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def point_at(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    """``DOCKER_HOST=host``, with nothing else in the environment choosing the engine."""
    for var in CLIENT_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DOCKER_HOST", host)


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[EngineProxy]:
    with EngineProxy() as engine:
        point_at(monkeypatch, engine.url)
        yield engine


@dataclass
class ApiLog:
    """Every request docker-py sent in this process, and every container it made."""

    requests: Counter[str] = field(default_factory=Counter)  # per client base URL
    created: dict[str, str] = field(default_factory=dict)  # container id -> client base URL
    at_removal: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> inspect


@pytest.fixture
def api_log(monkeypatch: pytest.MonkeyPatch) -> ApiLog:
    """Records docker-py's traffic; a container is inspected just before it is removed."""
    seen = ApiLog()
    send, create, remove = APIClient.send, APIClient.create_container, APIClient.remove_container

    def logged_send(self: APIClient, request: Any, **kwargs: Any) -> Any:
        seen.requests[self.base_url] += 1
        return send(self, request, **kwargs)

    def logged_create(self: APIClient, *args: Any, **kwargs: Any) -> Any:
        out = create(self, *args, **kwargs)
        seen.created[out["Id"]] = self.base_url
        return out

    def logged_remove(self: APIClient, container: Any, *args: Any, **kwargs: Any) -> Any:
        cid = container if isinstance(container, str) else container["Id"]
        try:
            seen.at_removal[cid] = self.inspect_container(cid)
        except NotFound:
            pass
        return remove(self, container, *args, **kwargs)

    monkeypatch.setattr(APIClient, "send", logged_send)
    monkeypatch.setattr(APIClient, "create_container", logged_create)
    monkeypatch.setattr(APIClient, "remove_container", logged_remove)
    return seen


def host_dependencies(attrs: dict[str, Any]) -> list[str]:
    """What in an inspected container would need the engine's host file system (or more
    of the host than a sandbox should see)."""
    host = attrs["HostConfig"]
    found = [f"mount {m.get('Type')}:{m.get('Source')}" for m in attrs.get("Mounts") or []]
    found += [f"bind {b}" for b in host.get("Binds") or []]
    found += [f"HostConfig.Mounts {m}" for m in host.get("Mounts") or []]
    found += [f"volumes-from {v}" for v in host.get("VolumesFrom") or []]
    found += [f"device {d}" for d in host.get("Devices") or []]
    found += [f"volume {v}" for v in (attrs["Config"].get("Volumes") or {})]
    if host.get("Privileged"):
        found.append("privileged")
    for mode in ("NetworkMode", "PidMode", "IpcMode", "UTSMode", "UsernsMode"):
        if host.get(mode) == "host":
            found.append(f"{mode}=host")
    return found


def created_by_events(client: Any, since: float, until: float, image: str,
                      build_prefix: str) -> set[str]:
    """Ids of the containers the engine created in the window on ``image`` or named like
    this run's build container (other test sessions may share the engine)."""
    ids = set()
    for event in client.events(since=int(since), until=int(until) + 1, decode=True,
                               filters={"type": "container", "event": "create"}):
        attrs = event.get("Actor", {}).get("Attributes", {})
        if attrs.get("image") == image or attrs.get("name", "").startswith(build_prefix):
            ids.add(event["Actor"]["ID"])
    return ids


@pytest.mark.docker
def test_host_dependencies_sees_a_bind_mount(tmp_path: Path, docker_client: Any,
                                             base_image: str) -> None:
    """The check below is only as good as this: a bind mount of a host path is found."""
    box = docker_client.containers.create(base_image, ["true"], labels={"repogym": "sandbox"},
                                          volumes={str(tmp_path): {"bind": "/x", "mode": "ro"}})
    try:
        assert any(str(tmp_path) in f for f in host_dependencies(box.attrs))
    finally:
        box.remove(force=True)


@pytest.mark.slow
@pytest.mark.docker
def test_pipeline_runs_on_an_engine_reached_over_tcp(
        make_git_repo: Any, tmp_path: Path, docker_client: Any, base_image: str,
        proxy: EngineProxy, api_log: ApiLog, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="repogym.sandboxes")
    token = secrets.token_hex(6)  # a commit of its own: the env image is built, not reused
    src = make_git_repo({**TINY_PROJECT, "REMOTE.txt": token}, name="tinycalc")
    settings = Settings(out=tmp_path / "out", provider="docker", base_image=base_image,
                        max_candidates=3, max_combined=0, baseline_runs=1, oracle_runs=1,
                        probes=0, generators=("procedural",), test_timeout=60)
    start = time.time()
    summary = run_repo(RepoSpec(source=str(src)), settings)
    until = time.time()
    requests, created = dict(api_log.requests), dict(api_log.created)  # before the checks
    try:
        assert summary.accepted >= 1, summary
        assert not summary.image_reused

        # every client the run made came from DOCKER_HOST: all traffic went to the proxy
        proxy_url = f"http://127.0.0.1:{proxy.port}"
        assert set(requests) == {proxy_url}, requests
        traffic = proxy.traffic
        assert traffic.connections >= 2 and traffic.bytes_down > 0
        assert sum(requests.values()) >= 50

        # the checkout went in as an archive over the API, the image came out by commit
        assert traffic.paths("PUT", r"/containers/[0-9a-f]+/archive\?path=%2Frepo$")
        assert traffic.bytes_up > _tar_size(src)
        assert traffic.paths("POST", r"^/v[\d.]+/commit\?")
        assert not traffic.paths("POST", r"^/v[\d.]+/build"), "an image built from a context?"
        assert not [p for p in traffic.paths("POST", r"^/v[\d.]+/images/create")
                    if "fromSrc=-" not in p and "fromImage" not in p]

        # every container the run made (the engine's own record) was seen, and none
        # needs the engine's file system or more of its host
        digest = summary.image.rsplit(":", 1)[1]
        made = created_by_events(docker_client, start, until, summary.image,
                                 f"repogym-build-{digest}-")
        assert made and made <= set(created), (made, created)
        assert set(created.values()) == {proxy_url}
        for cid in created:
            attrs = api_log.at_removal.get(cid)
            assert attrs is not None, f"container {cid[:12]} was never removed"
            assert host_dependencies(attrs) == [], (attrs["Name"], host_dependencies(attrs))
        left = {c.id for c in docker_client.containers.list(all=True, ignore_removed=True)} & set(created)
        assert not left

        # the agent worked over TCP (no fallback to one docker exec per command)
        assert "agent unavailable" not in caplog.text
    finally:
        _remove_image(docker_client, summary.image)


def _tar_size(src: Path) -> int:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(src), arcname=".")
    return len(buf.getvalue())


def _remove_image(client: Any, ref: str) -> None:
    try:
        client.images.remove(ref, force=True)
    except NotFound:
        pass


@pytest.mark.docker
def test_tls_engine_keeps_its_own_ca_and_the_agent_runs_over_tls(
        tmp_path: Path, docker_client: Any, base_image: str,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH`` with ``REQUESTS_CA_BUNDLE`` also set (as on
    machines whose outbound TLS is re-signed): the engine's CA is used, and the agent's
    stream answers at once over TLS."""
    import certifi

    caplog.set_level(logging.WARNING, logger="repogym.sandboxes")
    server = make_tls_material(tmp_path / "certs")
    with EngineProxy(tls=server) as engine:
        point_at(monkeypatch, engine.url)
        monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
        monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path / "certs"))
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", certifi.where())  # not the engine's CA
        monkeypatch.setenv("CURL_CA_BUNDLE", certifi.where())
        provider = get_provider("docker", Settings(out=tmp_path / "out", base_image=base_image),
                                namespace=f"test-{secrets.token_hex(4)}")
        assert isinstance(provider, DockerProvider)
        assert provider.client.api.base_url == f"https://127.0.0.1:{engine.port}"
        try:
            repo = make_checkout(tmp_path / "tinycalc")
            env = provider.build_env(make_spec(repo, base_image, ()), repo, tmp_path / "logs")
            with provider.open(env) as sandbox:
                begin = time.monotonic()
                results = [sandbox.exec(f"echo {i}", timeout=30) for i in range(5)]
                sandbox.write_file("over-tls.txt", "hello")
                assert sandbox.read_file("over-tls.txt") == b"hello"
                elapsed = time.monotonic() - begin
            assert [r.stdout for r in results] == [f"{i}\n" for i in range(5)]
            assert elapsed < 10, f"{elapsed:.1f}s: the agent's answers waited on the socket"
            assert "agent unavailable" not in caplog.text
            assert engine.traffic.connections >= 2
        finally:
            provider.cleanup()
            cleanup_images(docker_client, provider.namespace)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("host", ["tcp", "unix"])
def test_unreachable_engine_is_named(host: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    address = (f"tcp://127.0.0.1:{_closed_port()}" if host == "tcp"
               else f"unix://{tmp_path}/no-engine.sock")
    point_at(monkeypatch, address)
    with pytest.raises(SandboxError, match=re.escape(f"no Docker engine reachable at {address}")):
        get_provider("docker", Settings(out=tmp_path))


@pytest.mark.docker
def test_engine_lost_mid_run_is_an_error_naming_it(
        tmp_path: Path, docker_client: Any, base_image: str, proxy: EngineProxy) -> None:
    namespace = f"test-{secrets.token_hex(4)}"
    provider = get_provider("docker", Settings(out=tmp_path / "out", base_image=base_image),
                            namespace=namespace)
    repo = make_checkout(tmp_path / "tinycalc")
    spec = make_spec(repo, base_image, ())
    try:
        env = provider.build_env(spec, repo, tmp_path / "logs")
        sandbox = provider.open(env)
        assert sandbox.exec("echo up", timeout=30).stdout == "up\n"
        proxy.close()  # the engine goes away: its open streams are cut, nothing answers
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", proxy.port), timeout=5).close()
        where = re.escape(f"127.0.0.1:{proxy.port}")
        with pytest.raises(SandboxError, match=where):
            sandbox.exec("echo down", timeout=30)
        with pytest.raises(SandboxError, match=where):
            sandbox.write_file("f.txt", "x")
        with pytest.raises(ImageBuildError, match=where):
            provider.build_env(make_spec(repo, base_image, ()), repo, tmp_path / "logs")
        with pytest.raises(SandboxError, match=where):
            provider.cleanup()
        sandbox.close()  # never raises, engine or not
    finally:
        for container in docker_client.containers.list(
                all=True, ignore_removed=True, filters={"label": f"repogym.namespace={namespace}"}):
            container.remove(force=True)
        cleanup_images(docker_client, namespace)


@pytest.mark.docker
def test_base_image_import_sends_its_bytes(tmp_path: Path, docker_client: Any,
                                           proxy: EngineProxy) -> None:
    """The base image's root file system is uploaded, never named by a path the engine
    would have to read."""
    payload = secrets.token_bytes(256 * 1024)
    tarball = tmp_path / "rootfs.tar"
    with tarfile.open(tarball, "w") as tar:
        info = tarfile.TarInfo("etc/marker")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    name = f"repogym-test/imported:{secrets.token_hex(4)}"
    client = get_provider("docker", Settings(out=tmp_path)).client  # type: ignore[attr-defined]
    try:
        _import(client, tarball, name, tmp_path / "log")
        assert docker_client.images.get(name).labels.get("repogym") == "base"
        [create] = proxy.traffic.paths("POST", r"^/v[\d.]+/images/create\?")
        assert "fromSrc=-" in create
        assert proxy.traffic.bytes_up >= tarball.stat().st_size
    finally:
        _remove_image(docker_client, name)
