"""The Sandbox contract: where a repository's code runs.

A *provider* (``docker``, ``local``) builds an environment for a repository once
(:meth:`SandboxProvider.build_env`) and opens sandboxes on it
(:meth:`SandboxProvider.open`). A sandbox holds one working copy of the repository at
:attr:`Sandbox.repo_dir`, runs commands in it, and can be reset to the clean state
of the environment (the pinned commit plus whatever the install left behind).

Failure semantics (the same for every provider):

* A command that runs and fails is an :class:`ExecResult` with a non-zero exit code.
* A command that exceeds its time limit is killed from the host; the result has
  ``timed_out=True`` and ``exit_code=-9`` (a sandbox may be replaced behind the scenes).
* A sandbox that breaks (cannot start, cannot exec, disappears) raises
  :class:`~repogym.errors.SandboxError`; the judge turns that into ``infra_error``.
* What a command leaves running in its own process group may be killed when it returns;
  whatever escapes (``setsid``, daemons) is killed by :meth:`Sandbox.reset`.

Relative paths given to :meth:`Sandbox.write_file`, :meth:`Sandbox.read_file` and the
``workdir`` of :meth:`Sandbox.exec` are relative to :attr:`Sandbox.repo_dir`.
"""

from __future__ import annotations

import secrets
import shlex
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Sequence

from pydantic import BaseModel, ConfigDict

from repogym.errors import SandboxError
from repogym.schemas.records import EnvImage, EnvSpec

if TYPE_CHECKING:
    from repogym.sandboxes.channel import Channel


class ExecResult(BaseModel):
    """What one command did. ``exit_code`` is -9 when the command was killed on timeout."""

    model_config = ConfigDict(frozen=True)

    exit_code: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Limits(BaseModel):
    """Resource limits for one sandbox. Providers enforce what they can (see each provider)."""

    model_config = ConfigDict(frozen=True)

    memory_mb: int = 2048
    cpus: float = 1.0
    pids: int = 256
    network: bool = False  # network while tests run; installs always have network
    output_bytes: int = 4 * 1024 * 1024  # stdout/stderr kept per command (the rest is dropped)


APPLY_FALLBACKS = ("", "--recount --ignore-whitespace", "-C1 --recount")


def as_shell(cmd: str | Sequence[str]) -> str:
    """A command as one shell string (a list is quoted word by word)."""
    return cmd if isinstance(cmd, str) else shlex.join(cmd)


class Sandbox(ABC):
    """One isolated working copy of a repository, with its environment.

    Use as a context manager, or call :meth:`close` when done.
    """

    provider: ClassVar[str]

    @property
    @abstractmethod
    def repo_dir(self) -> str:
        """Absolute path of the repository's working copy inside the sandbox."""

    @abstractmethod
    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run a command and wait for it, at most ``timeout`` seconds.

        Args:
            cmd: a shell string (run with ``bash -c``) or an argument list (quoted for you).
            timeout: wall-clock seconds; enforced from the host, which kills the command.
            env: extra environment variables.
            workdir: working directory (relative to :attr:`repo_dir`); default :attr:`repo_dir`.
            user: run as this user; default the sandbox's unprivileged user. ``"root"`` is
                for the pipeline's own housekeeping, never for code under test.

        Returns:
            The :class:`ExecResult`; a failing command is a result, not an exception.

        Raises:
            SandboxError: the sandbox could not run the command at all.
        """

    @abstractmethod
    def write_file(self, path: str, content: bytes | str, *, mode: int = 0o644) -> None:
        """Write a file (parents created), owned by the sandbox's user.

        Raises:
            SandboxError: the sandbox could not write it.
        """

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """Read a file's bytes.

        Raises:
            FileNotFoundError: there is no such file.
            SandboxError: the sandbox could not read it.
        """

    def salvage(self, path: str) -> bytes | None:
        """Read a file the way :meth:`read_file` does, also from a sandbox that broke or was
        stopped (a command overran its time limit, the guard stopped it at a limit) and has
        not been reset yet: what a killed run wrote before it died. None when the file
        cannot be had (missing, or the sandbox is gone). Never raises."""
        try:
            return self.read_file(path)
        except (FileNotFoundError, SandboxError):
            return None

    @abstractmethod
    def reset(self, commit: str | None = None) -> None:
        """Return to the environment's clean state: tracked files as committed, untracked
        files removed (except what the install left behind, which is restored), stray
        processes killed, scratch space emptied.

        Args:
            commit: check out this commit of the repository's history instead of the
                environment's own (mined tasks start from a fix's parent). The caller
                vouches that its dependencies match the environment's.

        Raises:
            SandboxError: the sandbox could not be reset, or has no such commit.
        """

    @abstractmethod
    def close(self) -> None:
        """Release everything the sandbox holds. Idempotent; never raises."""

    def scratch_path(self, suffix: str = "") -> str:
        """A fresh, unguessable path outside the repository (for reports, patches)."""
        return f"/tmp/rg-{secrets.token_hex(16)}{suffix}"

    last_apply_exact: bool = False  # the last apply_patch needed no fallback (exact context)

    def apply_patch(self, diff: str) -> bool:
        """Apply a unified diff to the working copy (``git apply``, then fallbacks).

        Sets :attr:`last_apply_exact` when plain ``git apply`` took it (no fuzz, no recount).

        Returns:
            True when the patch applied (an empty patch applies trivially), else False
            and the working copy is unchanged.

        Raises:
            SandboxError: the sandbox broke while applying.
        """
        self.last_apply_exact = False
        if not diff.strip():
            self.last_apply_exact = True
            return True
        if not diff.endswith("\n"):
            diff += "\n"
        path = self.scratch_path(".diff")
        self.write_file(path, diff)
        # one exec: each way in turn (``git apply`` changes nothing unless every hunk
        # applies); it says which one worked; the patch file is always removed
        tries = " || ".join(f"(git apply {f} {path} 2>/dev/null && echo rg-applied-{i})"
                            for i, f in enumerate(APPLY_FALLBACKS))
        result = self.exec(f"{tries}; rc=$?; rm -f {path}; exit $rc", timeout=120)
        self.last_apply_exact = result.ok and "rg-applied-0" in result.stdout
        return result.ok

    def spawn(self, argv: Sequence[str], *, tag: str, env: dict[str, str] | None = None,
              workdir: str | None = None) -> Channel:
        """Start a long-lived helper process as the sandbox's user; talk to it over a channel.

        The process reads JSON requests on stdin and answers ``"<tag> <json>"`` lines on
        stdout (see :mod:`repogym.sandboxes.channel`). Once the caller sets ``channel.pid``
        (the process's pid as seen inside the sandbox), :meth:`reset` spares it; replacing
        or closing the sandbox ends it. Code under test can still kill it: callers treat a
        closed channel as "start another one".

        Raises:
            SandboxError: the process could not be started.
            NotImplementedError: the provider has no long-lived processes (callers fall back
                to one :meth:`exec` per run).
        """
        raise NotImplementedError(f"the {self.provider} sandbox cannot spawn helper processes")

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SandboxProvider(ABC):
    """Builds environments and opens sandboxes on them. Registered by :attr:`name`."""

    name: ClassVar[str]
    parallel: ClassVar[bool] = True  # several sandboxes may be open on one env at once

    @abstractmethod
    def build_env(self, spec: EnvSpec, repo_path: Path, log_dir: Path) -> EnvImage:
        """Build (or reuse, when one with the same digest exists) a repository's environment.

        Args:
            spec: what goes in (base, commit, install steps); its digest names the result.
            repo_path: the checkout on the host, at ``spec.commit``.
            log_dir: where each install step's full log is written.

        Returns:
            The :class:`EnvImage`; ``reused`` says whether it already existed.

        Raises:
            InstallError: an install step failed, or the install hit a limit of the
                provider's (memory, processes, disk, time: the message names it); the
                step's log is kept in log_dir. The repository's fault, not the engine's.
            ImageBuildError: the environment could not be built for another reason.
        """

    @abstractmethod
    def open(self, env: EnvImage, limits: Limits | None = None) -> Sandbox:
        """Open a sandbox on a built environment, in its clean state.

        Raises:
            SandboxError: it could not be started.
        """

    @abstractmethod
    def env_for(self, ref: str) -> EnvImage:
        """The environment known by ``ref`` (an image tag, an env directory), e.g. from a
        dataset row, without rebuilding it. Opening it fails if it does not exist."""

    @abstractmethod
    def identity(self, ref: str) -> str | None:
        """What the environment known by ``ref`` is now (an image's id, a build's stamp):
        it changes when the environment is rebuilt under the same ``ref``, e.g. with newer
        dependencies. None when no such environment exists.

        Raises:
            SandboxError: the provider could not be asked.
        """

    def cleanup(self) -> int:
        """Remove every sandbox this provider created and left behind; returns how many."""
        return 0
