"""Every ended episode's reward, written before the agent hears of it.

One JSON line per episode, appended, flushed and synced to disk under a lock: a server
that is killed loses no reward it has already given. Lines are :class:`EpisodeRecord`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from datetime import datetime
from pathlib import Path

from repogym.envs.models import EndedBy
from repogym.schemas.records import Record


class EpisodeRecord(Record):
    """One ended episode."""

    episode_id: str
    task_id: str
    language: str
    ended_by: EndedBy | None  # None: abandoned (the session closed before the end)
    reward: float | None  # None: not graded (abandoned, or the sandbox broke)
    resolved: bool = False
    outcomes: dict[str, str | None] = {}
    problems: tuple[str, ...] = ()
    error: str | None = None  # the infrastructure failure that left it ungraded
    steps: int
    seconds: float
    patch: str
    patch_sha256: str
    started_at: datetime
    ended_at: datetime


def patch_digest(patch: str) -> str:
    return hashlib.sha256(patch.encode()).hexdigest()


class Journal:
    """Appends :class:`EpisodeRecord` lines to ``path`` (made with its folder)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def append(self, record: EpisodeRecord) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)

    def read(self) -> list[EpisodeRecord]:
        if not self.path.exists():
            return []
        return [EpisodeRecord.model_validate_json(line)
                for line in self.path.read_text().splitlines() if line.strip()]


__all__ = ["EpisodeRecord", "Journal", "patch_digest"]
