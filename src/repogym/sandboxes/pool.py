"""A pool of warm sandboxes per environment image, shared by live episodes and batched
rewards (:mod:`repogym.envs`, :func:`repogym.datasets.verify.verify_batch`).

* **Warm, reset in place.** A sandbox handed back is reset where it stands
  (:meth:`Sandbox.reset`: the agent's processes killed, the repository, home and scratch
  space back to the image's clean state) and kept for the next lease of its image; the
  provider replaces a container that was killed or whose reset failed. A lease is then one
  health check (a command that must answer), not a container start.
* **Never dirty.** A sandbox is only ever leased after a reset that succeeded; one whose
  reset or health check fails is closed and a fresh one opened in its place.
* **Bounded.** At most ``max_size`` sandboxes exist at once, leased or idle; a lease waits
  for a free slot (at most ``wait`` seconds, then :class:`PoolExhausted`), closing the
  oldest idle sandbox of another image when that makes room.
* **Idle eviction.** Sandboxes idle for longer than ``idle_seconds`` are closed (on every
  lease and hand-back, and by :meth:`evict_idle`, which a server calls on a timer).
* **Cleanup by label.** Every container carries the provider's labels (its namespace when
  one is set): :meth:`close` closes what the pool holds, and the provider's ``cleanup()``
  finds anything a killed process left behind (see :mod:`repogym.sandboxes.reaper`).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from repogym.errors import SandboxError
from repogym.sandboxes.base import Limits, Sandbox, SandboxProvider
from repogym.schemas.records import Record

log = logging.getLogger(__name__)

HEALTH_TIMEOUT = 15.0


class PoolExhausted(SandboxError):
    """No sandbox became free within the wait (every slot is leased)."""


class PoolStats(Record):
    """What the pool did so far (for health endpoints and benchmarks)."""

    size: int  # sandboxes open now, leased or idle
    leased: int
    idle: int
    opened: int  # fresh sandboxes started
    reused: int  # leases served by a warm sandbox
    discarded: int  # closed because a reset or health check failed, or the lease broke
    evicted: int  # closed for being idle too long, or to make room for another image


@dataclass
class _Idle:
    sandbox: Sandbox
    image: str
    since: float


@dataclass
class _Counts:
    opened: int = 0
    reused: int = 0
    discarded: int = 0
    evicted: int = 0


@dataclass
class _State:
    idle: list[_Idle] = field(default_factory=list)
    leased: dict[int, str] = field(default_factory=dict)  # id(sandbox) -> image
    opening: int = 0
    closed: bool = False


class SandboxPool:
    """Warm sandboxes per environment image (see the module docstring).

    Args:
        provider: opens the sandboxes (``provider.env_for(image)``).
        max_size: most sandboxes open at once, leased or idle.
        idle_seconds: an idle sandbox older than this is closed.
        wait: how long a lease waits for a free slot before :class:`PoolExhausted`.
        limits: the sandboxes' resource limits (default: the provider's).
    """

    def __init__(self, provider: SandboxProvider, *, max_size: int = 8,
                 idle_seconds: float = 300.0, wait: float = 600.0,
                 limits: Limits | None = None) -> None:
        if max_size < 1:
            raise ValueError("a pool needs room for at least one sandbox")
        self.provider, self.max_size, self.idle_seconds = provider, max_size, idle_seconds
        self.wait, self.limits = wait, limits
        self._cond = threading.Condition()
        self._state = _State()
        self._counts = _Counts()

    # -- leasing ---------------------------------------------------------------------------

    @contextmanager
    def lease(self, image: str) -> Iterator[Sandbox]:
        """A clean sandbox on ``image`` for the block; handed back (reset) after it, or
        discarded when the block raised."""
        sandbox = self.acquire(image)
        try:
            yield sandbox
        except BaseException:
            self.discard(sandbox)
            raise
        self.release(sandbox)

    def acquire(self, image: str) -> Sandbox:
        """A sandbox on ``image`` in its clean state, leased until :meth:`release`.

        Raises:
            PoolExhausted: no slot came free within ``wait`` seconds.
            SandboxError: a fresh sandbox could not be started.
        """
        deadline = time.monotonic() + self.wait
        while True:
            warm = self._take_warm(image, deadline)
            if warm is None:
                return self._open(image)
            if self._healthy(warm):
                with self._cond:
                    self._counts.reused += 1
                return warm
            self.discard(warm)

    def release(self, sandbox: Sandbox) -> None:
        """Hand a leased sandbox back: reset in place and kept warm, or closed when the
        reset fails (the next lease opens a fresh one). Never raises."""
        image = self._image_of(sandbox)
        try:
            sandbox.reset()
        except Exception as exc:  # a broken sandbox is never handed out again
            log.warning("pool: resetting a sandbox on %s failed (%s); closing it", image, exc)
            self.discard(sandbox)
            return
        with self._cond:
            self._state.leased.pop(id(sandbox), None)
            if self._state.closed:
                to_close: Sandbox | None = sandbox
            else:
                self._state.idle.append(_Idle(sandbox, image, time.monotonic()))
                to_close = None
            self._cond.notify_all()
        if to_close is not None:
            to_close.close()
        self.evict_idle()

    def discard(self, sandbox: Sandbox) -> None:
        """Close a leased (or just checked) sandbox and free its slot. Never raises."""
        with self._cond:
            self._state.leased.pop(id(sandbox), None)
            self._counts.discarded += 1
            self._cond.notify_all()
        sandbox.close()

    # -- housekeeping ----------------------------------------------------------------------

    def evict_idle(self) -> int:
        """Close sandboxes idle for longer than ``idle_seconds``; returns how many."""
        now = time.monotonic()
        with self._cond:
            old = [i for i in self._state.idle if now - i.since > self.idle_seconds]
            self._state.idle = [i for i in self._state.idle if i not in old]
            self._counts.evicted += len(old)
            if old:
                self._cond.notify_all()
        for item in old:
            item.sandbox.close()
        return len(old)

    def stats(self) -> PoolStats:
        with self._cond:
            st, c = self._state, self._counts
            return PoolStats(size=len(st.idle) + len(st.leased) + st.opening,
                             leased=len(st.leased), idle=len(st.idle), opened=c.opened,
                             reused=c.reused, discarded=c.discarded, evicted=c.evicted)

    def close(self) -> None:
        """Close every idle sandbox now and every leased one when it comes back.
        Idempotent; never raises."""
        with self._cond:
            self._state.closed = True
            idle, self._state.idle = self._state.idle, []
            self._cond.notify_all()
        for item in idle:
            item.sandbox.close()

    # -- internals -------------------------------------------------------------------------

    def _take_warm(self, image: str, deadline: float) -> Sandbox | None:
        """An idle sandbox on ``image`` (now leased), or None after reserving a slot for a
        fresh one; waits while the pool is full."""
        with self._cond:
            while True:
                if self._state.closed:
                    raise SandboxError("the sandbox pool is closed")
                for item in reversed(self._state.idle):  # the most recently used first
                    if item.image == image:
                        self._state.idle.remove(item)
                        self._state.leased[id(item.sandbox)] = image
                        return item.sandbox
                if self._room_locked():
                    self._state.opening += 1
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolExhausted(f"no sandbox came free in {self.wait:g} s "
                                        f"({self.max_size} leased)")
                self._cond.wait(timeout=min(left, 1.0))

    def _room_locked(self) -> bool:
        """Whether a fresh sandbox fits, closing the oldest idle one of another image when
        that makes room (the caller holds the lock)."""
        st = self._state
        if len(st.idle) + len(st.leased) + st.opening < self.max_size:
            return True
        if not st.idle:
            return False
        oldest = min(st.idle, key=lambda i: i.since)
        st.idle.remove(oldest)
        self._counts.evicted += 1
        threading.Thread(target=oldest.sandbox.close, daemon=True).start()
        return True

    def _open(self, image: str) -> Sandbox:
        try:
            sandbox = self.provider.open(self.provider.env_for(image), self.limits)
        except BaseException:
            with self._cond:
                self._state.opening -= 1
                self._cond.notify_all()
            raise
        with self._cond:
            self._state.opening -= 1
            self._state.leased[id(sandbox)] = image
            self._counts.opened += 1
        return sandbox

    def _image_of(self, sandbox: Sandbox) -> str:
        with self._cond:
            image = self._state.leased.get(id(sandbox))
        if image is None:
            raise SandboxError("this sandbox is not leased from the pool")
        return image

    @staticmethod
    def _healthy(sandbox: Sandbox) -> bool:
        try:
            return sandbox.exec("true", timeout=HEALTH_TIMEOUT).ok
        except SandboxError as exc:
            log.warning("pool: a warm sandbox failed its health check (%s)", exc)
            return False


__all__ = ["PoolExhausted", "PoolStats", "SandboxPool"]
