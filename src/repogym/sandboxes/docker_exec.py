"""Commands in a container, one ``docker exec`` each, with the time limit enforced twice.

:func:`run_exec` runs ``bash -c CMD`` under ``timeout -s KILL`` inside the container and
watches it from the host: a command that has not come back ``HOST_GRACE`` seconds after
its timeout (it escaped the inner timeout, e.g. with ``setsid``) makes the host call
``on_hang``, which kills the container. Output is capped (first and last halves kept) and
may be copied to a log file as it arrives. Used by sandboxes (when their agent cannot
run) and by environment builds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

import docker

from repogym.errors import SandboxError
from repogym.sandboxes.agent import Capped
from repogym.sandboxes.base import ExecResult, Limits
from repogym.sandboxes.engine import ENGINE_ERRORS, engine_trouble

HOST_GRACE = 5.0  # seconds the host waits past a command's timeout before killing


class CappedText(Capped):
    """:class:`repogym.sandboxes.agent.Capped` (first and last ``limit // 2`` bytes of a
    stream), read back as text."""

    def text(self) -> str:
        return capped_text(bytes(self.head), bytes(self.tail), self.dropped)


@dataclass
class _Pump:
    """Reads one exec's multiplexed output in a worker thread."""

    stream: Any
    stdout: CappedText
    stderr: CappedText
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
                     CappedText(output_bytes), CappedText(output_bytes), log_file)
    except ENGINE_ERRORS as exc:
        raise SandboxError(f"cannot exec in container {container_id[:12]}: "
                           f"{engine_trouble(exc, api)}") from exc
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
        raise SandboxError(f"lost the output stream of a command: "
                           f"{engine_trouble(pump.error, api)}") from pump.error
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
    except ENGINE_ERRORS as exc:
        raise SandboxError(f"cannot inspect a command's exit code: "
                           f"{engine_trouble(exc, api)}") from exc


def capped_text(head: bytes, tail: bytes, dropped: int) -> str:
    """A capped stream as text, with how much was dropped in the middle."""
    mid = f"\n[... {dropped} bytes dropped ...]\n".encode() if dropped else b""
    return (head + mid + tail).decode("utf-8", errors="replace")
