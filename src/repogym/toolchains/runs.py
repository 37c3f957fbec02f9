"""What every toolchain's test run does with its sandbox: run the test command without
losing what it streamed when the sandbox breaks under it, and read back the files it wrote."""

from __future__ import annotations

import time

from repogym.errors import SandboxError
from repogym.sandboxes.base import ExecResult, Sandbox


def exec_or_lost(sandbox: Sandbox, cmd: str, *, timeout: float,
                 env: dict[str, str]) -> tuple[ExecResult, str]:
    """Run the test command; when the sandbox breaks under it (the guard stopped it at a
    limit, it was killed), say why instead of raising: what the run streamed until then is
    still worth reading (:meth:`Sandbox.salvage`). The sandbox must then be reset."""
    start = time.monotonic()
    try:
        return sandbox.exec(cmd, timeout=timeout, env=env), ""
    except SandboxError as exc:
        return ExecResult(exit_code=-9, stdout="", stderr=str(exc),
                          duration=time.monotonic() - start), str(exc) or "the sandbox broke"


def salvaged(sandbox: Sandbox, path: str, lost: str) -> str:
    """A file the run wrote ("" if it wrote none); from a broken sandbox when ``lost``."""
    if lost:
        data = sandbox.salvage(path)
        if data is None and path.endswith(".jsonl"):
            raise SandboxError(f"{lost} (and its test report could not be read)")
        return (data or b"").decode("utf-8", errors="replace")
    return read_or_empty(sandbox, path).decode("utf-8", errors="replace")


def drop_scratch(sandbox: Sandbox, path: str) -> None:
    """Remove a run's scratch directory once what the run wrote has been read. A sandbox
    that broke after the run had ended (the guard stopped it at a limit the tests' leftovers
    crossed) does not undo the run: its reset replaces it and takes the directory along."""
    try:
        sandbox.exec(["rm", "-rf", path], timeout=30)
    except SandboxError:
        pass


def text_or_none(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def read_or_empty(sandbox: Sandbox, path: str) -> bytes:
    try:
        return sandbox.read_file(path)
    except FileNotFoundError:
        return b""


__all__ = ["drop_scratch", "exec_or_lost", "read_or_empty", "salvaged", "text_or_none"]
