"""Docker images: the base image and the names of per-repo environment images.

The *base image* is where every environment starts. Where a registry is reachable any
image with ``python3`` works (``python:3.12-slim``); where none is, repogym builds its
own, :data:`repogym.config.DEFAULT_BASE_IMAGE`, from Debian packages:

    debootstrap --variant=minbase --include=python3,python3-venv,... bookworm ROOTFS MIRROR
    + the host's CA bundle over /etc/ssl/certs/ca-certificates.crt (proxies that re-sign TLS)
    + user ``repogym`` (uid 1000, home /home/repogym)
    tar -C ROOTFS -c . | docker import  (ENV PATH, LANG, PIP_CERT, ...; LABEL repogym=base)

A *per-repo environment image* is named by :func:`env_image_tag`: a hash of everything
that went into it (:meth:`EnvSpec.digest`), so a changed recipe rebuilds and an unchanged
one is reused. Every image repogym makes carries a ``repogym`` label (``base`` or
``env``); cleanup only ever touches labelled images.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from repogym.config import DEFAULT_BASE_IMAGE
from repogym.errors import ImageBuildError
from repogym.layout import UID, USER
from repogym.sandboxes.engine import (
    ENGINE_ERRORS,
    docker_client,
    engine_trouble,
    remove_container,
)
from repogym.schemas.records import EnvSpec, ImageLayer

log = logging.getLogger(__name__)

BASE_PACKAGES: tuple[str, ...] = (
    "python3", "python3-venv", "python3-pip", "git", "ca-certificates", "procps", "patch",
)
CA_PATH = "/etc/ssl/certs/ca-certificates.crt"
BASE_CHANGES: tuple[str, ...] = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    f"ENV PIP_CERT={CA_PATH}",
    f"ENV SSL_CERT_FILE={CA_PATH}",
    f"ENV REQUESTS_CA_BUNDLE={CA_PATH}",
    "ENV PIP_DISABLE_PIP_VERSION_CHECK=1",
    "LABEL repogym=base",
    'CMD ["/bin/bash"]',
)
DEBOOTSTRAP_TIMEOUT = 1800.0


def image_exists(client: Any, name: str) -> bool:
    """Whether an image (tag or id) exists in the engine.

    Raises:
        ImageBuildError: the engine could not be asked.
    """
    import docker

    try:
        client.images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False
    except ENGINE_ERRORS as exc:
        raise ImageBuildError(f"cannot inspect image {name!r}: {engine_trouble(exc, client)}") \
            from exc


def env_image_tag(spec: EnvSpec) -> str:
    """The tag of a repository's environment image: ``repogym-env/<repo>:<digest>``."""
    name = re.sub(r"[^a-z0-9]+", "-", spec.repo.lower()).strip("-") or "repo"
    return f"repogym-env/{name}:{spec.digest()}"


def ensure_base_image(
    name: str,
    client: Any = None,
    *,
    suite: str = "bookworm",
    mirror: str = "http://deb.debian.org/debian",
    ca_bundle: Path = Path(CA_PATH),
    force: bool = False,
) -> bool:
    """Make sure the base image ``name`` exists in the engine.

    Repogym's own default (:data:`DEFAULT_BASE_IMAGE`) is built from Debian packages
    (needs root and ``debootstrap``; about a minute); any other name is pulled.

    Args:
        name: image reference, e.g. ``repogym/base:bookworm`` or ``python:3.12-slim``.
        client: a ``docker.DockerClient``; default one from the environment.
        suite: Debian suite to bootstrap.
        mirror: Debian mirror URL.
        ca_bundle: host CA bundle copied into the image (skipped when missing).
        force: rebuild (or re-pull) even when the image exists.

    Returns:
        True when this call built (or pulled) the image, False when it already existed.

    Raises:
        ImageBuildError: the image could not be pulled or built (the message says why and
            where the build log is).
    """
    client = docker_client(client)
    if not force and image_exists(client, name):
        return False
    if name != DEFAULT_BASE_IMAGE:
        _pull(client, name)
        return True
    build_base_image(name, client, suite=suite, mirror=mirror, ca_bundle=ca_bundle)
    return True


def _pull(client: Any, name: str) -> None:
    try:
        client.images.pull(name)
    except ENGINE_ERRORS as exc:
        raise ImageBuildError(
            f"base image {name!r} is not present locally and could not be pulled "
            f"({engine_trouble(exc, client)}); "
            f"load it with `docker load`, or use {DEFAULT_BASE_IMAGE!r}, which repogym "
            "builds from Debian packages"
        ) from exc


def build_base_image(
    name: str, client: Any, *, suite: str, mirror: str, ca_bundle: Path
) -> None:
    """Build ``name`` from Debian packages and import it (see the module docstring).

    The build log is kept in the temp directory when the build fails (its path is in the
    error message).

    Raises:
        ImageBuildError: debootstrap, the chroot setup or the import failed.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log_path = Path(tempfile.gettempdir()) / f"repogym-base-{stamp}.log"
    workdir = Path(tempfile.mkdtemp(prefix="repogym-base-"))
    rootfs = workdir / "rootfs"
    log.info("building base image %s (log: %s)", name, log_path)
    try:
        with log_path.open("w") as log_file:
            _debootstrap(rootfs, suite, mirror, log_file, log_path)
            _configure_rootfs(rootfs, ca_bundle, log_file, log_path)
            tarball = workdir / "rootfs.tar"
            _run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tarball), "."],
                 log_file, log_path, what="tar of the root file system")
        _import(client, tarball, name, log_path)
        log_path.unlink()  # kept only when the build fails
    finally:
        _remove_tree(workdir)


def _run(cmd: list[str], log_file: Any, log_path: Path, *, what: str,
         timeout: float = 600.0) -> None:
    """Run a build command with its output appended to the log; raise on failure."""
    log_file.write(f"$ {' '.join(cmd)}\n")
    log_file.flush()
    try:
        proc = subprocess.run(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise ImageBuildError(f"{what}: {cmd[0]} is not installed (log: {log_path})") from exc
    except subprocess.TimeoutExpired as exc:
        raise ImageBuildError(f"{what} timed out after {timeout:.0f}s (log: {log_path})") from exc
    if proc.returncode != 0:
        raise ImageBuildError(f"{what} failed with exit code {proc.returncode} "
                              f"(log: {log_path})")


def _debootstrap(rootfs: Path, suite: str, mirror: str, log_file: Any, log_path: Path) -> None:
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("building the base image needs `debootstrap` (apt-get install "
                              "debootstrap), or pull/load another base image")
    cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
           suite, str(rootfs), mirror]
    _run(cmd, log_file, log_path, what="debootstrap", timeout=DEBOOTSTRAP_TIMEOUT)


def _configure_rootfs(rootfs: Path, ca_bundle: Path, log_file: Any, log_path: Path) -> None:
    """Host CA bundle, user ``repogym``, no apt caches."""
    if ca_bundle.is_file():
        target = rootfs / CA_PATH.lstrip("/")
        target.unlink(missing_ok=True)  # may be a symlink into the rootfs
        shutil.copyfile(ca_bundle, target)
    else:
        log_file.write(f"# no CA bundle at {ca_bundle}; keeping Debian's\n")
    _run(["chroot", str(rootfs), "useradd", "-m", "-u", str(UID), "-U", "-s", "/bin/bash",
          USER], log_file, log_path, what=f"useradd {USER}")
    _run(["chroot", str(rootfs), "apt-get", "clean"], log_file, log_path, what="apt-get clean")
    for sub in ("var/lib/apt/lists", "var/cache/apt/archives", "var/log/apt"):
        for child in (rootfs / sub).glob("*"):
            if child.is_file() or child.is_symlink():
                child.unlink()


def _import(client: Any, tarball: Path, name: str, log_path: Path) -> None:
    """``docker import`` of the root file system, its bytes sent over the API.

    Sent as data, never as a path: a path that is not a file here would be passed to the
    engine as a URL to fetch (``fromSrc``), and the engine may be another machine.
    """
    from docker.utils import parse_repository_tag

    repository, tag = parse_repository_tag(name)
    try:
        with tarball.open("rb") as data:
            out = client.api.import_image_from_data(data, repository=repository,
                                                    tag=tag or "latest",
                                                    changes=list(BASE_CHANGES))
    except ENGINE_ERRORS as exc:  # before OSError: requests' errors are OSErrors too
        raise ImageBuildError(f"docker import of {name!r} failed: "
                              f"{engine_trouble(exc, client)} (log: {log_path})") from exc
    except OSError as exc:
        raise ImageBuildError(f"cannot read {tarball}: {exc} (log: {log_path})") from exc
    if "error" in str(out).lower() or not image_exists(client, name):
        raise ImageBuildError(f"docker import of {name!r} failed: {out} (log: {log_path})")


def _mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root`` (debootstrap may leave /proc etc. mounted)."""
    prefix = str(root.resolve())
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [line.split()[1] for line in lines if len(line.split()) > 1]
    return [p for p in points if p == prefix or p.startswith(prefix + "/")]


def _remove_tree(path: Path) -> None:
    """Remove a build directory, unmounting anything left mounted inside it first."""
    for point in sorted(_mounts_under(path), reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    if _mounts_under(path):
        log.warning("not removing %s: file systems are still mounted inside it", path)
        return
    shutil.rmtree(path, ignore_errors=True)


LAYER_TIMEOUT = 1800.0


@contextmanager
def build_lock(tag: str) -> Iterator[None]:
    """Hold the host's lock on building image ``tag``: threads and processes of this machine
    (two flows, or test workers, wanting one environment) build it once, the others wait
    and then find it. An ``flock``, so a process that dies lets go."""
    name = hashlib.sha256(tag.encode()).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / "repogym-build-locks"
    folder.mkdir(mode=0o1777, parents=True, exist_ok=True)
    fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases its lock


def ensure_layer_image(client: Any, base_image: str, layer: ImageLayer, *,
                       labels: dict[str, str], log_dir: Path | None = None,
                       timeout: float = LAYER_TIMEOUT) -> str:
    """Make sure a toolchain's layer image over ``base_image`` exists; its tag.

    Built once per content (:meth:`ImageLayer.tag`): the layer's script runs as root in a
    container of the base image with the network on, and the container is committed with
    the layer's variables and the label ``repogym=layer``. Built once on this machine
    (:func:`build_lock`); the build container is removed whatever happens.

    Raises:
        ImageBuildError: the script failed or overran ``timeout`` (the message has the end
            of its output; the whole log goes to ``log_dir`` when given), or the engine did.
    """
    tag = layer.tag(base_image)
    with build_lock(tag):
        if image_exists(client, tag):
            return tag
        log.info("building the %s layer over %s as %s", layer.name, base_image, tag)
        _build_layer(client, base_image, layer, tag, labels, log_dir, timeout)
        return tag


def _build_layer(client: Any, base_image: str, layer: ImageLayer, tag: str,
                 labels: dict[str, str], log_dir: Path | None, timeout: float) -> None:
    import requests

    container = None
    try:
        container = client.containers.create(
            base_image, command=["bash", "-c", layer.script], user="root",
            network_mode="bridge", labels=labels,
            name=f"repogym-layer-{secrets.token_hex(4)}")
        container.start()
        try:
            status = container.wait(timeout=timeout).get("StatusCode", -1)
        except requests.exceptions.RequestException:
            container.kill()
            status = None
        output = container.logs().decode("utf-8", errors="replace")
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / f"layer-{layer.name}.log").write_text(output)
        if status != 0:
            why = f"timed out after {timeout:.0f}s" if status is None else f"exit {status}"
            tail = "\n".join(output.rstrip().splitlines()[-20:])
            raise ImageBuildError(f"the {layer.name} layer over {base_image} failed ({why}):"
                                  f"\n{tail}")
        repository, _, version = tag.rpartition(":")
        conf = {"User": "root", "Cmd": ["/bin/bash"], "Labels": {**labels, "repogym": "layer"},
                "Env": _layer_env(client, base_image, layer)}
        container.commit(repository=repository, tag=version, conf=conf)
    except ENGINE_ERRORS as exc:
        raise ImageBuildError(f"cannot build the {layer.name} layer over {base_image}: "
                              f"{engine_trouble(exc, client)}") from exc
    finally:
        if container is not None:
            remove_container(container, "layer build container")


def _layer_env(client: Any, base_image: str, layer: ImageLayer) -> list[str]:
    """The base image's variables with the layer's over them (``$PATH`` expanded)."""
    pairs = client.images.get(base_image).attrs.get("Config", {}).get("Env") or []
    env = dict(p.split("=", 1) for p in pairs if "=" in p)
    for key, value in layer.env:
        env[key] = value.replace("$PATH", env.get("PATH", "")).replace(
            f"${key}", env.get(key, ""))
    return [f"{k}={v}" for k, v in env.items()]
