"""The ``docker`` provider: one image per repository, one container per sandbox.

Environment images are built by :mod:`repogym.sandboxes.env_build` (the layout, and the
limits the install runs under); the engine is the one the environment names
(:mod:`repogym.sandboxes.engine`: ``DOCKER_HOST`` may be another machine, nothing here
uses a file system shared with it).

Sandbox container: PID 1 is ``docker-init`` running the guard (:mod:`repogym.sandboxes.guard`)
as root; commands run as ``repogym`` through the in-container agent, or one ``docker
exec`` each; network off unless ``Limits.network``; memory (no swap), CPU, pids and /tmp
size capped; ``no-new-privileges``. Every container carries the label ``repogym=sandbox``
(or ``repogym=build``), so :meth:`DockerProvider.cleanup` never touches anything else.

Disk: the guard stops the container once it has written more than ``disk_mb`` since it
started or was last reset: every process in it dies at once, the next command raises a
:class:`SandboxError` saying why, and :meth:`DockerSandbox.reset` replaces the container
(its writable layer, with what was written, is removed). Other writers on the engine's
disk count too: a busy engine can stop a sandbox early (an ``infra_error``, judged again
later), never let one fill the disk. ``/tmp`` is a tmpfs capped at half the memory (and
charged to the memory limit). An image without ``python3`` runs without the guard.

Time limits are enforced twice: ``timeout -s KILL`` inside the container, and from the
host, which kills the whole container when a command has not come back after its
timeout plus a grace period (a command that escaped the inner timeout, e.g. with
``setsid``). The sandbox is then *broken*: the next :meth:`DockerSandbox.reset` starts
a fresh container from the same image.
"""

from __future__ import annotations

import base64
import io
import logging
import posixpath
import secrets
import shlex
import tarfile
import tempfile
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import Ulimit

from repogym.config import Settings
from repogym.errors import ImageBuildError, SandboxError
from repogym.layout import HOME, REPO_DIR, SCRATCH, STATE, TMPFS_MOUNTS, UID, USER, VENV
from repogym.sandboxes.base import ExecResult, Limits, Sandbox, SandboxProvider, as_shell
from repogym.sandboxes.channel import (
    Channel,
    ChannelClosed,
    ChannelTimeout,
    docker_exec_channel,
    new_tag,
)
from repogym.sandboxes.docker_exec import HOST_GRACE, capped_text, run_exec
from repogym.sandboxes.engine import ENGINE_ERRORS, docker_client, engine_trouble, remove_container
from repogym.sandboxes.env_build import build_env_image, prepared_layer, venv_env
from repogym.sandboxes.guard import GUARD_PID, guard_command, stop_reason
from repogym.sandboxes.images import (
    build_lock,
    ensure_base_image,
    ensure_layer_image,
    env_image_tag,
    image_exists,
)
from repogym.schemas.records import EnvImage, EnvSpec

__all__ = ["HOME", "REPO_DIR", "STATE", "USER", "VENV", "DockerProvider", "DockerSandbox",
           "cleanup_images", "run_exec", "tar_bytes"]

_venv_env = venv_env  # the name tests/hostile derive images with

log = logging.getLogger(__name__)


# how long a container whose command failed under it gets to show that it is stopping
STOP_GRACE = 2.0
GIT = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false"
RESET_SCRIPT = f"""keep=" ${{REPOGYM_KEEP:-}} "
strays() {{ for p in $(pgrep -u {USER}); do case "$keep" in *" $p "*) ;; *) echo "$p";; esac; done; }}
for i in $(seq 40); do s=$(strays); [ -z "$s" ] && break; kill -9 $s 2>/dev/null; sleep 0.05; done
set -e
find /tmp {SCRATCH} /dev/shm /run/lock -mindepth 1 -delete 2>/dev/null || true
cd {REPO_DIR}
if [ -d .git ]; then rm -rf .git/info .git/hooks .git/index.lock; fi
tar -xf {STATE}/git-meta.tar --unlink-first
{GIT} reset -q --hard "${{REPOGYM_COMMIT:-$(cat {STATE}/commit)}}"
{GIT} clean -ffdxq
tar -xf {STATE}/post-install.tar
find {HOME} -mindepth 1 -delete
tar -C {HOME} -xf {STATE}/home.tar
find {REPO_DIR} {HOME} ! -user {USER} -exec chown -h {USER}:{USER} {{}} +
if [ -f {GUARD_PID} ]; then kill -USR1 "$(cat {GUARD_PID})" 2>/dev/null || true; fi
"""


def _uncap(parts: Sequence[Any]) -> str:
    """The agent's ``[head, tail, dropped]`` as text, like a capped exec's output."""
    return capped_text(base64.b64decode(parts[0]), base64.b64decode(parts[1]), int(parts[2]))


def _on_tmpfs(path: str) -> bool:
    """Whether ``path`` is on one of the sandbox's tmpfs mounts."""
    return any(path == m or path.startswith(m + "/") for m in TMPFS_MOUNTS)


def tar_bytes(name: str, content: bytes, mode: int, uid: int = UID) -> bytes:
    """A tar archive holding one regular file ``name`` owned by ``uid``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(content), mode, int(time.time())
        info.uid = info.gid = uid
        info.uname = info.gname = USER if uid == UID else "root"
        tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _member_bytes(chunks: Any, path: str) -> tuple[bytes | None, str | None]:
    """(file bytes, None) or (None, symlink target) of the one member of an archive."""
    with tempfile.TemporaryFile() as tmp:
        for chunk in chunks:
            tmp.write(chunk)
        tmp.seek(0)
        with tarfile.open(fileobj=tmp, mode="r") as tar:
            member = tar.next()
            if member is None or member.isdir():
                raise SandboxError(f"cannot read {path}: not a regular file")
            if member.issym():
                return None, member.linkname
            handle = tar.extractfile(member)
            if handle is None:
                raise SandboxError(f"cannot read {path}: not a regular file")
            return handle.read(), None


class DockerSandbox(Sandbox):
    """A container on an environment image; see the module docstring for its limits."""

    provider = "docker"

    def __init__(self, client: docker.DockerClient, env: EnvImage, limits: Limits,
                 labels: dict[str, str], *, agent: bool = True,
                 disk_mb: int = Settings().disk_mb) -> None:
        self.client, self.env, self.limits, self.labels = client, env, limits, labels
        self.disk_mb = disk_mb
        self.use_agent = agent
        self.container: Container | None = None
        self.broken = False
        self.closed = False
        self._agent: Channel | None = None
        self._agent_failed = False
        self._spawned: list[Channel] = []

    @property
    def repo_dir(self) -> str:
        return self.env.repo_dir

    @property
    def container_id(self) -> str:
        if self.closed or self.container is None:
            raise SandboxError("the sandbox is closed")
        if self.broken:
            raise SandboxError("the sandbox was killed (a command overran its time limit); "
                               "call reset() to get a fresh one")
        return str(self.container.id)

    def start(self) -> None:
        """Start a fresh container from the environment image.

        Raises:
            SandboxError: the engine could not start it.
        """
        try:  # create + start, not run: never pull an env image from a registry
            self.container = self.client.containers.create(self.env.ref, **self._run_kwargs())
            self.container.start()
        except ENGINE_ERRORS as exc:
            self._remove()
            raise SandboxError(f"cannot start a sandbox on {self.env.ref}: "
                               f"{engine_trouble(exc, self.client)}") from exc
        self.broken = False

    def _run_kwargs(self) -> dict[str, Any]:
        lim = self.limits
        mem = f"{lim.memory_mb}m"
        tmp_mb = max(64, lim.memory_mb // 2)
        return dict(
            command=guard_command(self.disk_mb),
            user="root", init=True, name=f"repogym-sbx-{secrets.token_hex(6)}", labels=self.labels,
            network_mode="bridge" if lim.network else "none",
            mem_limit=mem, memswap_limit=mem, nano_cpus=int(lim.cpus * 1e9),
            pids_limit=lim.pids, security_opt=["no-new-privileges"],
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={tmp_mb}m,mode=1777"},
            ulimits=[Ulimit(name="core", soft=0, hard=0)], working_dir=self.repo_dir,
        )

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.repo_dir, path))

    def _kill(self) -> None:
        """Kill the container from the host (a command overran); reset() replaces it."""
        self.broken = True
        if self.container is not None:
            try:
                self.container.kill()
            except ENGINE_ERRORS as exc:
                log.warning("could not kill sandbox %s: %s", self.container.short_id, exc)

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run a command as ``repogym`` (unless ``user``); see base.

        Through the container's agent when it runs (one round trip on an open stream),
        else with its own ``docker exec``. Either way the time limit is enforced inside
        and, past a grace period, from the host by killing the container.
        """
        shell = as_shell(cmd)
        workdir_abs = self._abs(workdir or ".")
        try:
            agent = self._agent_channel()
            if agent is not None:
                result = self._agent_exec(agent, shell, timeout=timeout, env=env,
                                          workdir=workdir_abs, user=user or USER)
                if result is not None:
                    return result
            result, _ = run_exec(
                self.client.api, self.container_id, shell, timeout=timeout,
                user=user or USER, env=env, workdir=workdir_abs,
                output_bytes=self.limits.output_bytes, on_hang=self._kill,
            )
            if not result.ok and not self._running():
                # the engine's own failure ("cannot exec in a stopped state", exit 126), or
                # the command's end as the container stopped under it: not the command's
                raise SandboxError("the sandbox stopped during a command")
        except SandboxError as exc:
            raise self._why_stopped() or exc
        return result

    def _why_stopped(self) -> SandboxError | None:
        """A SandboxError naming the limit when one is what stopped the container.

        A command fails a moment before the engine reports its container stopped (the
        guard has exited, the init process is taking the rest down), so a running
        container gets :data:`STOP_GRACE` seconds to show it is stopping.
        """
        deadline = time.monotonic() + STOP_GRACE
        while self.container is not None and self._running():
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)
        if self.container is None:
            return None
        lim = self.limits
        reason = stop_reason(self.container.attrs.get("State") or {}, disk_mb=self.disk_mb,
                             memory_mb=lim.memory_mb, pids=lim.pids)
        if reason is None:
            return None
        self.broken = True
        return SandboxError(f"the sandbox {reason}; the guard stopped it")

    # -- the in-container agent (see repogym.sandboxes.agent) ------------------------------

    def _agent_channel(self) -> Channel | None:
        """The running agent, started on first use; None where it cannot run here."""
        if self._agent is not None and not self._agent.closed:
            return self._agent
        if self._agent_failed or not self.use_agent:
            return None
        cid = self.container_id
        source = resources.files("repogym.sandboxes").joinpath("agent.py").read_text()
        tag = new_tag()
        try:
            channel = docker_exec_channel(
                self.client.api, cid, ["/usr/bin/python3", "-I", "-S", "-u", "-c", source, tag],
                tag=tag, user="root")
            channel.pid = int(channel.request({"op": "ping"}, timeout=30)["pid"])
        except (SandboxError, KeyError, ValueError, TypeError) as exc:
            log.warning("sandbox agent unavailable (%s); using one docker exec per command", exc)
            self._agent_failed = True
            return None
        self._agent = channel
        return channel

    def _drop_agent(self) -> None:
        if self._agent is not None:
            self._agent.close()
            self._agent = None

    def _agent_call(self, request: dict[str, Any], timeout: float, *,
                    again: bool = True) -> dict[str, Any] | None:
        """One agent request; None when the agent is gone or refused (caller falls back).

        ``again=False`` for a request that must not be made twice (a command): an agent that
        dies while it runs one raises instead, since the command may have run, in part or in
        whole, and the container is most likely stopping under it.

        Raises:
            ChannelTimeout: no answer in time (the caller decides what that means).
            SandboxError: the agent died during a request that must not be made again.
        """
        agent = self._agent_channel()
        if agent is None:
            return None
        try:
            answer = agent.request(request, timeout=timeout)
        except ChannelTimeout:
            self._drop_agent()  # a late answer must never be taken for the next one
            raise
        except ChannelClosed as exc:
            self._drop_agent()
            if not again:
                try:
                    self.client.ping()  # the engine itself may be what went away
                except ENGINE_ERRORS as lost:
                    raise SandboxError(f"cannot run a command: "
                                       f"{engine_trouble(lost, self.client)}") from lost
                raise SandboxError(f"the sandbox's agent died during a command ({exc})") \
                    from exc
            log.warning("sandbox agent gone (%s); falling back to docker exec", exc)
            return None
        if "error" in answer:
            log.debug("sandbox agent refused %s: %s", request.get("op"), answer["error"])
            return None
        return answer

    def _agent_exec(self, agent: Channel, shell: str, *, timeout: float,
                    env: dict[str, str] | None, workdir: str, user: str) -> ExecResult | None:
        timeout = max(timeout, 0.01)
        request = {"op": "exec", "argv": ["bash", "-c", shell], "user": user, "env": env or {},
                   "cwd": workdir, "timeout": timeout, "limit": self.limits.output_bytes}
        start = time.monotonic()
        try:
            answer = self._agent_call(request, timeout=timeout + HOST_GRACE, again=False)
        except ChannelTimeout:
            self._kill()
            return ExecResult(exit_code=-9, stdout="", stderr="", timed_out=True,
                              duration=time.monotonic() - start)
        if answer is None:
            return None
        return ExecResult(exit_code=int(answer["exit_code"]), stdout=_uncap(answer["stdout"]),
                          stderr=_uncap(answer["stderr"]), duration=float(answer["duration"]),
                          timed_out=bool(answer["timed_out"]))

    def spawn(self, argv: Sequence[str], *, tag: str, env: dict[str, str] | None = None,
              workdir: str | None = None) -> Channel:
        """Start a long-lived process as ``repogym`` and return its channel (see base).

        :meth:`reset` spares it once its ``pid`` is set on the channel.
        """
        channel = docker_exec_channel(self.client.api, self.container_id, argv, tag=tag,
                                      user=USER, env=env, workdir=self._abs(workdir or "."))
        self._spawned.append(channel)
        return channel

    def _kept_pids(self) -> str:
        self._spawned = [c for c in self._spawned if not c.closed]
        return " ".join(str(c.pid) for c in self._spawned if c.pid)

    def scratch_path(self, suffix: str = "") -> str:
        """A fresh, unguessable path in ``/var/tmp`` (emptied on reset).

        Not in ``/tmp``: that is a tmpfs mount, which the engine's archive API (used by
        :meth:`write_file` and :meth:`read_file`) cannot see, so files there take a slower
        path.
        """
        return f"{SCRATCH}/rg-{secrets.token_hex(16)}{suffix}"

    def write_file(self, path: str, content: bytes | str, *, mode: int = 0o644) -> None:
        """Write a file owned by ``repogym`` (parent directories created as needed)."""
        data = content.encode() if isinstance(content, str) else content
        target = self._abs(path)
        answer = self._agent_call({"op": "write", "path": target, "mode": mode, "user": USER,
                                   "data": base64.b64encode(data).decode()}, timeout=60)
        if answer is not None:
            return
        if _on_tmpfs(target):
            self._write_via_staging(target, data, mode)
            return
        parent, name = posixpath.split(target)
        archive = tar_bytes(name, data, mode)
        try:
            try:
                self.client.api.put_archive(self.container_id, parent, archive)
            except NotFound:
                self._housekeep(f"mkdir -p {shlex.quote(parent)}", f"create {parent}")
                self.client.api.put_archive(self.container_id, parent, archive)
        except ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot write {path}: {engine_trouble(exc, self.client)}") from exc

    def _write_via_staging(self, target: str, data: bytes, mode: int) -> None:
        """Write into a tmpfs mount: archive into /var/tmp, then move the file there."""
        staged = f".rg-xfer-{secrets.token_hex(8)}"
        try:
            self.client.api.put_archive(self.container_id, SCRATCH, tar_bytes(staged, data, mode))
        except ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot write {target}: {engine_trouble(exc, self.client)}") \
                from exc
        parent, quoted = shlex.quote(posixpath.dirname(target)), shlex.quote(target)
        self._housekeep(f"mkdir -p {parent} && mv -f {SCRATCH}/{staged} {quoted}",
                        f"write {target}")

    def _housekeep(self, script: str, what: str) -> None:
        """Run a small file-system chore as ``repogym``, or as root where the user may not.

        Raises:
            SandboxError: it failed either way.
        """
        if self.exec(script, timeout=60).ok:
            return
        res = self.exec(script, timeout=60, user="root")
        if not res.ok:
            raise SandboxError(f"cannot {what}: {(res.stderr or res.stdout).strip()}")

    def read_file(self, path: str) -> bytes:
        """Read a file's bytes (symlinks followed)."""
        target = self._abs(path)
        answer = self._agent_call({"op": "read", "path": target}, timeout=60)
        if answer is not None:
            if answer.get("missing"):
                raise FileNotFoundError(path)
            return base64.b64decode(answer["data"])
        for _ in range(16):
            if _on_tmpfs(target):
                return self._read_via_staging(target, path)
            try:
                chunks, _stat = self.client.api.get_archive(self.container_id, target)
                data, link = _member_bytes(chunks, path)
            except NotFound:
                raise FileNotFoundError(path) from None
            except ENGINE_ERRORS as exc:
                raise SandboxError(f"cannot read {path}: {engine_trouble(exc, self.client)}") \
                    from exc
            if data is not None:
                return data
            target = posixpath.normpath(posixpath.join(posixpath.dirname(target), link or ""))
        raise SandboxError(f"cannot read {path}: too many levels of symbolic links")

    def salvage(self, path: str) -> bytes | None:
        """See base: from a stopped or killed container too, through the engine's archive
        API (it reads a container's file system whether it runs or not; not tmpfs)."""
        if self.container is not None and not self.closed and (self.broken
                                                               or not self._running()):
            target = self._abs(path)
            try:
                chunks, _stat = self.client.api.get_archive(self.container.id, target)
                return _member_bytes(chunks, path)[0]
            except (NotFound, SandboxError, *ENGINE_ERRORS):
                return None
        return super().salvage(path)

    def _read_via_staging(self, target: str, path: str) -> bytes:
        """Read from a tmpfs mount: copy the file to /var/tmp, archive it from there."""
        staged = f"{SCRATCH}/.rg-xfer-{secrets.token_hex(8)}"
        script = (f"[ -e {shlex.quote(target)} ] || exit 44; "
                  f"cp -L -- {shlex.quote(target)} {staged}")
        res = self.exec(script, timeout=60, user="root")
        if res.exit_code == 44:
            raise FileNotFoundError(path)
        if not res.ok:
            raise SandboxError(f"cannot read {path}: {(res.stderr or res.stdout).strip()}")
        try:
            chunks, _stat = self.client.api.get_archive(self.container_id, staged)
            data, _link = _member_bytes(chunks, path)
        except ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot read {path}: {engine_trouble(exc, self.client)}") from exc
        finally:
            self.exec(["rm", "-f", staged], timeout=60, user="root")
        return data or b""

    def reset(self, commit: str | None = None) -> None:
        """Back to the image's clean state (at ``commit`` if given) in one root exec; a fresh
        container if the current one was killed, stopped, or the in-place reset fails."""
        if self.closed:
            raise SandboxError("the sandbox is closed")
        if self.broken or not self._running():
            self._replace()
            if commit is None:
                return
        if commit is not None:
            self._check_commit(commit)
        env = {"REPOGYM_COMMIT": commit} if commit else {}
        env["REPOGYM_KEEP"] = self._kept_pids()
        try:
            res = self.exec(RESET_SCRIPT, timeout=120, user="root", env=env)
        except SandboxError as exc:
            res = None
            log.warning("in-place reset failed (%s); replacing the container", exc)
        if res is None or not res.ok:
            if res is not None:
                log.warning("in-place reset failed (exit %s: %s); replacing the container",
                            res.exit_code, (res.stderr or res.stdout).strip()[-500:])
            self._replace()
            if commit is not None:
                self._must_reset_to(commit)

    def _check_commit(self, commit: str) -> None:
        res = self.exec(f"{GIT} cat-file -e {shlex.quote(commit + '^{commit}')}", timeout=60,
                        user="root")
        if not res.ok:
            raise SandboxError(f"the environment's repository has no commit {commit[:12]}")

    def _must_reset_to(self, commit: str) -> None:
        res = self.exec(RESET_SCRIPT, timeout=120, user="root", env={"REPOGYM_COMMIT": commit})
        if not res.ok:
            raise SandboxError(f"cannot reset to {commit[:12]}: {res.stderr.strip()[-300:]}")

    def _running(self) -> bool:
        if self.container is None:
            return False
        try:
            self.container.reload()
        except ENGINE_ERRORS:
            return False
        return bool(self.container.status == "running")

    def _replace(self) -> None:
        self._remove()
        self.start()

    def _remove(self) -> None:
        self._drop_agent()
        self._agent_failed = False
        for channel in self._spawned:
            channel.close()
        self._spawned = []
        if self.container is not None:
            remove_container(self.container, "sandbox")
            self.container = None

    def close(self) -> None:
        """Remove the container. Idempotent; never raises."""
        if not self.closed:
            self.closed = True
            self._remove()


class DockerProvider(SandboxProvider):
    """Environments as Docker images, sandboxes as containers (see the module docstring).

    Args:
        settings: limits, base image and install timeout come from here.
        client: a ``docker.DockerClient``; default one from the environment.
        namespace: when set, every container and image made here is also labelled
            ``repogym.namespace=<namespace>`` and :meth:`cleanup` only removes those.
        agent: run sandbox commands through the in-container agent (default); False makes
            every command its own ``docker exec`` (for comparisons, or an engine where the
            agent cannot run).
    """

    def __init__(self, settings: Settings | None = None, client: docker.DockerClient | None = None,
                 *, namespace: str | None = None, agent: bool = True) -> None:
        self.settings = settings or Settings()
        self.agent = agent
        try:
            self.client: docker.DockerClient = docker_client(client)
        except ImageBuildError as exc:
            raise SandboxError(str(exc)) from exc
        self.namespace = namespace

    def labels(self, kind: str) -> dict[str, str]:
        """The labels of everything of ``kind`` (sandbox, build, env) made here."""
        labels = {"repogym": kind}
        if self.namespace:
            labels["repogym.namespace"] = self.namespace
        return labels

    def default_limits(self) -> Limits:
        """Limits from the settings (used when :meth:`open` gets none)."""
        s = self.settings
        return Limits(memory_mb=s.memory_mb, cpus=s.cpus, pids=s.pids)

    def build_env(self, spec: EnvSpec, repo_path: Path, log_dir: Path) -> EnvImage:
        """Build the environment image (or reuse the one with the same digest); see base.

        The install runs under the sandbox's memory, CPU and pids limits, with
        ``Settings.build_disk_mb`` of disk and ``Settings.install_timeout`` per step (see
        :mod:`repogym.sandboxes.env_build`); a build that hits one raises an
        :class:`~repogym.errors.InstallError` naming it.
        """
        tag = env_image_tag(spec)
        if image_exists(self.client, tag):
            return EnvImage(spec=spec, provider=self.name, ref=tag, repo_dir=REPO_DIR,
                            reused=True)
        with build_lock(tag):  # another process may be building it: wait and reuse
            if image_exists(self.client, tag):
                return EnvImage(spec=spec, provider=self.name, ref=tag, repo_dir=REPO_DIR,
                                reused=True)
            return self._build_env(spec, repo_path, log_dir, tag)

    def _build_env(self, spec: EnvSpec, repo_path: Path, log_dir: Path,
                   tag: str) -> EnvImage:
        start = time.monotonic()
        ensure_base_image(spec.base_image, self.client)
        log_dir.mkdir(parents=True, exist_ok=True)
        if spec.layer is not None:
            ensure_layer_image(self.client, spec.base_image, spec.layer,
                               labels=self.labels("layer-build"), log_dir=log_dir)
        prepared = ensure_layer_image(self.client, spec.build_from, prepared_layer(spec.python),
                                      labels=self.labels("layer-build"), log_dir=log_dir)
        image_labels = {**self.labels("env"), "repogym.repo": spec.repo,
                        "repogym.digest": spec.digest()}
        build_env_image(self.client, spec, repo_path, log_dir, self.settings, tag,
                        start_from=prepared, build_labels=self.labels("build"),
                        image_labels=image_labels)
        return EnvImage(spec=spec, provider=self.name, ref=tag, repo_dir=REPO_DIR,
                        build_seconds=time.monotonic() - start)

    def open(self, env: EnvImage, limits: Limits | None = None) -> DockerSandbox:
        """Start a sandbox container on ``env`` (see base)."""
        sandbox = DockerSandbox(self.client, env, limits or self.default_limits(),
                                self.labels("sandbox"), agent=self.agent,
                                disk_mb=self.settings.disk_mb)
        sandbox.start()
        return sandbox

    def env_for(self, ref: str) -> EnvImage:
        return EnvImage(provider=self.name, ref=ref, repo_dir=REPO_DIR)

    def identity(self, ref: str) -> str | None:
        """The image's content id (``sha256:...``); a rebuild under the same tag changes it."""
        import docker

        try:
            return str(self.client.images.get(ref).id)
        except docker.errors.ImageNotFound:
            return None
        except ENGINE_ERRORS as exc:
            raise SandboxError(f"cannot inspect image {ref!r}: "
                               f"{engine_trouble(exc, self.client)}") from exc

    def cleanup(self) -> int:
        """Remove every container labelled ``repogym=sandbox`` or ``repogym=build`` (only
        this namespace's when one is set); returns how many."""
        removed = 0
        for kind in ("sandbox", "build"):
            labels: list[str] = [f"{k}={v}" for k, v in self.labels(kind).items()]
            try:
                found = self.client.containers.list(all=True, ignore_removed=True, filters={"label": labels})
            except ENGINE_ERRORS as exc:
                raise SandboxError(f"cannot list containers: {engine_trouble(exc, self.client)}") \
                    from exc
            for container in found:
                try:
                    container.remove(force=True)
                    removed += 1
                except NotFound:
                    pass
        return removed


def cleanup_images(client: docker.DockerClient | None = None, namespace: str | None = None) -> int:
    """Remove environment images (label ``repogym=env``; of ``namespace`` if given).

    Images still used by a container are skipped; unlabelled images are never touched.
    Returns how many were removed.
    """
    client = docker_client(client)
    labels = ["repogym=env"] + ([f"repogym.namespace={namespace}"] if namespace else [])
    removed = 0
    for image in client.images.list(filters={"label": labels}):
        try:
            for ref in image.tags or [image.id]:
                client.images.remove(ref)
            removed += 1
        except (ImageNotFound, NotFound):
            pass
        except APIError as exc:
            log.info("keeping image %s: %s", image.tags or image.id, exc)
    return removed
