"""On-disk cache of model answers, so a rerun of the same prompts costs nothing.

Layout: one JSON file per answer, ``<cache_dir>/<key[:2]>/<key>.json``, where ``key`` is
the SHA-256 of the request's identity (:func:`cache_key`)::

    {"key": "...", "model": "openai/x", "purpose": "llm_rewrite", "text": "...",
     "cost_usd": 0.0012}

Files are written to a temporary name in the same directory and renamed into place, so
a reader never sees half a file; an unreadable or malformed file counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from repogym.cache import RecordCache

log = logging.getLogger(__name__)


class CachedAnswer(BaseModel):
    """One cached answer (``cost_usd`` is what it cost when it was first made)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    key: str
    model: str
    purpose: str
    text: str
    cost_usd: float = 0.0


def cache_key(model: str, messages: Sequence[Mapping[str, str]], *, temperature: float,
              max_tokens: int, purpose: str, seed: int) -> str:
    """The hex SHA-256 of everything that decides an answer."""
    payload = {"model": model, "messages": [dict(m) for m in messages],
               "temperature": temperature, "max_tokens": max_tokens,
               "purpose": purpose, "seed": seed}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Answers by key under ``root`` (created on first write)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._records = RecordCache(root, CachedAnswer, fanout=2)

    def path(self, key: str) -> Path:
        """The file that holds (or would hold) the answer for ``key``."""
        path = self._records.path(key)
        assert path is not None  # a folder is given
        return path

    def get(self, key: str) -> CachedAnswer | None:
        """The cached answer, or None when absent or unreadable."""
        answer = self._records.get(key)
        return answer if answer is not None and answer.key == key else None

    def put(self, answer: CachedAnswer) -> None:
        """Store ``answer`` atomically (write a temporary file, then rename it)."""
        self._records.put(answer.key, answer)
