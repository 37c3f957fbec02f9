"""A JSON-lines request/answer channel to a long-lived process inside a sandbox.

A :class:`Channel` writes one JSON object per line to the process's stdin and waits for
one answer line ``"<tag> <json>"`` on its stdout (``<tag>`` is a random token given to the
process, so stray output is never taken for an answer). A background thread reads the
process's output; the caller waits for an answer with a deadline.

Transports: :func:`docker_exec_channel` (a ``docker exec`` with stdin attached; its
stdout/stderr arrive multiplexed on one socket, a unix, TCP, TLS or SSH stream to the
engine) and :func:`popen_channel` (a local subprocess with pipes).
"""

from __future__ import annotations

import json
import queue
import secrets
import socket
import struct
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from repogym.errors import SandboxError

STDERR_KEEP = 8192


class ChannelClosed(SandboxError):
    """The process behind a channel is gone (it exited, was killed, or the stream broke)."""


class ChannelTimeout(SandboxError):
    """No answer came before the deadline; the process may be hung."""


class Channel:
    """Requests and answers over a long-lived process's stdin/stdout (one caller at a time).

    Args:
        send: writes bytes to the process's stdin.
        close: ends the transport (the process sees EOF; a docker exec socket is closed).
        tag: the token answer lines start with.
        pid: the process's pid where known (in the sandbox's pid namespace), else None.
    """

    def __init__(self, send: Callable[[bytes], None], close: Callable[[], None], tag: str,
                 pid: int | None = None) -> None:
        self._send, self._close, self.tag, self.pid = send, close, tag, pid
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._partial = b""
        self._stderr = bytearray()
        self.closed = False
        self._lock = threading.Lock()

    # -- fed by the reader thread ------------------------------------------------------

    def feed_stdout(self, data: bytes) -> None:
        self._partial += data
        *lines, self._partial = self._partial.split(b"\n")
        prefix = self.tag.encode() + b" "
        for line in lines:
            if line.startswith(prefix):
                try:
                    self._answers.put(json.loads(line[len(prefix):]))
                except ValueError:
                    continue

    def feed_stderr(self, data: bytes) -> None:
        self._stderr += data
        del self._stderr[:-STDERR_KEEP]

    def feed_eof(self) -> None:
        self.closed = True
        self._answers.put(None)

    @property
    def stderr(self) -> str:
        """The last bytes the process wrote to stderr (for error messages)."""
        return bytes(self._stderr).decode("utf-8", errors="replace")

    # -- used by the owner -------------------------------------------------------------

    def request(self, obj: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and return its answer.

        Raises:
            ChannelClosed: the process is gone (before or while answering).
            ChannelTimeout: no answer within ``timeout`` seconds.
        """
        with self._lock:
            if self.closed:
                raise ChannelClosed(f"the process is gone: {self.stderr[-300:]}")
            try:
                self._send((json.dumps(obj) + "\n").encode())
            except OSError as exc:
                self.closed = True
                raise ChannelClosed(f"cannot write to the process: {exc}") from exc
            try:
                answer = self._answers.get(timeout=timeout)
            except queue.Empty:
                raise ChannelTimeout(f"no answer within {timeout:.0f}s") from None
            if answer is None:
                raise ChannelClosed(f"the process is gone: {self.stderr[-300:]}")
            return answer

    def close(self) -> None:
        """End the transport. Idempotent; never raises."""
        self.closed = True
        try:
            self._close()
        except Exception:  # noqa: BLE001 - closing a dead transport is not an error
            pass


def new_tag() -> str:
    return "rg" + secrets.token_hex(12)


def _pump(channel: Channel, frames: Iterator[tuple[int, bytes]]) -> None:
    try:
        for stream, data in frames:
            if stream == 2:
                channel.feed_stderr(data)
            else:
                channel.feed_stdout(data)
    except Exception:  # noqa: BLE001 - a broken stream is EOF to the waiting caller
        pass
    finally:
        channel.feed_eof()


def _start_pump(channel: Channel, frames: Iterator[tuple[int, bytes]]) -> None:
    threading.Thread(target=_pump, args=(channel, frames), daemon=True,
                     name="repogym-channel").start()


def docker_exec_channel(api: Any, container_id: str, argv: Sequence[str], *, tag: str,
                        user: str, env: dict[str, str] | None = None,
                        workdir: str | None = None) -> Channel:
    """Start ``argv`` with ``docker exec`` (stdin attached) and return its channel.

    Raises:
        SandboxError: the engine could not start the process.
    """
    from repogym.sandboxes.engine import ENGINE_ERRORS, engine_trouble

    try:
        exec_id = api.exec_create(container_id, list(argv), stdin=True, user=user,
                                  environment=env, workdir=workdir)["Id"]
        sock = api.exec_start(exec_id, socket=True)
    except ENGINE_ERRORS as exc:
        raise SandboxError(f"cannot start a process in {container_id[:12]}: "
                           f"{engine_trouble(exc, api)}") from exc
    raw: socket.socket = getattr(sock, "_sock", sock)
    raw.settimeout(None)  # the client's request timeout must not end an idle channel

    def close() -> None:
        try:
            raw.shutdown(socket.SHUT_RDWR)
        finally:
            raw.close()

    channel = Channel(raw.sendall, close, tag)
    _start_pump(channel, socket_frames(raw))
    return channel


def socket_frames(sock: socket.socket) -> Iterator[tuple[int, bytes]]:
    """``(stream, data)`` frames of an engine's multiplexed stream, until it ends.

    Each frame is an 8-byte header (stream 1 or 2, three zero bytes, big-endian size)
    and its data. Read with plain blocking ``recv`` calls: docker-py's reader polls the
    socket before each read, which, on a TLS connection, waits forever for bytes already
    received and decrypted (they sit in the SSL object, not in the socket), so an answer
    would never arrive.
    """
    while True:
        header = _read_exactly(sock, 8)
        if header is None:
            return
        stream, size = struct.unpack(">BxxxL", header)
        data = _read_exactly(sock, size)
        if data is None:
            return
        yield stream, data


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None at the end of the stream."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def popen_channel(argv: Sequence[str], *, tag: str, env: dict[str, str] | None = None,
                  cwd: str | None = None, **popen: Any) -> Channel:
    """Start ``argv`` as a local subprocess with pipes and return its channel."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd, **popen)
    assert proc.stdin and proc.stdout and proc.stderr

    def send(data: bytes) -> None:
        assert proc.stdin
        proc.stdin.write(data)
        proc.stdin.flush()

    def close() -> None:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    channel = Channel(send, close, tag, pid=proc.pid)

    def frames(pipe: Any, stream: int) -> Iterator[tuple[int, bytes]]:
        while chunk := pipe.read1(65536):
            yield stream, chunk

    _start_pump(channel, frames(proc.stdout, 1))
    def pump_stderr() -> None:
        for _, data in frames(proc.stderr, 2):
            channel.feed_stderr(data)

    threading.Thread(target=pump_stderr, daemon=True).start()
    return channel
