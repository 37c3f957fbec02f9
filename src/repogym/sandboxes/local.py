"""The ``local`` provider: a venv and subprocesses on the host.

**This is NOT an isolation boundary.** Commands run as the calling user, on the host's
file system, with the host's network; the ``user`` argument of :meth:`LocalSandbox.exec`
is ignored and ``Limits.network``, ``cpus`` and ``pids`` are not enforced. Use it on
machines without Docker and for speed studies, never for untrusted code.

What it does enforce: the time limit (the command runs in its own session; on timeout
the whole process group is killed), ``RLIMIT_DATA`` from ``Limits.memory_mb`` (private
writable memory, heap and anonymous maps; not ``RLIMIT_AS``, which counts reserved address
space and so breaks WebAssembly in Node, whose memories reserve gigabytes they never touch),
a cap on the size of files written (``RLIMIT_FSIZE``), no core dumps, and a cap on captured
output.

Environment layout (``<cache_dir>/local-envs/<digest>/``, or ``Settings.local_envs``)::

    venv/              the environment's virtualenv (install steps ran with it on PATH)
    home/              the install steps' home (copies of the host's package-manager
                       settings; never the host's own home)
    repo/              the checkout the install ran in; sandboxes work here, in place,
                       because editable installs point at it
    post-install.tar   untracked files the install left in repo/ (restored on reset)
    commit             the commit reset returns to
    scratch/           scratch space (TMPDIR, scratch_path), emptied on reset
    .sandbox.lock      held (fcntl) by the one sandbox using the env
    .repogym-complete  written last: an env without it is rebuilt
"""

from __future__ import annotations

import fcntl
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from repogym.config import Settings
from repogym.errors import ImageBuildError, InstallError, SandboxError
from repogym.layout import TOOL_CACHE
from repogym.sandboxes.base import ExecResult, Limits, Sandbox, SandboxProvider, as_shell
from repogym.sandboxes.channel import Channel, popen_channel
from repogym.schemas.records import EnvImage, EnvSpec

MARKER = ".repogym-complete"
FSIZE_CAP = 4 * 1024**3  # bytes; largest file a command may write
ENV_VAR = "REPOGYM_LOCAL_ENV"  # tags every process a sandbox starts, so reset finds them
_DROPPED_ENV_PREFIXES = ("PYTHON", "PYTEST_", "VIRTUAL_ENV", "CONDA_", ENV_VAR)
TAIL_LINES = 40


def _set_rlimits(memory_mb: int | None) -> None:
    """In the child, before exec: memory (private writable data), file size and core limits.

    Runs as ``preexec_fn``, so it only calls get/setrlimit (no locks, no imports).
    """
    wanted = [(resource.RLIMIT_FSIZE, FSIZE_CAP), (resource.RLIMIT_CORE, 0)]
    if memory_mb:
        wanted.append((resource.RLIMIT_DATA, memory_mb * 1024 * 1024))
    for which, value in wanted:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def _read_capped(handle: IO[bytes], limit: int) -> str:
    """The first and last ``limit // 2`` bytes of a file, with a marker between."""
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    if size <= limit:
        data = handle.read()
    else:
        half = max(limit // 2, 1)
        head = handle.read(half)
        handle.seek(size - half)
        data = head + f"\n[... {size - 2 * half} bytes dropped ...]\n".encode() + handle.read()
    return data.decode("utf-8", errors="replace")


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_local(
    cmd: str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    memory_mb: int | None = None,
    output_bytes: int = Limits().output_bytes,
    log_file: IO[bytes] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> ExecResult:
    """Run ``bash -c cmd`` in its own session; on timeout kill the whole process group.

    With ``log_file``, stdout and stderr both go there (in full) and the result's stdout
    holds the capped log. ``on_start`` gets the process-group id.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sink_out, sink_err = (log_file, subprocess.STDOUT) if log_file else (out, err)
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                ["bash", "-c", cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=sink_out, stderr=sink_err, start_new_session=True,
                preexec_fn=lambda: _set_rlimits(memory_mb),
            )
        except OSError as exc:  # e.g. the working directory does not exist
            return ExecResult(exit_code=126, stdout="", stderr=f"{exc}\n",
                              duration=time.monotonic() - start)
        if on_start:
            on_start(proc.pid)
        timed_out = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _killpg(proc.pid)
            proc.wait()
            code, timed_out = -9, True
        duration = time.monotonic() - start
        stdout = "" if log_file else _read_capped(out, output_bytes)
        stderr = "" if log_file else _read_capped(err, output_bytes)
        return ExecResult(exit_code=code, stdout=stdout, stderr=stderr, duration=duration,
                          timed_out=timed_out)


def host_env(venv: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The host's environment with ``venv`` activated (and the host's own venv dropped)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_ENV_PREFIXES)}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}"
    env["VIRTUAL_ENV"] = str(venv)
    env.update(extra or {})
    return env


# the host's package-manager settings (registry, proxy, CA bundle) an install needs
HOST_SETTINGS = (".npmrc", ".yarnrc", ".yarnrc.yml", ".config/pip/pip.conf", ".pip/pip.conf",
                 ".cargo/config.toml", ".m2/settings.xml", ".gitconfig")


def install_home(home: Path) -> dict[str, str]:
    """A home of the environment's own for its install steps, holding copies of the host's
    package-manager settings: a recipe that cleans its caches (``rm -rf ~/.npm``) must
    never reach the host's home."""
    home.mkdir(parents=True, exist_ok=True)
    real = Path.home()
    for rel in HOST_SETTINGS:
        if (real / rel).is_file():
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(real / rel, home / rel)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_CONFIG_HOME": str(home / ".config")}
    if "RUSTUP_HOME" not in os.environ and (real / ".rustup").is_dir():
        # rustup's cargo and rustc are proxies that find their toolchains in the home
        env["RUSTUP_HOME"] = str(real / ".rustup")
    return env


@contextmanager
def file_lock(path: Path, wait: float | None) -> Iterator[int]:
    """Hold an exclusive ``flock`` on ``path``; wait at most ``wait`` s (None: forever).

    Raises:
        SandboxError: the lock is still held by someone else after ``wait`` seconds.
    """
    fd = acquire_lock(path, wait)
    try:
        yield fd
    finally:
        release_lock(fd)


def acquire_lock(path: Path, wait: float | None) -> int:
    """Open ``path`` and take an exclusive ``flock`` on it; returns the descriptor."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
            return fd
        except BlockingIOError:
            if deadline is not None and time.monotonic() >= deadline:
                os.close(fd)
                raise SandboxError(f"{path.parent} is in use by another sandbox") from None
            time.sleep(0.05)


def release_lock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _marked_pids(marker: bytes) -> list[int]:
    """Processes whose environment carries ``marker`` (Linux /proc; none elsewhere)."""
    pids = []
    for entry in Path("/proc").glob("[0-9]*"):
        pid = int(entry.name)
        if pid == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            pids.append(pid)
    return pids


class LocalSandbox(Sandbox):
    """Works in place in a local environment's ``repo/``, holding its lock.

    NOT an isolation boundary: see the module docstring.
    """

    provider = "local"

    def __init__(self, env: EnvImage, limits: Limits, lock_fd: int) -> None:
        self.env, self.limits, self._lock_fd = env, limits, lock_fd
        self.root = Path(env.ref)
        self.scratch = self.root / "scratch"
        self.marker = f"{ENV_VAR}={self.root}"
        self._groups: set[int] = set()
        self._spawned: list[Channel] = []
        self.closed = False

    @property
    def repo_dir(self) -> str:
        return self.env.repo_dir

    def _path(self, path: str) -> Path:
        return Path(self.repo_dir, path)  # an absolute ``path`` stays as it is

    def _check_open(self) -> None:
        if self.closed:
            raise SandboxError("the sandbox is closed")

    def scratch_path(self, suffix: str = "") -> str:
        """A fresh, unguessable path in the env's scratch directory (emptied on reset)."""
        return str(self.scratch / f"rg-{secrets.token_hex(16)}{suffix}")

    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        tmp = self.scratch / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        name, value = self.marker.split("=", 1)
        return host_env(self.root / "venv", {"TMPDIR": str(tmp), name: value, **(env or {})})

    def spawn(self, argv: Sequence[str], *, tag: str, env: dict[str, str] | None = None,
              workdir: str | None = None) -> Channel:
        """Start a long-lived process in the repo, in its own session; see base."""
        self._check_open()
        try:
            channel = popen_channel(argv, tag=tag, env=self._env(env),
                                    cwd=str(self._path(workdir or ".")), start_new_session=True)
        except OSError as exc:
            raise SandboxError(f"cannot start {argv[0]}: {exc}") from exc
        self._spawned.append(channel)
        return channel

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run ``bash -c`` in the repo (``user`` is ignored); see base."""
        self._check_open()
        full_env = self._env(env)
        return run_local(as_shell(cmd), cwd=self._path(workdir or "."), env=full_env,
                         timeout=timeout, memory_mb=self.limits.memory_mb,
                         output_bytes=self.limits.output_bytes, on_start=self._groups.add)

    def write_file(self, path: str, content: bytes | str, *, mode: int = 0o644) -> None:
        """Write a file (parents created) with ``mode``."""
        self._check_open()
        target = self._path(path)
        data = content.encode() if isinstance(content, str) else content
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(mode)
        except OSError as exc:
            raise SandboxError(f"cannot write {path}: {exc}") from exc

    def read_file(self, path: str) -> bytes:
        """Read a file's bytes."""
        self._check_open()
        try:
            return self._path(path).read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(path) from None
        except OSError as exc:
            raise SandboxError(f"cannot read {path}: {exc}") from exc

    def kill_processes(self, spare_spawned: bool = False) -> None:
        """Kill every process this env's sandboxes started (process groups, then any
        process still carrying the env's marker, e.g. one that called ``setsid``); with
        ``spare_spawned``, not the live processes :meth:`spawn` started."""
        self._spawned = [c for c in self._spawned if not c.closed]
        keep = {c.pid for c in self._spawned if c.pid} if spare_spawned else set()
        if not spare_spawned:
            for channel in self._spawned:
                channel.close()
        for pgid in self._groups:
            _killpg(pgid)
        self._groups.clear()
        deadline = time.monotonic() + 2.0
        while ((pids := set(_marked_pids(self.marker.encode())) - keep)
               and time.monotonic() < deadline):
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.02)

    def reset(self, commit: str | None = None) -> None:
        """Kill stray processes, ``git reset --hard`` to the env's commit (or ``commit``),
        ``git clean -ffdx``, restore the post-install snapshot, empty the scratch directory."""
        self._check_open()
        self.kill_processes(spare_spawned=True)
        try:
            restore_repo(self.root, commit)
            shutil.rmtree(self.scratch, ignore_errors=True)
            (self.scratch / "tmp").mkdir(parents=True)  # TMPDIR of the spawned processes
        except (OSError, subprocess.CalledProcessError, tarfile.TarError) as exc:
            raise SandboxError(f"cannot reset {self.repo_dir}: {exc}") from exc

    def close(self) -> None:
        """Kill the sandbox's processes and release the env. Idempotent; never raises."""
        if self.closed:
            return
        self.closed = True
        try:
            self.kill_processes()
        finally:
            release_lock(self._lock_fd)


_GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run([*_GIT, *args], cwd=repo, check=True, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    return proc.stdout


def restore_repo(root: Path, commit: str | None = None) -> None:
    """``repo/`` back to the env's commit (or ``commit``) plus the post-install snapshot.

    Raises:
        SandboxError: the repository has no such commit.
    """
    repo = root / "repo"
    if commit is not None:
        check = subprocess.run([*_GIT, "cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo,
                               capture_output=True)
        if check.returncode != 0:
            raise SandboxError(f"the environment's repository has no commit {commit[:12]}")
    commit = commit or (root / "commit").read_text().strip()
    _git(repo, "reset", "-q", "--hard", commit)
    _git(repo, "clean", "-ffdxq")
    with tarfile.open(root / "post-install.tar") as tar:
        if hasattr(tarfile, "tar_filter"):
            tar.extractall(repo, filter="tar")
        else:  # Python < 3.11.4
            tar.extractall(repo)


def check_host_layer(spec: EnvSpec) -> None:
    """The host has what the toolchain's layer would add to an image (the local provider
    builds no image): its ``host_check`` passes.

    Raises:
        ImageBuildError: it does not (the message names the layer and the check's output).
    """
    assert spec.layer is not None
    done = subprocess.run(["bash", "-c", spec.layer.host_check], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        raise ImageBuildError(
            f"{spec.repo}: the local provider runs {spec.toolchain} on the host, which lacks "
            f"{spec.layer.name} (`{spec.layer.host_check}`: "
            f"{(done.stdout + done.stderr).strip()[-300:] or f'exit {done.returncode}'})")


def vendor_local(repo: Path, deps: Path, names: Sequence[str]) -> None:
    """Move the untracked dependency folders ``names`` out of ``repo`` into ``deps`` and link
    them back (as :func:`repogym.sandboxes.env_build.vendor_script` does in an image), so a
    reset restores a link, not the folder's every file."""
    if not names:
        return
    tracked = set(filter(None, _git(repo, "ls-files", "-z").split("\0")))
    for folder in sorted(_vendored_folders(repo, set(names))):
        rel = folder.relative_to(repo).as_posix()
        if any(t == rel or t.startswith(rel + "/") for t in tracked):
            continue
        target = deps / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), target)
        folder.symlink_to(target, target_is_directory=True)
        cache = target / ".cache"
        if cache.is_dir() and not cache.is_symlink():
            shutil.rmtree(cache)
        cache.unlink(missing_ok=True)
        cache.symlink_to(TOOL_CACHE, target_is_directory=True)


def _vendored_folders(repo: Path, names: set[str]) -> Iterator[Path]:
    """Folders named one of ``names`` under ``repo`` (not under ``.git`` or another one)."""
    for current, dirs, _files in os.walk(repo):
        here = Path(current)
        for name in list(dirs):
            if name == ".git" or name in names:
                dirs.remove(name)
                if name in names and not (here / name).is_symlink():
                    yield here / name


def snapshot_repo(root: Path) -> None:
    """Record the commit and the untracked files the install left (not bytecode)."""
    repo = root / "repo"
    (root / "commit").write_text(_git(repo, "rev-parse", "HEAD"))
    listing = _git(repo, "ls-files", "-z", "--others", "-x", "__pycache__/", "-x", "*.pyc")
    with tarfile.open(root / "post-install.tar", "w") as tar:
        for name in filter(None, listing.split("\0")):
            tar.add(repo / name, arcname=name, recursive=False)


class LocalProvider(SandboxProvider):
    """Environments as directories of a venv plus a repo copy; see the module docstring.

    NOT an isolation boundary.

    Args:
        settings: cache directory, install timeout and default limits come from here.
        lock_wait: seconds :meth:`open` waits for an env another sandbox is using.
    """

    parallel = False  # one sandbox per env: it works in place in the env's repo copy

    def __init__(self, settings: Settings | None = None, *, lock_wait: float = 60.0) -> None:
        self.settings = settings or Settings()
        self.lock_wait = lock_wait

    def env_dir(self, spec: EnvSpec) -> Path:
        """Where the environment for ``spec`` lives."""
        return (self.settings.local_envs_dir / spec.digest()).resolve()

    def _image(self, spec: EnvSpec, root: Path, **kw: float | bool) -> EnvImage:
        return EnvImage(spec=spec, provider=self.name, ref=str(root),
                        repo_dir=str(root / "repo"), **kw)

    def build_env(self, spec: EnvSpec, repo_path: Path, log_dir: Path) -> EnvImage:
        """Build the env directory (or reuse a complete one); see base."""
        root = self.env_dir(spec)
        with file_lock(root.with_name(root.name + ".build.lock"), wait=None):
            if (root / MARKER).is_file():
                return self._image(spec, root, reused=True)
            start = time.monotonic()
            shutil.rmtree(root, ignore_errors=True)
            try:
                self._build(spec, root, Path(repo_path), log_dir)
            except OSError as exc:
                raise ImageBuildError(f"{spec.repo}: cannot build {root}: {exc}") from exc
            except subprocess.CalledProcessError as exc:
                raise ImageBuildError(f"{spec.repo}: {exc}: {exc.stderr}") from exc
            (root / MARKER).write_text(spec.model_dump_json())
            return self._image(spec, root, build_seconds=time.monotonic() - start)

    def _build(self, spec: EnvSpec, root: Path, repo_path: Path, log_dir: Path) -> None:
        if spec.layer is not None:
            check_host_layer(spec)
        (root / "scratch").mkdir(parents=True)
        shutil.copytree(repo_path, root / "repo", symlinks=True)
        python = shutil.which(spec.python) or sys.executable
        subprocess.run([python, "-m", "venv", str(root / "venv")], check=True,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
        log_dir.mkdir(parents=True, exist_ok=True)
        env = host_env(root / "venv", install_home(root / "home"))
        for i, step in enumerate(spec.install_steps):
            self._install_step(spec, root, step, env, log_dir / f"install-{i}.log")
        vendor_local(root / "repo", root / "deps", spec.vendored)
        snapshot_repo(root)

    def _install_step(self, spec: EnvSpec, root: Path, step: str, env: dict[str, str],
                      log_path: Path) -> None:
        timeout = self.settings.install_timeout
        with log_path.open("wb") as log_file:
            log_file.write(f"$ {step}\n".encode())
            log_file.flush()
            res = run_local(step, cwd=root / "repo", env=env, timeout=timeout,
                            log_file=log_file)
            if res.timed_out:
                log_file.write(f"\n[killed after {timeout:.0f}s]\n".encode())
        if not res.ok:
            lines = log_path.read_text(errors="replace").rstrip().splitlines()
            raise InstallError(repo=spec.repo, step=step, log_path=log_path,
                               tail="\n".join(lines[-TAIL_LINES:]))

    def env_for(self, ref: str) -> EnvImage:
        return EnvImage(provider=self.name, ref=ref, repo_dir=str(Path(ref) / "repo"))

    def identity(self, ref: str) -> str | None:
        """The completion stamp of the env directory: written anew by every build."""
        try:
            stat = (Path(ref) / MARKER).stat()
        except FileNotFoundError:
            return None
        return f"{stat.st_ino}-{stat.st_mtime_ns}"

    def open(self, env: EnvImage, limits: Limits | None = None) -> LocalSandbox:
        """Lock the env (waiting up to ``lock_wait`` s) and reset it; see base."""
        root = Path(env.ref)
        if not (root / MARKER).is_file():
            raise SandboxError(f"{root} is not a complete local environment")
        s = self.settings
        limits = limits or Limits(memory_mb=s.memory_mb, cpus=s.cpus, pids=s.pids)
        sandbox = LocalSandbox(env, limits, acquire_lock(root / ".sandbox.lock",
                                                         self.lock_wait))
        try:
            sandbox.reset()
        except BaseException:
            sandbox.close()
            raise
        return sandbox
