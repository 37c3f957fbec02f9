"""The connection to the Docker engine: one client from the environment, one address.

Every Docker client repogym makes comes from :func:`docker_client`, which reads the
environment the way the ``docker`` command does: ``DOCKER_HOST`` (``unix://``,
``tcp://``, ``ssh://``), ``DOCKER_TLS_VERIFY`` and ``DOCKER_CERT_PATH``. Nothing repogym
does with the engine relies on a file system it shares with it (no bind mounts, no host
paths in API calls: files go in and out as tar archives over the API), so the engine can
be on another machine. Two things docker-py's own ``docker.from_env()`` gets wrong for
such an engine are put right here:

* **TLS**: ``requests`` lets ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` (set on machines
  whose outbound TLS is re-signed by a proxy) replace the CA of ``DOCKER_CERT_PATH``, so
  the engine's certificate fails to verify (docker/docker-py#2433). The client here
  keeps the engine's CA.
* **SSH**: ``ssh://`` hosts go through the system ``ssh`` client (its config, agent and
  known hosts, as the ``docker`` command does), not paramiko, which is not installed.

A failure to reach the engine names its address (:func:`engine_address`), and
:data:`ENGINE_ERRORS` is what a call to the engine may raise: docker-py raises
``requests`` exceptions unwrapped when the connection drops mid-run.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import docker
from docker.errors import APIError, DockerException, NotFound
from requests.exceptions import RequestException

from repogym.errors import ImageBuildError

DEFAULT_ADDRESS = "unix:///var/run/docker.sock"
# what any call to the engine may raise (besides the caller's own errors)
log = logging.getLogger(__name__)
ENGINE_ERRORS: tuple[type[BaseException], ...] = (DockerException, RequestException)


class _EngineAPI(docker.APIClient):  # docker-py has no types
    """docker-py's low-level client, keeping a TLS engine's own CA (see the module doc)."""

    def merge_environment_settings(self, url: Any, proxies: Any, stream: Any, verify: Any,
                                   cert: Any) -> dict[str, Any]:
        settings: dict[str, Any] = super().merge_environment_settings(url, proxies, stream,
                                                                      verify, cert)
        if isinstance(self.verify, str) and verify is None:  # DOCKER_CERT_PATH's ca.pem
            settings["verify"] = self.verify
        return settings


class EngineClient(docker.DockerClient):
    """``docker.DockerClient`` on :class:`_EngineAPI`."""

    def __init__(self, **kwargs: Any) -> None:  # DockerClient.__init__ does only this
        self.api = _EngineAPI(**kwargs)


def engine_address(client: Any = None) -> str:
    """Where ``client`` (default: the environment's engine) connects, for messages."""
    if client is None:
        return os.environ.get("DOCKER_HOST") or DEFAULT_ADDRESS
    api = getattr(client, "api", client)
    adapter = getattr(api, "_custom_adapter", None)
    socket_path = getattr(adapter, "socket_path", None)
    ssh_host = getattr(adapter, "ssh_host", None)
    if socket_path:
        return f"unix://{socket_path}"
    if ssh_host:
        return f"ssh://{ssh_host}"
    base = str(getattr(api, "base_url", "") or "")
    for scheme in ("http://", "https://"):
        if base.startswith(scheme):
            return "tcp://" + base[len(scheme):] + (" (TLS)" if scheme == "https://" else "")
    return base or engine_address(None)


def docker_client(client: Any = None) -> Any:
    """``client`` itself, or a client from the environment (see the module docstring).

    Raises:
        ImageBuildError: no Docker engine is reachable (the message names the address).
    """
    if client is not None:
        return client
    address = engine_address(None)
    try:
        kwargs = docker.utils.kwargs_from_env()
        return EngineClient(version="auto", use_ssh_client=address.startswith("ssh://"),
                            **kwargs)
    except ENGINE_ERRORS as exc:
        raise ImageBuildError(f"no Docker engine reachable at {address}: {exc}") from exc


def engine_trouble(exc: BaseException, client: Any) -> str:
    """``exc`` as text, naming the engine's address when the connection to it failed."""
    if isinstance(exc, RequestException) and not isinstance(exc, APIError):
        return f"Docker engine at {engine_address(client)}: {exc}"  # refused, reset, timeout
    return str(exc)  # the engine answered (APIError is an HTTPError too)


def remove_container(container: Any, what: str) -> None:
    """Force-remove ``container`` (a ``what``: "sandbox", "build container"). Never raises:
    one already gone is fine, an engine failure is logged (the labels let cleanup find it)."""
    try:
        container.remove(force=True)
    except NotFound:
        pass
    except ENGINE_ERRORS as exc:
        log.warning("could not remove %s %s: %s", what, container.short_id, exc)
