"""Host-side process helpers for tests that start misbehaving code."""

from __future__ import annotations

import os
import time
from typing import Callable


def pids_marked(mark: str) -> list[int]:
    """Host pids whose command line carries ``mark`` (container processes included)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                if mark.encode() in fh.read():
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def wait_until(cond: Callable[[], object], timeout: float = 10.0) -> bool:
    """Poll ``cond`` every 0.1 s until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return bool(cond())
