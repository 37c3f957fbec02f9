"""One artifact cache: typed records in a folder, one JSON file per key.

    cache = RecordCache(folder, ProbeSet)
    cache.put(key, record)       # written whole (repogym.files.atomic_write), folder made
    cache.get(key)               # the record, or None: absent, unreadable or not valid
    cache.drop(key)

What each cache keeps, and what its key says, belongs to its owner: the probe sets (per test
setup and verifier version), the build failures (per environment spec), the LLM answers
(per prompt), per-test coverage (per env image and report format). A file that does not
parse as the record's model is ignored (logged) and rewritten on the next ``put``: a cache
never fails a run. Keys are made safe as file names; ``fanout`` spreads many small files
over ``key[:fanout]`` sub-folders.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from repogym.files import atomic_write

log = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class RecordCache(Generic[R]):
    """Records of one model by key, under ``folder`` (None: a cache that keeps nothing)."""

    def __init__(self, folder: Path | None, model: type[R], *, fanout: int = 0,
                 indent: int | None = None) -> None:
        self.folder, self.model, self.fanout, self.indent = folder, model, fanout, indent

    def path(self, key: str) -> Path | None:
        """The file that holds (or would hold) ``key``'s record."""
        if self.folder is None:
            return None
        name = _UNSAFE.sub("_", key)
        sub = self.folder / name[:self.fanout] if self.fanout else self.folder
        return sub / f"{name}.json"

    def get(self, key: str) -> R | None:
        path = self.path(key)
        if path is None:
            return None
        try:
            return self.model.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("ignoring unreadable cache file %s: %s", path, exc)
            return None

    def put(self, key: str, record: R) -> None:
        path = self.path(key)
        if path is not None:
            atomic_write(path, record.model_dump_json(indent=self.indent))

    def drop(self, key: str) -> None:
        path = self.path(key)
        if path is not None:
            path.unlink(missing_ok=True)


__all__ = ["RecordCache"]
