"""Environment images: a repository installed in a throw-away container, then committed.

Environment image (built once per :meth:`EnvSpec.digest`)::

    base image (or the toolchain's layer over it)
    + the prepared layer, once per image to build from and interpreter (:func:`prepared_layer`):
      user repogym (uid 1000), git/procps if missing, venv /opt/venv with current pip,
      setuptools and wheel
    + the checkout at /repo (with .git, owned by repogym), sent as a tar archive
    + install steps run in the venv as repogym
    + /opt/repogym/{post-install.tar, git-meta.tar, home.tar, commit}: what reset restores
    labels repogym=env, repogym.repo, repogym.digest; User root, WorkingDir /repo

The venv is handed to root after the install (what the install wrote; the prepared layer's
files are root's already), so code under test cannot plant a ``sitecustomize`` or ``.pth``
file that outlives a reset.

**Containment.** The install runs the repository's code (``setup.py``, build backends,
whatever pip runs), so the build container gets the limits a sandbox has: memory (no
swap), CPU and pids from the settings, ``no-new-privileges``, no core dumps, and the
guard (:mod:`repogym.sandboxes.guard`) as its main process in *strict* mode, with
``Settings.build_disk_mb`` as its disk limit: it stops the container when the build
writes more than that, when a fork is refused at the pids limit, or when a process is
killed at the memory limit. Each step has ``Settings.install_timeout``, enforced inside
the container and from the host. The network (the engine's bridge, for PyPI) is on
while the install steps run and cut before the snapshot, once every process the install
left running has been killed.

A build that hits a limit ends in an :class:`~repogym.errors.InstallError` (the
repository's fault: the corpus flow does not retry it) whose message names the step and
the limit, and the step's log says the same. Whatever happens, the build container is
removed, and nothing is tagged unless every step passed.

Nothing here relies on a file system shared with the engine: the checkout goes in as a
tar archive over the API (``put_archive``) and the image comes out with ``commit``.
"""

from __future__ import annotations

import logging
import secrets
import shlex
import tarfile
import tempfile
import time
from pathlib import Path
from typing import IO

import docker
from docker.errors import ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import Ulimit

from repogym.config import Settings
from repogym.errors import ImageBuildError, InstallError, SandboxError
from repogym.layout import DEPS, HOME, REPO_DIR, STATE, TOOL_CACHE, UID, USER, VENV
from repogym.sandboxes.base import ExecResult
from repogym.sandboxes.docker_exec import run_exec
from repogym.sandboxes.engine import ENGINE_ERRORS, engine_trouble, remove_container
from repogym.sandboxes.guard import guard_command, stop_reason
from repogym.schemas.records import EnvSpec, ImageLayer

log = logging.getLogger(__name__)

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TAIL_LINES = 40
GUARD_WAIT = 1.0  # seconds a failed step waits for the guard to say a limit stopped it

PREPARE_SCRIPT = f"""set -e
if ! command -v git >/dev/null || ! command -v pkill >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends git procps ca-certificates
  rm -rf /var/lib/apt/lists/*
fi
id -u {USER} >/dev/null 2>&1 || useradd -m -u {UID} -U -s /bin/bash {USER}
git config --system --add safe.directory '*'
mkdir -p {REPO_DIR} {STATE} {VENV}
chown {USER}:{USER} {REPO_DIR} {VENV}
"""

KILL_USER_SCRIPT = f"for i in $(seq 40); do pkill -9 -u {USER} || break; sleep 0.05; done"

SNAPSHOT_SCRIPT = f"""set -e
find /tmp /var/tmp -mindepth 1 -delete 2>/dev/null || true
cd {REPO_DIR}
git ls-files -z --others -x '__pycache__/' -x '*.pyc' | tar --null -T - -cf {STATE}/post-install.tar
git rev-parse HEAD > {STATE}/commit
meta=""
for p in .git/config .git/HEAD .git/info .git/hooks; do [ -e "$p" ] && meta="$meta $p"; done
tar -cf {STATE}/git-meta.tar -T /dev/null $meta
rm -rf {HOME}/.cache/pip
tar -C {HOME} -cf {STATE}/home.tar .
find {VENV} -user {USER} -exec chown -h root:root {{}} +
"""


def venv_script(python: str, venv: str = VENV) -> str:
    """Create the venv at ``venv`` with ``python``, with the current pip, setuptools and
    wheel. Its pip comes from the base's own pip (``--python``, pip 22.3 and later): about
    3 s less than ``venv`` bootstrapping the bundled pip, which would be replaced at once.
    Where the base has no such pip, a plain ``venv``."""
    py, where = shlex.quote(python), shlex.quote(venv)
    return (f"{{ {py} -m venv --without-pip {where} && {py} -m pip --python {where}/bin/python "
            f"install -q --no-cache-dir pip; }} || {{ find {where} -mindepth 1 -delete; "
            f"{py} -m venv {where}; }}\n"
            f"{where}/bin/python -m pip install -q --no-cache-dir -U pip setuptools wheel\n")


PREPARED_VERSION = "2"  # a change here builds every prepared layer again


def prepared_layer(python: str) -> ImageLayer:
    """What every environment build starts from, over its image to build from: user
    ``repogym``, git and procps, and the venv, owned by ``repogym``, with the current pip,
    setuptools and wheel. Built once per image to build from and interpreter
    (:func:`~repogym.sandboxes.images.ensure_layer_image`), it saves each build about 3 s
    (a history's old commits each get an image of their own); the recipe's own first
    step still upgrades what a newer release replaced since."""
    # the files stay root's and only the folders are repogym's, so the install can add,
    # replace and remove files, and the hand-over to root after it (SNAPSHOT_SCRIPT) need
    # not touch -- and copy up -- the files this layer holds
    script = (f"set -euo pipefail\n{PREPARE_SCRIPT}{venv_script(python)}"
              f"find {VENV} -type d -exec chown {USER}:{USER} {{}} +\n")
    return ImageLayer(name=f"prepared-{PREPARED_VERSION}-{python}", script=script)


def vendor_script(names: tuple[str, ...], deps: str = DEPS) -> str:
    """Move every untracked folder of one of ``names`` (``node_modules``, at any depth but
    not inside another) from the work tree to ``deps``, leave a link where it was, and hand
    it to root: a reset restores the link, and code under test cannot change what the
    environment installed. Its ``.cache`` (where ava, babel and others keep caches) becomes
    a link to :data:`~repogym.layout.TOOL_CACHE`, a temporary folder a reset empties."""
    found = " -o ".join(f"-name {shlex.quote(n)}" for n in names)
    return f"""set -e
cd {REPO_DIR}
mkdir -p {deps}
find . -name .git -prune -o -type d \\( {found} \\) -prune -print | while read -r d; do
  rel=${{d#./}}
  if git ls-files --error-unmatch -- "$rel" >/dev/null 2>&1; then continue; fi
  mkdir -p "$(dirname "{deps}/$rel")"
  mv "$d" "{deps}/$rel"
  ln -s "{deps}/$rel" "$d"
  rm -rf "{deps}/$rel/.cache" && ln -s {TOOL_CACHE} "{deps}/$rel/.cache"
done
chown -R -h root:root {deps}
"""


def build_env_image(client: docker.DockerClient, spec: EnvSpec, repo_path: Path,
                    log_dir: Path, settings: Settings, tag: str, *, start_from: str,
                    build_labels: dict[str, str], image_labels: dict[str, str]) -> None:
    """Build ``spec``'s environment from ``repo_path`` in a container of ``start_from``
    (the :func:`prepared_layer` over ``spec.build_from``) and tag it ``tag``.

    ``build_labels`` go on the build container, ``image_labels`` on the image.

    Raises:
        InstallError: an install step failed, or the build hit a limit (the message names
            the step and the limit; the step's log is in ``log_dir``).
        ImageBuildError: the engine failed, or a step of repogym's own failed.
    """
    build = BuildContainer(client, spec, settings, build_labels)
    build.start(start_from)
    try:
        build.copy_repo(repo_path)
        env = {**venv_env(client, spec.build_from), "HOME": HOME}
        for i, step in enumerate(spec.install_steps):
            build.install_step(step, env, log_dir / f"install-{i}.log")
        build.go_offline()
        if spec.vendored:
            build.must(vendor_script(spec.vendored), "moving the dependency folders out of "
                       "the work tree")
        build.must(SNAPSHOT_SCRIPT, "snapshotting the post-install state")
        build.commit(tag, image_labels)
    except SandboxError as exc:  # the engine failed mid-build
        raise ImageBuildError(f"{spec.repo}: building {tag} failed: {exc}") from exc
    finally:
        build.remove()


class BuildContainer:
    """The throw-away container an environment image is built in (see the module doc).

    Args:
        client: the engine's client.
        spec: what is built.
        settings: limits (``memory_mb``, ``cpus``, ``pids``, ``build_disk_mb``) and the
            time limit of each step (``install_timeout``).
        labels: the container's labels.
    """

    def __init__(self, client: docker.DockerClient, spec: EnvSpec, settings: Settings,
                 labels: dict[str, str]) -> None:
        self.client, self.spec, self.settings, self.labels = client, spec, settings, labels
        self.api: docker.APIClient = client.api
        self.container: Container | None = None
        # the repository's last step: what a limit hit later in the build is blamed on
        self.last_step: tuple[str, Path | None] | None = None

    @property
    def timeout(self) -> float:
        return self.settings.install_timeout

    @property
    def cid(self) -> str:
        assert self.container is not None, "start() first"
        return str(self.container.id)

    def start(self, image: str) -> None:
        """Create and start the container of ``image`` (never pulls: it is made sure of).

        Raises:
            ImageBuildError: the engine could not start it.
        """
        s, spec = self.settings, self.spec
        mem = f"{s.memory_mb}m"
        try:
            self.container = self.client.containers.create(
                image, command=guard_command(s.build_disk_mb, strict=True),
                user="root", init=True, network_mode="bridge", labels=self.labels,
                name=f"repogym-build-{spec.digest()}-{secrets.token_hex(3)}",
                mem_limit=mem, memswap_limit=mem, nano_cpus=int(s.cpus * 1e9),
                pids_limit=s.pids, security_opt=["no-new-privileges"],
                ulimits=[Ulimit(name="core", soft=0, hard=0)])
            self.container.start()
        except ENGINE_ERRORS as exc:
            self.remove()
            raise ImageBuildError(f"{spec.repo}: cannot start a build container from "
                                  f"{image}: {engine_trouble(exc, self.client)}") \
                from exc

    def run(self, cmd: str, *, user: str = "root", env: dict[str, str] | None = None,
            workdir: str | None = None, log_file: IO[bytes] | None = None) -> ExecResult:
        """Run one command under the step time limit.

        Raises:
            SandboxError: the engine could not run it.
        """
        result, _ = run_exec(self.api, self.cid, cmd, timeout=self.timeout, user=user, env=env,
                             workdir=workdir, log_file=log_file, on_hang=self.kill)
        return result

    def install_step(self, step: str, env: dict[str, str], log_path: Path) -> None:
        """Run one of the repository's install steps as ``repogym``, logged to ``log_path``.

        Raises:
            InstallError: it failed, timed out, or hit a limit.
            SandboxError: the engine lost it (and no limit explains why).
        """
        self.last_step = (step, log_path)
        lost: SandboxError | None = None
        with log_path.open("wb") as log_file:
            log_file.write(f"$ {step}\n".encode())
            try:
                res: ExecResult | None = self.run(step, user=USER, env=env, workdir=REPO_DIR,
                                                  log_file=log_file)
            except SandboxError as exc:
                res, lost = None, exc
            reason = None if res is not None and res.ok else self._why_failed(res)
            if reason:
                log_file.write(f"\n[repogym: the build {reason}]\n".encode())
        if reason:
            raise self._limit_error(step, log_path, reason)
        if res is None:
            assert lost is not None
            raise lost
        if not res.ok:
            tail = _tail(log_path.read_text(errors="replace"))
            raise InstallError(repo=self.spec.repo, step=step, log_path=log_path, tail=tail)

    def must(self, cmd: str, what: str, user: str = "root") -> None:
        """Run one of repogym's own steps; a failure is an ImageBuildError, unless a limit
        stopped the build (then it is the repository's: an InstallError).

        Raises:
            InstallError: the build hit a limit (blamed on the last install step, if any).
            ImageBuildError: the step failed.
            SandboxError: the engine lost it.
        """
        try:
            res = self.run(cmd, user=user)
        except SandboxError as exc:
            reason = self.limit_hit(wait=GUARD_WAIT)
            if reason:
                raise self._limit_error(*(self.last_step or (what, None)), reason) from exc
            raise
        if res.ok:
            return
        reason = self.limit_hit(wait=GUARD_WAIT)
        if reason:
            raise self._limit_error(*(self.last_step or (what, None)), reason)
        detail = "timed out" if res.timed_out else f"exit code {res.exit_code}"
        raise ImageBuildError(f"{self.spec.repo}: {what} failed ({detail}): "
                              f"{_tail(res.stdout + res.stderr)}")

    def _why_failed(self, res: ExecResult | None) -> str | None:
        """The limit a failed step hit, if any (waiting briefly for the guard)."""
        reason = self.limit_hit(wait=GUARD_WAIT)
        if reason is None and res is not None and res.timed_out:
            reason = f"ran out of its time limit ({self.timeout:.0f} s per step)"
        return reason

    def limit_hit(self, wait: float = 0.0) -> str | None:
        """Which limit stopped the container (see :func:`stop_reason`), or None.

        While the container still runs, waits up to ``wait`` seconds for the guard.
        """
        s = self.settings
        deadline = time.monotonic() + wait
        while True:
            try:
                assert self.container is not None
                self.container.reload()
            except ENGINE_ERRORS:
                return None
            state = self.container.attrs.get("State") or {}
            reason = stop_reason(state, disk_mb=s.build_disk_mb, memory_mb=s.memory_mb,
                                 pids=s.pids)
            if reason or not state.get("Running") or time.monotonic() >= deadline:
                return reason
            time.sleep(0.1)

    def _limit_error(self, step: str, log_path: Path | None, reason: str) -> InstallError:
        tail = _tail(log_path.read_text(errors="replace")) if log_path and log_path.exists() \
            else ""
        return InstallError(repo=self.spec.repo, step=step, log_path=log_path, tail=tail,
                            limit=reason)

    def copy_repo(self, repo_path: Path) -> None:
        """Copy the checkout (with .git) to /repo, owned by repogym, as a tar archive.

        Raises:
            InstallError: the checkout alone is more than the disk limit.
            ImageBuildError: the engine refused it.
        """
        with tempfile.TemporaryFile() as tmp:
            with tarfile.open(fileobj=tmp, mode="w") as tar:
                tar.add(str(repo_path), arcname=".", filter=_own_by_user)
            tmp.seek(0)
            try:
                self.api.put_archive(self.cid, REPO_DIR, tmp)
            except ENGINE_ERRORS as exc:
                reason = self.limit_hit(wait=GUARD_WAIT)
                if reason:
                    raise self._limit_error("copying the checkout", None, reason) from exc
                raise ImageBuildError(f"{self.spec.repo}: cannot copy the checkout: "
                                      f"{engine_trouble(exc, self.client)}") from exc

    def go_offline(self) -> None:
        """Kill what the install left running, then cut the container's network."""
        self.must(KILL_USER_SCRIPT, "stopping what the install left running")
        assert self.container is not None
        try:
            self.container.reload()
            networks = (self.container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
            for name in networks:
                self.api.disconnect_container_from_network(self.cid, name, force=True)
        except ENGINE_ERRORS as exc:
            raise ImageBuildError(f"{self.spec.repo}: cannot cut the build's network: "
                                  f"{engine_trouble(exc, self.client)}") from exc

    def commit(self, tag: str, labels: dict[str, str]) -> None:
        """Commit the container as ``tag`` (it must still be running: no limit was hit).

        Raises:
            InstallError: a limit stopped the build after its last step.
            ImageBuildError: the engine could not commit it (no tag is left behind).
        """
        reason = self.limit_hit()
        if reason:
            raise self._limit_error(*(self.last_step or ("snapshot", None)), reason)
        repository, _, version = tag.rpartition(":")
        env = venv_env(self.client, self.spec.build_from)
        conf = {"User": "root", "WorkingDir": REPO_DIR, "Cmd": ["sleep", "infinity"],
                "Env": [f"{k}={v}" for k, v in env.items()], "Labels": labels}
        assert self.container is not None
        try:
            self.container.commit(repository=repository, tag=version, conf=conf)
        except ENGINE_ERRORS as exc:
            self._untag(tag)  # the engine may have made it before the call failed
            raise ImageBuildError(f"{self.spec.repo}: cannot commit the environment image: "
                                  f"{engine_trouble(exc, self.client)}") from exc

    def _untag(self, tag: str) -> None:
        try:
            self.client.images.remove(tag, force=True)
        except (ImageNotFound, NotFound):
            pass
        except ENGINE_ERRORS as exc:
            log.warning("could not remove the half-made image %s: %s", tag, exc)

    def kill(self) -> None:
        """Kill the container (a step overran its time limit)."""
        if self.container is not None:
            try:
                self.container.kill()
            except ENGINE_ERRORS:
                pass

    def remove(self) -> None:
        """Remove the container. Never raises."""
        if self.container is not None:
            remove_container(self.container, "build container")


def venv_env(client: docker.DockerClient, image: str) -> dict[str, str]:
    """An image's environment with the venv activated (its bin first on PATH).

    Raises:
        ImageBuildError: the image cannot be inspected.
    """
    try:
        pairs = client.images.get(image).attrs.get("Config", {}).get("Env") or []
    except ENGINE_ERRORS as exc:
        raise ImageBuildError(f"cannot inspect base image {image!r}: "
                              f"{engine_trouble(exc, client)}") from exc
    env = dict(p.split("=", 1) for p in pairs if "=" in p)
    env["PATH"] = f"{VENV}/bin:{env.get('PATH', DEFAULT_PATH)}"
    env["VIRTUAL_ENV"] = VENV
    return env


def _own_by_user(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = UID
    info.uname = info.gname = USER
    return info


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
