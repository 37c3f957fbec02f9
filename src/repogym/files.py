"""Files written whole or not at all: one ``atomic_write`` for every store, cache and state.

A file is written to a ``.tmp-<random>-<name>`` sibling (same directory, so the rename
cannot cross file systems), fsynced, then renamed over its target, and the directory is
fsynced: a reader sees the old file or the new one, never half of one. On any failure, the
temporary file is removed and the error propagates. Temporary files left by a killed
process start with :data:`TMP_PREFIX`, so recovery can find and remove them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Callable

TMP_PREFIX = ".tmp-"


def write_temp(path: Path, write: Callable[[Path], object]) -> Path:
    """Write a fsynced temporary sibling of ``path`` through ``write(tmp)``; its path (the
    caller renames it, or removes it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{secrets.token_hex(6)}-{path.name}")
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


def atomic_write_with(path: Path, write: Callable[[Path], object]) -> None:
    """Replace ``path`` with what ``write(tmp)`` writes to a temporary sibling."""
    path = Path(path)
    tmp = write_temp(path, write)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make the renames done in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    atomic_write_with(Path(path), lambda tmp: tmp.write_bytes(raw))


__all__ = ["TMP_PREFIX", "atomic_write", "atomic_write_with", "fsync_dir", "write_temp"]
