"""Sandboxes: where a repository's code runs (see :mod:`repogym.sandboxes.base`).

Providers are registered by name in :data:`PROVIDERS`; :func:`get_provider` builds one
from the settings::

    provider = get_provider("docker", settings)
    env = provider.build_env(spec, checkout.path, log_dir)
    with provider.open(env) as sandbox:
        sandbox.exec("python -m pytest -q", timeout=600)

``docker`` is the default and the isolation boundary; ``local`` is not one (no network
isolation, same user) and exists for machines without Docker and for speed studies.
"""

from __future__ import annotations

from typing import Any

from repogym.config import Settings
from repogym.registry import Registry
from repogym.sandboxes.base import ExecResult, Limits, Sandbox, SandboxProvider, as_shell
from repogym.sandboxes.docker import DockerProvider, DockerSandbox, cleanup_images
from repogym.sandboxes.images import ensure_base_image, env_image_tag
from repogym.sandboxes.local import LocalProvider, LocalSandbox

PROVIDERS = Registry[type[SandboxProvider]]("sandbox provider")
PROVIDERS.register("docker")(DockerProvider)
PROVIDERS.register("local")(LocalProvider)


def get_provider(name: str, settings: Settings, **kwargs: Any) -> SandboxProvider:
    """The provider registered as ``name``, built from ``settings``.

    Extra keyword arguments go to the provider's constructor (e.g. ``client=`` and
    ``namespace=`` for docker, ``lock_wait=`` for local).

    Raises:
        UnknownPluginError: no provider has that name (the message lists the valid ones).
        SandboxError: the provider cannot work here (e.g. no Docker engine).
    """
    factory: Any = PROVIDERS.get(name)
    provider: SandboxProvider = factory(settings, **kwargs)
    return provider


__all__ = [
    "PROVIDERS", "DockerProvider", "DockerSandbox", "ExecResult", "Limits", "LocalProvider",
    "LocalSandbox", "Sandbox", "SandboxProvider", "as_shell", "cleanup_images",
    "ensure_base_image", "env_image_tag", "get_provider",
]
