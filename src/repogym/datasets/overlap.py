"""Near-duplicate detection between tasks, and against a reference set (decontamination).

A task is two texts: its problem statement and its gold patch. Each becomes a set of
shingles -- the statement's word 4-grams (lower case, punctuation and quoting dropped), the
patch's changed lines (whitespace collapsed, diff headers dropped) -- and a MinHash of them
(``datasketch``, 128 permutations, a fixed seed). Candidate pairs come from MinHash LSH at
half the asked threshold, and every candidate pair's **exact** Jaccard similarity of the
shingle sets is what is reported and compared: LSH only saves the all-pairs work.

A pair overlaps on the larger of its two similarities (statement or patch). Overlaps
under the LSH's reach (below about half the threshold) are reported as 0.

A reference set is a JSONL file of ``{"id", "statement", "patch"}`` objects (either text
may be empty), e.g. a public benchmark's problem statements and gold patches.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, Sequence

from datasketch import MinHash, MinHashLSH

from repogym.errors import InputError
from repogym.schemas.records import Record

NUM_PERM = 128
SEED = 1
STATEMENT_NGRAM = 4
_WORD = re.compile(r"[A-Za-z0-9_]+")


class Doc(Record):
    """One text pair to compare: a task's, or a reference item's."""

    key: str
    statement: str = ""
    patch: str = ""


class Pair(Record):
    """Two docs and how much they overlap (exact Jaccard of their shingles)."""

    a: str
    b: str
    statement: float
    patch: float

    @property
    def score(self) -> float:
        return max(self.statement, self.patch)


def statement_shingles(text: str) -> frozenset[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < STATEMENT_NGRAM:
        return frozenset(words)
    return frozenset(" ".join(words[i:i + STATEMENT_NGRAM])
                     for i in range(len(words) - STATEMENT_NGRAM + 1))


def patch_shingles(patch: str) -> frozenset[str]:
    out = set()
    for line in patch.splitlines():
        if line.startswith(("+++", "---")) or not line.startswith(("+", "-")):
            continue
        body = " ".join(line[1:].split())
        if body:
            out.add(line[0] + body)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _minhash(shingles: Iterable[str]) -> MinHash:
    m = MinHash(num_perm=NUM_PERM, seed=SEED)
    for s in shingles:
        m.update(s.encode())
    return m


class _Field:
    """One text field of every doc: shingles, MinHashes and an LSH index."""

    def __init__(self, shingles: dict[str, frozenset[str]], threshold: float) -> None:
        self.shingles = shingles
        self.lsh = MinHashLSH(threshold=max(0.05, threshold / 2), num_perm=NUM_PERM)
        self.hashes = {k: _minhash(s) for k, s in shingles.items() if s}
        for key, m in self.hashes.items():
            self.lsh.insert(key, m)

    def near(self, shingles: frozenset[str]) -> list[str]:
        return list(self.lsh.query(_minhash(shingles))) if shingles else []


def near_pairs(docs: Sequence[Doc], threshold: float,
               against: Sequence[Doc] | None = None) -> list[Pair]:
    """Every pair whose statement or patch similarity is at least ``threshold``: among
    ``docs`` (each pair once), or between ``docs`` and ``against`` (``a`` from ``docs``)."""
    return [p for p in overlaps(docs, threshold, against) if p.score >= threshold]


def overlaps(docs: Sequence[Doc], threshold: float,
             against: Sequence[Doc] | None = None) -> list[Pair]:
    """The candidate pairs LSH finds (at half ``threshold``), with exact similarities."""
    if not 0 < threshold <= 1:
        raise InputError(f"an overlap threshold is in (0, 1], not {threshold}")
    keys = [d.key for d in docs]
    if len(set(keys)) != len(keys):
        raise InputError("two documents share a key")
    pool = docs if against is None else against
    st = _Field({d.key: statement_shingles(d.statement) for d in pool}, threshold)
    pa = _Field({d.key: patch_shingles(d.patch) for d in pool}, threshold)
    out: dict[tuple[str, str], Pair] = {}
    for doc in docs:
        mine_st, mine_pa = statement_shingles(doc.statement), patch_shingles(doc.patch)
        for other in set(st.near(mine_st)) | set(pa.near(mine_pa)):
            if against is None and other == doc.key:
                continue
            pair_key = (doc.key, other) if against is not None or doc.key < other \
                else (other, doc.key)
            if pair_key in out:
                continue
            out[pair_key] = Pair(a=pair_key[0], b=pair_key[1],
                                 statement=round(jaccard(mine_st, st.shingles[other]), 4),
                                 patch=round(jaccard(mine_pa, pa.shingles[other]), 4))
    return sorted(out.values(), key=lambda p: (-p.score, p.a, p.b))


def load_reference(path: Path) -> list[Doc]:
    """A reference set: JSONL of ``{"id", "statement", "patch"}`` (``problem_statement``
    and ``instance_id``, SWE-bench's names, are read too).

    Raises:
        InputError: the file is missing, or a line is not such an object.
    """
    if not path.is_file():
        raise InputError(f"no reference set at {path}")
    docs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            key = str(raw.get("id") or raw["instance_id"])
        except (json.JSONDecodeError, KeyError, AttributeError, TypeError) as exc:
            raise InputError(f"{path}:{n}: not a reference item ({exc})") from exc
        docs.append(Doc(key=key, statement=str(raw.get("statement")
                                               or raw.get("problem_statement") or ""),
                        patch=str(raw.get("patch") or "")))
    return docs


__all__ = ["Doc", "Pair", "jaccard", "load_reference", "near_pairs", "overlaps",
           "patch_shingles", "statement_shingles"]
