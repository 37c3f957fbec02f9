"""Train / validation / test splits of a snapshot, kept apart from each other and from a
reference set (``repogym dataset split``).

Tasks are first put in **groups** that must not straddle a split (a union of):

* the grouping asked for -- ``function`` (default: a synthetic task's function; a mined
  task's fix commit), ``file`` (every file a task changes) or ``repo``;
* a combined bug with each of its parts;
* near-duplicates: two tasks whose statements or gold patches overlap at least
  ``threshold`` (:mod:`repogym.datasets.overlap`, exact Jaccard of their shingles).

Then each group goes to a split:

* with a ``cutoff`` date, the eval splits (validation and test) hold only groups whose
  tasks are all mined from commits authored after it; every other group is train;
* without one, a stable hash of the group's key sends ``eval_fraction`` of the groups to
  eval;
* eval groups go to validation or test by the same hash (``validation_share``);
* a group any of whose tasks overlaps the reference set at least ``threshold`` is a
  **suspect** and goes to train, whatever the rules above said.

So, by construction, no eval task has a near-duplicate in train and no eval task is a
suspect. Each task's ``max_overlap`` (with which task) and ``reference_overlap`` (with which
reference item) are kept in the split file, ``splits/<name>.json`` inside the snapshot.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Sequence

from repogym.datasets.overlap import Doc, Pair, near_pairs, overlaps
from repogym.errors import InputError
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import CandidateKind, Record


class Split(str, Enum):
    train = "train"
    validation = "validation"
    test = "test"


EVAL = (Split.validation, Split.test)


class GroupBy(str, Enum):
    function = "function"
    file = "file"
    repo = "repo"


class SplitSettings(Record):
    cutoff: datetime | None = None
    eval_fraction: float = 0.2
    validation_share: float = 0.5
    group_by: GroupBy = GroupBy.function
    threshold: float = 0.5
    seed: str = "repogym"


class TaskSplit(Record):
    """Where one task went, and why it could not go elsewhere."""

    instance_id: str
    split: Split
    group: str
    max_overlap: float = 0.0  # with another task of the dataset
    overlap_with: str | None = None
    reference_overlap: float = 0.0
    reference_with: str | None = None
    suspect: bool = False  # overlaps the reference set: kept out of eval


class SplitPlan(Record):
    name: str
    snapshot: str | None
    settings: SplitSettings
    reference: str | None = None
    counts: dict[str, int]
    suspects: int
    near_duplicate_rate: float  # share of tasks with a near-duplicate in the dataset
    tasks: tuple[TaskSplit, ...]

    def ids(self, split: Split) -> list[str]:
        return [t.instance_id for t in self.tasks if t.split is split]


class _Groups:
    """Union-find over task ids."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.parent = {i: i for i in ids}

    def find(self, i: str) -> str:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def group_keys(row: TaskRow, by: GroupBy) -> list[str]:
    """The keys that tie ``row`` to other tasks under ``by``."""
    if by is GroupBy.repo:
        return [f"repo:{row.repo}"]
    if by is GroupBy.file or row.kind is CandidateKind.mined:
        if by is GroupBy.function and row.kind is CandidateKind.mined:
            return [f"commit:{row.repo}:{row.provenance.get('commit', row.instance_id)}"]
        return [f"file:{row.repo}:{path}" for path in row.files] or [f"task:{row.instance_id}"]
    function = row.provenance.get("function", "")
    if function:
        return [f"function:{row.repo}:{path}:{function}" for path in row.files[:1]]
    return [f"file:{row.repo}:{path}" for path in row.files] or [f"task:{row.instance_id}"]


def _fraction(key: str, seed: str) -> float:
    digest = hashlib.sha256(f"{seed}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _authored(row: TaskRow) -> datetime | None:
    raw = row.provenance.get("author_date")
    if not raw:
        return None
    when = datetime.fromisoformat(raw)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def docs_of(rows: Sequence[TaskRow]) -> list[Doc]:
    return [Doc(key=r.instance_id, statement=r.problem_statement, patch=r.patch) for r in rows]


def plan_splits(rows: Sequence[TaskRow], settings: SplitSettings, *, name: str,
                snapshot: str | None = None, reference: Sequence[Doc] = (),
                reference_name: str | None = None) -> SplitPlan:
    """Assign every task to a split (see the module docstring).

    Raises:
        InputError: a setting is out of range.
    """
    if not 0 <= settings.eval_fraction <= 1 or not 0 <= settings.validation_share <= 1:
        raise InputError("eval_fraction and validation_share are fractions in [0, 1]")
    ids = [r.instance_id for r in rows]
    groups = _Groups(ids)
    first: dict[str, str] = {}
    for row in rows:
        for key in group_keys(row, settings.group_by):
            groups.join(row.instance_id, first.setdefault(key, row.instance_id))
        for part in filter(None, row.provenance.get("parts", "").split(",")):
            if part in groups.parent:
                groups.join(row.instance_id, part)
    docs = docs_of(rows)
    inner = overlaps(docs, settings.threshold)
    for pair in inner:
        if pair.score >= settings.threshold:
            groups.join(pair.a, pair.b)
    best = _best(inner, ids)
    ref = _best(near_pairs(docs, settings.threshold, against=reference), ids) \
        if reference else {}
    members: dict[str, list[TaskRow]] = {}
    for row in rows:
        members.setdefault(groups.find(row.instance_id), []).append(row)
    assigned: list[TaskSplit] = []
    for root, group in sorted(members.items()):
        suspect = any(r.instance_id in ref for r in group)
        split = Split.train if suspect else _split_of(root, group, settings)
        for row in group:
            near, ref_near = best.get(row.instance_id), ref.get(row.instance_id)
            assigned.append(TaskSplit(
                instance_id=row.instance_id, split=split, group=root, suspect=suspect,
                max_overlap=near[0] if near else 0.0, overlap_with=near[1] if near else None,
                reference_overlap=ref_near[0] if ref_near else 0.0,
                reference_with=ref_near[1] if ref_near else None))
    assigned.sort(key=lambda t: t.instance_id)
    counts = {s.value: sum(t.split is s for t in assigned) for s in Split}
    dup = sum(1 for t in assigned if t.max_overlap >= settings.threshold)
    return SplitPlan(name=name, snapshot=snapshot, settings=settings, reference=reference_name,
                     counts=counts, suspects=sum(t.suspect for t in assigned),
                     near_duplicate_rate=round(dup / len(assigned), 4) if assigned else 0.0,
                     tasks=tuple(assigned))


def _best(pairs: Sequence[Pair], ids: Sequence[str]) -> dict[str, tuple[float, str]]:
    """Each task's highest overlap and with what (pairs count for both sides unless the
    other side is not a task)."""
    known = set(ids)
    best: dict[str, tuple[float, str]] = {}
    for pair in pairs:
        for mine, other in ((pair.a, pair.b), (pair.b, pair.a)):
            if mine in known and pair.score > best.get(mine, (0.0, ""))[0]:
                best[mine] = (pair.score, other)
    return best


def _split_of(root: str, group: Sequence[TaskRow], settings: SplitSettings) -> Split:
    if settings.cutoff is not None:
        cutoff = settings.cutoff if settings.cutoff.tzinfo else \
            settings.cutoff.replace(tzinfo=timezone.utc)
        dates = [_authored(r) if r.kind is CandidateKind.mined else None for r in group]
        if not all(d is not None and d > cutoff for d in dates):
            return Split.train
    elif _fraction(f"eval:{root}", settings.seed) >= settings.eval_fraction:
        return Split.train
    share = _fraction(f"validation:{root}", settings.seed)
    return Split.validation if share < settings.validation_share else Split.test


def splits_dir(snapshot_dir: Path) -> Path:
    return snapshot_dir / "splits"


def write_plan(snapshot_dir: Path, plan: SplitPlan) -> Path:
    """``splits/<name>.json`` in the snapshot folder (written atomically)."""
    from repogym.files import atomic_write

    folder = splits_dir(snapshot_dir)
    folder.mkdir(exist_ok=True)
    path = folder / f"{plan.name}.json"
    atomic_write(path, plan.model_dump_json(indent=2) + "\n")
    return path


def read_plan(snapshot_dir: Path, name: str) -> SplitPlan:
    path = splits_dir(snapshot_dir) / f"{name}.json"
    if not path.is_file():
        raise InputError(f"no split {name!r} in {snapshot_dir}")
    return SplitPlan.model_validate_json(path.read_text())


__all__ = ["EVAL", "GroupBy", "Split", "SplitPlan", "SplitSettings", "TaskSplit",
           "group_keys", "plan_splits", "read_plan", "write_plan"]
