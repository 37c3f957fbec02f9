"""The ``docker`` provider: one image per repository, one container per sandbox.

Environment image (built once per :meth:`EnvSpec.digest`)::

    base image + user repogym (uid 1000) + git/procps if missing
    + the checkout at /repo (with .git, owned by repogym)
    + venv /opt/venv, install steps run in it as repogym (network on, host-enforced timeout)
    + /opt/repogym/{post-install.tar, git-meta.tar, home.tar, commit}: what reset restores
    labels repogym=env, repogym.repo, repogym.digest; User root, WorkingDir /repo

The venv is handed to root after the install, so code under test cannot plant a
``sitecustomize`` or ``.pth`` file that outlives a reset.

Sandbox container: PID 1 is ``docker-init`` running ``sleep infinity`` as root; commands
run as ``repogym`` through ``docker exec``; network off unless ``Limits.network``; memory
(no swap), CPU, pids and /tmp size capped; ``no-new-privileges``. Every container carries
the label ``repogym=sandbox`` (or ``repogym=build``), so :meth:`DockerProvider.cleanup`
never touches anything else.

Disk: without xfs project quotas the engine cannot cap a container's writable layer, and
``/repo``, ``$HOME`` and ``/var/tmp`` live on it (on the host's disk). So the container's
main process is a *disk guard* (:data:`GUARD_SOURCE`, root, the image's own ``python3``
run isolated): it polls the free space of the container's root file system (the file
system holding its writable layer) and, once more than ``disk_mb`` of it has gone since
the container started or was last reset, exits with :data:`GUARD_EXIT`, which stops the
container: every process in it dies at once, the next command raises a
:class:`SandboxError` saying why, and :meth:`DockerSandbox.reset` replaces the container
(its writable layer, with what was written, is removed). The measure is the whole file
system's, so other writers on the host count too: a busy host can stop a sandbox early
(an ``infra_error``, judged again later), never let one fill the disk. ``/tmp`` is a
tmpfs capped at half the memory (and charged to the memory limit). An image without
``python3`` runs without the guard (logged).

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
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from importlib import resources
from typing import IO, Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import Ulimit

from repogym.config import Settings
from repogym.errors import ImageBuildError, InstallError, SandboxError
from repogym.sandboxes.agent import Capped
from repogym.sandboxes.base import ExecResult, Limits, Sandbox, SandboxProvider, as_shell
from repogym.sandboxes.channel import (Channel, ChannelClosed, ChannelTimeout,
                                       docker_exec_channel, new_tag)
from repogym.sandboxes.images import (
    docker_client,
    ensure_base_image,
    env_image_tag,
    image_exists,
)
from repogym.schemas.records import EnvImage, EnvSpec

log = logging.getLogger(__name__)

USER = "repogym"
UID = 1000
REPO_DIR = "/repo"
VENV = "/opt/venv"
STATE = "/opt/repogym"
HOME = f"/home/{USER}"
SCRATCH = "/var/tmp"  # scratch_path() lives here (on the container's own file system)
TMPFS_MOUNTS = ("/tmp", "/dev/shm")  # the engine's archive API cannot see into these
HOST_GRACE = 5.0  # seconds the host waits past a command's timeout before killing
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TAIL_LINES = 40

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

SNAPSHOT_SCRIPT = f"""set -e
cd {REPO_DIR}
git ls-files -z --others -x '__pycache__/' -x '*.pyc' | tar --null -T - -cf {STATE}/post-install.tar
git rev-parse HEAD > {STATE}/commit
meta=""
for p in .git/config .git/HEAD .git/info .git/hooks; do [ -e "$p" ] && meta="$meta $p"; done
tar -cf {STATE}/git-meta.tar -T /dev/null $meta
rm -rf {HOME}/.cache/pip
tar -C {HOME} -cf {STATE}/home.tar .
chown -R root:root {VENV}
"""

GUARD_EXIT = 75  # the disk guard's exit code: the sandbox wrote more than its disk limit
GUARD_PID = "/run/repogym-guard.pid"
GUARD_SOURCE = f"""import os, signal, sys, time
limit = int(sys.argv[1]) << 20
def free():
    st = os.statvfs("/")
    return st.f_bavail * st.f_frsize
start = [free()]
def rebase(*_):
    start[0] = free()
signal.signal(signal.SIGUSR1, rebase)
with open("{GUARD_PID}", "w") as fh:
    fh.write(str(os.getpid()))
while True:
    time.sleep(0.1)
    used = start[0] - free()
    if used > limit:
        print("repogym-guard: %d MB written, limit %d MB" % (used >> 20, limit >> 20), flush=True)
        sys.exit({GUARD_EXIT})
"""
# the container's main process: the guard with the image's python3, else plain sleep
GUARD_COMMAND = ('for p in /usr/bin/python3 /usr/local/bin/python3; do '
                 '[ -x "$p" ] && exec "$p" -I -S -c "$0" "$1"; done; exec sleep infinity')

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


class _Capped(Capped):
    """:class:`repogym.sandboxes.agent.Capped` (first and last ``limit // 2`` bytes of a
    stream), read back as text."""

    def text(self) -> str:
        return _capped_text(bytes(self.head), bytes(self.tail), self.dropped)


@dataclass
class _Pump:
    """Reads one exec's multiplexed output in a worker thread."""

    stream: Any
    stdout: _Capped
    stderr: _Capped
    log_file: IO[bytes] | None = None
    error: BaseException | None = None
    thread: threading.Thread = field(init=False)

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True, name="repogym-exec")
        self.thread.start()

    def _run(self) -> None:
        try:
            for out, err in self.stream:
                for data, sink in ((out, self.stdout), (err, self.stderr)):
                    if data:
                        sink.add(data)
                        if self.log_file is not None:
                            self.log_file.write(data)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            self.error = exc
        finally:
            _close_quietly(self.stream)


def _close_quietly(obj: Any) -> None:
    try:
        obj.close()
    except Exception:  # noqa: BLE001 - closing a dead stream
        pass


def run_exec(
    api: docker.APIClient,
    container_id: str,
    cmd: str,
    *,
    timeout: float,
    user: str,
    on_hang: Callable[[], None],
    env: dict[str, str] | None = None,
    workdir: str | None = None,
    output_bytes: int = Limits().output_bytes,
    log_file: IO[bytes] | None = None,
) -> tuple[ExecResult, bool]:
    """Run ``bash -c cmd`` in a container with the time limit enforced inside and out.

    ``on_hang`` is called (it should kill the container) when the command has not come
    back ``HOST_GRACE`` seconds after its timeout. Returns the result and whether the
    host had to step in.

    Raises:
        SandboxError: the engine could not run the command.
    """
    timeout = max(timeout, 0.01)  # `timeout 0` would mean no limit at all
    argv = ["timeout", "-s", "KILL", f"{timeout:.3f}", "bash", "-c", cmd]
    start = time.monotonic()
    try:
        exec_id = api.exec_create(container_id, argv, user=user, environment=env,
                                  workdir=workdir)["Id"]
        pump = _Pump(api.exec_start(exec_id, stream=True, demux=True),
                     _Capped(output_bytes), _Capped(output_bytes), log_file)
    except DockerException as exc:
        raise SandboxError(f"cannot exec in container {container_id[:12]}: {exc}") from exc
    pump.start()
    pump.thread.join(timeout + HOST_GRACE)
    hung = pump.thread.is_alive()
    if hung:
        on_hang()
        pump.thread.join(HOST_GRACE)
    duration = time.monotonic() - start
    code = None if hung else _exit_code(api, exec_id, pump)
    timed_out = hung or (code in (124, 137) and duration >= timeout)
    result = ExecResult(exit_code=-9 if timed_out else int(code or 0), stdout=pump.stdout.text(),
                        stderr=pump.stderr.text(), duration=duration, timed_out=timed_out)
    return result, hung


def _exit_code(api: docker.APIClient, exec_id: str, pump: _Pump) -> int:
    """The finished exec's exit code (the engine may need a moment to record it)."""
    if pump.error is not None:
        raise SandboxError(f"lost the output stream of a command: {pump.error}") from pump.error
    deadline = time.monotonic() + 5.0
    try:
        while True:
            info = api.exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            if time.monotonic() > deadline:
                raise SandboxError("a command finished but the engine reports no exit code "
                                   "(did the container die?)")
            time.sleep(0.02)
    except DockerException as exc:
        raise SandboxError(f"cannot inspect a command's exit code: {exc}") from exc


def _uncap(parts: Sequence[Any]) -> str:
    """The agent's ``[head, tail, dropped]`` as text, like :meth:`_Capped.text`."""
    return _capped_text(base64.b64decode(parts[0]), base64.b64decode(parts[1]), int(parts[2]))


def _capped_text(head: bytes, tail: bytes, dropped: int) -> str:
    mid = f"\n[... {dropped} bytes dropped ...]\n".encode() if dropped else b""
    return (head + mid + tail).decode("utf-8", errors="replace")


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
        except DockerException as exc:
            self._remove()
            raise SandboxError(f"cannot start a sandbox on {self.env.ref}: {exc}") from exc
        self.broken = False

    def _run_kwargs(self) -> dict[str, Any]:
        lim = self.limits
        mem = f"{lim.memory_mb}m"
        tmp_mb = max(64, lim.memory_mb // 2)
        return dict(
            command=["sh", "-c", GUARD_COMMAND, GUARD_SOURCE, str(self.disk_mb)],
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
            except DockerException as exc:
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
        except SandboxError as exc:
            raise self._why_stopped() or exc
        return result

    def _why_stopped(self) -> SandboxError | None:
        """A SandboxError naming the disk guard when it is what stopped the container."""
        if self.container is None or self._running():
            return None
        state = self.container.attrs.get("State") or {}
        if state.get("ExitCode") != GUARD_EXIT:
            return None
        self.broken = True
        return SandboxError(f"the sandbox wrote more than its disk limit ({self.disk_mb} MB); "
                            "the disk guard stopped it")

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

    def _agent_call(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """One agent request; None when the agent is gone or refused (caller falls back).

        Raises:
            ChannelTimeout: no answer in time (the caller decides what that means).
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
            log.warning("sandbox agent gone (%s); falling back to docker exec", exc)
            self._drop_agent()
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
            answer = self._agent_call(request, timeout=timeout + HOST_GRACE)
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
        except DockerException as exc:
            raise SandboxError(f"cannot write {path}: {exc}") from exc

    def _write_via_staging(self, target: str, data: bytes, mode: int) -> None:
        """Write into a tmpfs mount: archive into /var/tmp, then move the file there."""
        staged = f".rg-xfer-{secrets.token_hex(8)}"
        try:
            self.client.api.put_archive(self.container_id, SCRATCH, tar_bytes(staged, data, mode))
        except DockerException as exc:
            raise SandboxError(f"cannot write {target}: {exc}") from exc
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
            except DockerException as exc:
                raise SandboxError(f"cannot read {path}: {exc}") from exc
            if data is not None:
                return data
            target = posixpath.normpath(posixpath.join(posixpath.dirname(target), link or ""))
        raise SandboxError(f"cannot read {path}: too many levels of symbolic links")

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
        except DockerException as exc:
            raise SandboxError(f"cannot read {path}: {exc}") from exc
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
        except DockerException:
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
            try:
                self.container.remove(force=True)
            except NotFound:
                pass
            except DockerException as exc:
                log.warning("could not remove sandbox %s: %s", self.container.short_id, exc)
            self.container = None

    def close(self) -> None:
        """Remove the container. Idempotent; never raises."""
        if not self.closed:
            self.closed = True
            self._remove()


class _BuildContainer:
    """The throw-away container an environment image is built in."""

    def __init__(self, client: docker.DockerClient, container: Container, spec: EnvSpec,
                 timeout: float) -> None:
        self.container, self.spec, self.timeout = container, spec, timeout
        self.api: docker.APIClient = client.api

    def run(self, cmd: str, *, user: str = "root", env: dict[str, str] | None = None,
            workdir: str | None = None, log_file: IO[bytes] | None = None) -> ExecResult:
        result, _ = run_exec(self.api, str(self.container.id), cmd, timeout=self.timeout,
                             user=user, env=env, workdir=workdir, log_file=log_file,
                             on_hang=self.kill)
        return result

    def must(self, cmd: str, what: str, user: str = "root") -> None:
        """Run a housekeeping script; any failure is an ImageBuildError."""
        res = self.run(cmd, user=user)
        if not res.ok:
            detail = "timed out" if res.timed_out else f"exit code {res.exit_code}"
            raise ImageBuildError(f"{self.spec.repo}: {what} failed ({detail}): "
                                  f"{_tail(res.stdout + res.stderr)}")

    def kill(self) -> None:
        try:
            self.container.kill()
        except DockerException:
            pass

    def remove(self) -> None:
        try:
            self.container.remove(force=True)
        except DockerException as exc:
            log.warning("could not remove build container %s: %s", self.container.short_id, exc)

    def copy_repo(self, repo_path: Path) -> None:
        """Copy the checkout (with .git) to /repo, owned by repogym."""
        with tempfile.TemporaryFile() as tmp:
            with tarfile.open(fileobj=tmp, mode="w") as tar:
                tar.add(str(repo_path), arcname=".", filter=_own_by_user)
            tmp.seek(0)
            try:
                self.container.put_archive(REPO_DIR, tmp)
            except DockerException as exc:
                raise ImageBuildError(f"{self.spec.repo}: cannot copy the checkout: {exc}") \
                    from exc


def _own_by_user(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = UID
    info.uname = info.gname = USER
    return info


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _venv_env(client: docker.DockerClient, image: str) -> dict[str, str]:
    """An image's environment with the venv activated (its bin first on PATH)."""
    try:
        pairs = client.images.get(image).attrs.get("Config", {}).get("Env") or []
    except DockerException as exc:
        raise ImageBuildError(f"cannot inspect base image {image!r}: {exc}") from exc
    env = dict(p.split("=", 1) for p in pairs if "=" in p)
    env["PATH"] = f"{VENV}/bin:{env.get('PATH', DEFAULT_PATH)}"
    env["VIRTUAL_ENV"] = VENV
    return env


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
        """Build the environment image (or reuse the one with the same digest); see base."""
        tag = env_image_tag(spec)
        if image_exists(self.client, tag):
            return EnvImage(spec=spec, provider=self.name, ref=tag, repo_dir=REPO_DIR,
                            reused=True)
        start = time.monotonic()
        ensure_base_image(spec.base_image, self.client)
        log_dir.mkdir(parents=True, exist_ok=True)
        build = self._start_build(spec)
        try:
            self._populate(build, repo_path, log_dir)
            self._commit(build, tag)
        except SandboxError as exc:  # the engine failed mid-build
            raise ImageBuildError(f"{spec.repo}: building {tag} failed: {exc}") from exc
        finally:
            build.remove()
        return EnvImage(spec=spec, provider=self.name, ref=tag, repo_dir=REPO_DIR,
                        build_seconds=time.monotonic() - start)

    def _start_build(self, spec: EnvSpec) -> _BuildContainer:
        try:
            container = self.client.containers.run(
                spec.base_image, command=["sleep", "infinity"], detach=True, user="root",
                init=True, network_mode="bridge", labels=self.labels("build"),
                name=f"repogym-build-{spec.digest()}-{secrets.token_hex(3)}",
            )
        except DockerException as exc:
            raise ImageBuildError(f"{spec.repo}: cannot start a build container from "
                                  f"{spec.base_image}: {exc}") from exc
        return _BuildContainer(self.client, container, spec, self.settings.install_timeout)

    def _populate(self, build: _BuildContainer, repo_path: Path, log_dir: Path) -> None:
        spec = build.spec
        build.must(PREPARE_SCRIPT, "preparing the base image (git, procps, user repogym)")
        build.copy_repo(repo_path)
        build.must(f"{spec.python} -m venv {VENV}", f"creating the venv with {spec.python}",
                   user=USER)
        env = {**_venv_env(self.client, spec.base_image), "HOME": HOME}
        for i, step in enumerate(spec.install_steps):
            self._install_step(build, i, step, env, log_dir / f"install-{i}.log")
        build.must(SNAPSHOT_SCRIPT, "snapshotting the post-install state")

    def _install_step(self, build: _BuildContainer, i: int, step: str, env: dict[str, str],
                      log_path: Path) -> None:
        with log_path.open("wb") as log_file:
            log_file.write(f"$ {step}\n".encode())
            res = build.run(step, user=USER, env=env, workdir=REPO_DIR, log_file=log_file)
            if res.timed_out:
                log_file.write(f"\n[killed after {build.timeout:.0f}s]\n".encode())
        if not res.ok:
            tail = _tail(log_path.read_text(errors="replace"))
            raise InstallError(repo=build.spec.repo, step=step, log_path=log_path, tail=tail)

    def _commit(self, build: _BuildContainer, tag: str) -> None:
        spec = build.spec
        repository, _, version = tag.rpartition(":")
        labels = {**self.labels("env"), "repogym.repo": spec.repo,
                  "repogym.digest": spec.digest()}
        env = _venv_env(self.client, spec.base_image)
        conf = {"User": "root", "WorkingDir": REPO_DIR, "Cmd": ["sleep", "infinity"],
                "Env": [f"{k}={v}" for k, v in env.items()], "Labels": labels}
        try:
            build.container.commit(repository=repository, tag=version, conf=conf)
        except DockerException as exc:
            raise ImageBuildError(f"{spec.repo}: cannot commit the environment image: {exc}") \
                from exc

    def open(self, env: EnvImage, limits: Limits | None = None) -> DockerSandbox:
        """Start a sandbox container on ``env`` (see base)."""
        sandbox = DockerSandbox(self.client, env, limits or self.default_limits(),
                                self.labels("sandbox"), agent=self.agent,
                                disk_mb=self.settings.disk_mb)
        sandbox.start()
        return sandbox

    def env_for(self, ref: str) -> EnvImage:
        return EnvImage(provider=self.name, ref=ref, repo_dir=REPO_DIR)

    def cleanup(self) -> int:
        """Remove every container labelled ``repogym=sandbox`` or ``repogym=build`` (only
        this namespace's when one is set); returns how many."""
        removed = 0
        for kind in ("sandbox", "build"):
            labels: list[str] = [f"{k}={v}" for k, v in self.labels(kind).items()]
            for container in self.client.containers.list(all=True, filters={"label": labels}):
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
