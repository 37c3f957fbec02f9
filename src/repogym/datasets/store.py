"""The dataset on disk: Parquet part files under one root, written atomically and idempotently.

Layout (the schema of every part file is :data:`~repogym.schemas.arrow.TASK_SCHEMA`)::

    <root>/
      manifest.json                          counts and versions, rewritten after every write
      .lock                                  fcntl lock file that serialises writers
      .compaction.json                       journal of an unfinished compaction (transient)
      tasks/<repo>/part-<utc>-<hash8>.parquet      accepted tasks
      rejected/<repo>/part-<utc>-<hash8>.parquet   every other verdict, with its reason
      infra/<repo>/part-<utc>-<hash8>.parquet      infrastructure failures (judged again)
      retired/<repo>/part-<utc>-<hash8>.parquet    tasks that no longer hold (re-verified),
                                                   never deleted: :meth:`DatasetStore.retire`

``<repo>`` is URI-encoded in the directory name. The partition is by directory but *not*
hive-style (``repo=<repo>``): the ``repo`` column is stored inside every file (HF
``datasets`` drops hive partition columns), and a hive directory beside it makes pandas
infer a second, dictionary-typed ``repo`` that cannot be merged with it. Plain directory
names let every reader see exactly the columns of the files. ``<utc>`` is ``YYYYMMDDTHHMMSSffffffZ`` and ``<hash8>`` a hash
of the file's instance ids.

Guarantees:

* **Atomic.** A part file is written to ``.tmp-*`` in its final directory, fsynced, then
  ``os.replace``-d into place; a crash leaves no partial ``.parquet``. Readers ignore names
  starting with ``.`` or ``_`` (as ``pyarrow.dataset`` does); writers delete stale ``.tmp-*``
  files while holding the lock, when no other writer can be mid-write.
* **Idempotent.** A row whose ``instance_id`` is already in its table is skipped, so a rerun
  adds nothing. Tables are independent: a candidate rejected earlier may be accepted now.
  Infrastructure failures (``infra_error``) have a table of their own, ``infra``: they say
  nothing about the task, so they must never keep its later verdict out of ``rejected``
  (stores written before that table existed may hold ``infra_error`` rows in ``rejected``;
  :meth:`DatasetStore.decided_ids` ignores them).
* **Serialised writers.** :meth:`DatasetStore.write` holds an exclusive ``fcntl`` lock on
  ``<root>/.lock`` from reading the existing ids to renaming the last file, so concurrent
  processes never duplicate an id. Readers take no lock: files appear whole or not at all.
* **Versioned.** Every file carries its schema version in the Arrow metadata; a file of
  another version, or one that is not Parquet, raises :class:`~repogym.errors.DatasetError`
  naming the file. Every read goes through :func:`read_part`, which checks that first.
* **Immutable part files.** A part file is never modified once renamed into place; it is
  only ever *replaced* by :meth:`DatasetStore.compact` (a new merged file, then the old ones
  unlinked). Snapshots (:mod:`repogym.datasets.snapshots`) hard-link part files and rely on
  this.
* **Crash-safe compaction.** Compaction writes the merged file to ``.tmp-*``, then records
  ``<root>/.compaction.json`` (the merged file and the files it replaces), then renames the
  merged file into place, unlinks the replaced files and removes the journal. The next
  locked operation (:meth:`DatasetStore.exclusive`) finishes an interrupted compaction: if
  the merged file is in place it unlinks the replaced files, otherwise it drops the journal
  (and the ``.tmp-*`` file). Until then, and while a compaction runs, a row can be in two
  files at once; readers of this module therefore keep the first occurrence of each
  ``instance_id`` (ids are unique within a table, so both occurrences are the same row),
  and read again when the files changed under them (:meth:`DatasetStore.read_parts`).
  Outside readers (pandas on ``tasks/``) may see such a repeat until the next locked
  operation; snapshots never contain one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Literal, Sequence
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field, ValidationError

from repogym.errors import DatasetError
from repogym.files import TMP_PREFIX, atomic_write_with, fsync_dir, write_temp
from repogym.schemas.arrow import (
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    TASK_SCHEMA,
    UPGRADES,
    Derived,
    TaskRow,
    pipeline_version,
    table_from_rows,
)
from repogym.schemas.records import Judged, Record, Status, short_hash, utcnow

TableName = Literal["tasks", "rejected", "infra", "retired"]
TABLES: tuple[TableName, ...] = ("tasks", "rejected", "infra", "retired")
MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".lock"
JOURNAL_NAME = ".compaction.json"
READ_ATTEMPTS = 10  # reads a reader tries while writers keep changing the files
_COUNT_COLUMNS = ["instance_id", "repo", "status"]
_COUNT_SCHEMA = pa.schema([TASK_SCHEMA.field(n) for n in _COUNT_COLUMNS])


class WriteResult(Record):
    """What one :meth:`DatasetStore.write` did: rows added, and rows skipped as already present."""

    added: int
    skipped_duplicates: int


class TableCounts(Record):
    """Counts of one table: rows, part files, rows per repo and rows per status."""

    rows: int = 0
    files: int = 0
    repos: dict[str, int] = Field(default_factory=dict)
    statuses: dict[str, int] = Field(default_factory=dict)


class Manifest(Record):
    """The content of ``manifest.json``: versions, counts per table, time of the last write."""

    schema_version: int
    pipeline_version: str
    updated_at: datetime
    tables: dict[str, TableCounts]


class PartFileGone(DatasetError):
    """A part file vanished between listing and reading it (a compaction replaced it).

    Readers of :class:`DatasetStore` catch it and list the files again.
    """


class CompactedPartition(Record):
    """One partition merged by :meth:`DatasetStore.compact`."""

    table: str
    repo: str
    replaced: int  # part files merged into one
    rows: int
    merged: str  # path of the merged file, relative to the store's root


class CompactResult(Record):
    """What one :meth:`DatasetStore.compact` did: the partitions it merged (others had at
    most one part file)."""

    partitions: tuple[CompactedPartition, ...] = ()

    @property
    def files_removed(self) -> int:
        """Part files that were replaced, minus the merged files that replaced them."""
        return sum(p.replaced - 1 for p in self.partitions)


class RetireResult(Record):
    """What one :meth:`DatasetStore.retire` did."""

    retired: int  # rows added to ``retired`` (already there: skipped)
    removed: int  # rows taken out of ``tasks``
    updated: int  # rows of ``tasks`` rewritten with new evidence


class CompactionJournal(Record):
    """The content of ``.compaction.json``: ``merged`` replaces ``replaced`` (paths relative
    to the store's root; ``merged`` is "" when nothing replaces them: every row of the
    partition was retired)."""

    merged: str
    replaced: tuple[str, ...]


def table_for(status: Status) -> TableName:
    """The table a verdict goes to: ``tasks`` for ``accept``, ``infra`` for ``infra_error``
    (no verdict on the task: it is judged again, and its verdict then goes to its own table
    whatever the infra row says), ``rejected`` for the rest (reject and review)."""
    if status is Status.accept:
        return "tasks"
    return "infra" if status is Status.infra_error else "rejected"


def partition_dirname(repo: str) -> str:
    """``<repo>``, URI-encoded so any repository name is one safe, non-hidden path segment."""
    encoded = quote(repo, safe="")
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def is_part_file(path: Path) -> bool:
    """A data file of the dataset: ``*.parquet`` not hidden by a ``.`` or ``_`` prefix."""
    return path.suffix == ".parquet" and not path.name.startswith((".", "_"))


def read_part(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Read one part file as :data:`TASK_SCHEMA` (or the given subset of its columns).

    This is the one place a part file is read (the store, snapshots, exporters), so a file
    of an unknown schema version is refused before any of its rows is used.

    Raises:
        PartFileGone: the file does not exist (a :class:`DatasetError`).
        DatasetError: the file is not readable Parquet, has a schema version other than
            :data:`SCHEMA_VERSION` (or none), or lacks a column. The message names the file.
    """
    names = list(columns) if columns is not None else list(TASK_SCHEMA.names)
    target = pa.schema([TASK_SCHEMA.field(n) for n in names],
                       metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()})
    try:
        with pq.ParquetFile(path) as pf:
            version = _check_schema(path, pf.schema_arrow, names)
            added = UPGRADES.get(version, {})
            needed = [n for v in added.values() if isinstance(v, Derived) for n in v.needs]
            stored = list(dict.fromkeys(n for n in [*names, *needed] if n not in added))
            table = pf.read(columns=stored)
            for name in names:
                if name in added:
                    table = table.append_column(name, _upgraded(table, added[name], name))
            return table.select(names).cast(target)
    except FileNotFoundError as exc:
        raise PartFileGone(f"{path}: part file vanished (replaced by a compaction?)") from exc
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{path}: not a readable repogym Parquet file ({exc})") from exc


def _upgraded(table: pa.Table, value: object, name: str) -> pa.Array:
    """The column ``name`` an older file lacks: ``value`` in every row, or computed per
    row when it is :class:`Derived`."""
    type_ = TASK_SCHEMA.field(name).type
    if isinstance(value, Derived):
        rows = table.select(list(value.needs)).to_pylist()
        return pa.array([value.compute(row) for row in rows], type_)
    return pa.array([value] * table.num_rows, type_)


def _check_schema(path: Path, schema: pa.Schema, names: list[str]) -> int:
    """The file's schema version, when this repogym reads it and it has ``names`` (the
    columns its version lacks are added by the reader)."""
    raw = (schema.metadata or {}).get(SCHEMA_VERSION_KEY)
    found = None if raw is None else raw.decode(errors="replace")
    readable = {str(v): v for v in READABLE_VERSIONS}
    if found not in readable:
        what = "no schema version" if found is None else f"schema version {found}"
        versions = ", ".join(map(str, READABLE_VERSIONS))
        raise DatasetError(f"{path}: file has {what}, but this repogym reads only schema "
                           f"versions {versions} (metadata key {SCHEMA_VERSION_KEY.decode()})")
    version = readable[found]
    missing = [n for n in names if n not in schema.names and n not in UPGRADES.get(version, {})]
    if missing:
        raise DatasetError(f"{path}: missing columns {missing} for schema version {version}")
    return version




def _strings(table: pa.Table, column: str) -> list[str]:
    """A non-null string column as a list of ``str``."""
    return [str(value) for value in table.column(column).to_pylist()]


def _first_occurrences(parts: list[tuple[Path, pa.Table]]) -> list[tuple[Path, pa.Table]]:
    """The parts with every row whose ``instance_id`` appeared earlier (in this or an earlier
    part) dropped. Parts must have an ``instance_id`` column."""
    seen: set[str] = set()
    out: list[tuple[Path, pa.Table]] = []
    for path, part in parts:
        keep = []
        for iid in _strings(part, "instance_id"):
            keep.append(iid not in seen)
            seen.add(iid)
        out.append((path, part if all(keep) else part.filter(pa.array(keep, pa.bool_()))))
    return out


def _unlink_all(paths: Sequence[Path]) -> None:
    """Unlink files (missing ones are fine), then fsync their directories."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    for directory in sorted({p.parent for p in paths}):
        if directory.is_dir():
            fsync_dir(directory)


def _check_table(table: str) -> TableName:
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; valid tables: {', '.join(TABLES)}")
    return table


class DatasetStore:
    """The ``tasks`` and ``rejected`` tables under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # -- locking and recovery ----------------------------------------------------------

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the writer lock, after finishing what a crashed writer left behind.

        On entry an interrupted compaction is finished (see the module docstring) and stale
        ``.tmp-*`` files are deleted. Every operation that changes files under the root
        (writes, compaction, snapshots) runs inside this; readers never take it.

        Raises:
            DatasetError: ``.compaction.json`` exists but is not a valid journal.
        """
        with self._locked():
            self._finish_compaction()
            self._remove_temp_files()
            yield

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the exclusive writer lock on ``<root>/.lock``."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / LOCK_NAME, "a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _remove_temp_files(self) -> None:
        """Delete ``.tmp-*`` files left by crashed writers of this store. Only safe while
        holding the lock, and only for the store's own files: the manifest and journal at the
        root, and the part files of its tables. Other writers share the root (corpus state,
        caches) and write their own temporary files at any time, without this lock."""
        own = (MANIFEST_NAME, JOURNAL_NAME)
        candidates = [p for p in self.root.glob(f"{TMP_PREFIX}*")
                      if p.name.endswith(own)]
        for table in TABLES:
            candidates += self.root.glob(f"{table}/*/{TMP_PREFIX}*")
        for path in candidates:
            if path.is_file():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def _finish_compaction(self) -> None:
        """Complete or undo the compaction recorded in the journal, then drop the journal."""
        journal = self._read_journal()
        if journal is None:
            return
        if not journal.merged or (self.root / journal.merged).is_file():
            _unlink_all([self.root / rel for rel in journal.replaced])
        (self.root / JOURNAL_NAME).unlink()
        fsync_dir(self.root)

    def _read_journal(self) -> CompactionJournal | None:
        path = self.root / JOURNAL_NAME
        try:
            return CompactionJournal.model_validate_json(path.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, ValidationError) as exc:
            raise DatasetError(f"{path}: not a valid compaction journal ({exc}); it lists "
                               "part files to delete, so fix or remove it by hand") from exc

    # -- writing -----------------------------------------------------------------------

    def write(self, judged: Sequence[Judged]) -> WriteResult:
        """Add judged candidates: ``accept`` to ``tasks``, every other status to ``rejected``.

        A row whose ``instance_id`` is already in its table (or earlier in ``judged``) is
        skipped. One part file is written per (table, repo); ``manifest.json`` is rewritten.

        Raises:
            ValueError: a judged candidate cannot be turned into a row (see
                :meth:`TaskRow.from_judged`); nothing is written then.
            DatasetError: an existing part file is unreadable or of another schema version.
            OSError: a file could not be written; files already renamed stay (a rerun adds
                the rest), no partial file is left.
        """
        rows = [TaskRow.from_judged(j) for j in judged]
        with self.exclusive():
            plan, skipped = self._plan(rows)
            added = 0
            try:
                for (table, repo), group in plan.items():
                    self._write_part(table, repo, group)
                    added += len(group)
            except BaseException:
                if added:  # keep the manifest true to the files already in place
                    with contextlib.suppress(Exception):
                        self._write_manifest()
                raise
            self._write_manifest()
        return WriteResult(added=added, skipped_duplicates=skipped)

    def refresh_manifest(self) -> Manifest:
        """Recount every table and rewrite ``manifest.json`` (e.g. after a crashed write)."""
        with self.exclusive():
            return self._write_manifest()

    def _plan(self, rows: Sequence[TaskRow], table: TableName | None = None
              ) -> tuple[dict[tuple[TableName, str], list[TaskRow]], int]:
        """Rows grouped by (table, repo) -- ``table``, else each row's by its status --
        without those already in their table (or earlier in ``rows``); and how many were."""
        def table_of(row: TaskRow) -> TableName:
            return table or table_for(row.status)

        seen = {t: self.instance_ids(t) for t in {table_of(r) for r in rows}}
        plan: dict[tuple[TableName, str], list[TaskRow]] = {}
        skipped = 0
        for row in rows:
            target = table_of(row)
            if row.instance_id in seen[target]:
                skipped += 1
                continue
            seen[target].add(row.instance_id)
            plan.setdefault((target, row.repo), []).append(row)
        return plan, skipped

    def _write_part(self, table: TableName, repo: str, rows: list[TaskRow]) -> Path:
        directory = self.root / table / partition_dirname(repo)
        directory.mkdir(parents=True, exist_ok=True)
        data = table_from_rows([r.to_arrow_row() for r in rows])
        path = self._new_part_path(directory, [r.instance_id for r in rows])
        atomic_write_with(path, lambda tmp: pq.write_table(data, tmp))
        return path

    @staticmethod
    def _new_part_path(directory: Path, ids: list[str]) -> Path:
        """``part-<utc>-<hash8 of the ids>.parquet`` in ``directory``."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        return directory / f"part-{stamp}-{short_hash(*sorted(ids))}.parquet"

    def _write_manifest(self) -> Manifest:
        manifest = Manifest(schema_version=SCHEMA_VERSION, pipeline_version=pipeline_version(),
                            updated_at=utcnow(), tables={t: self.counts(t) for t in TABLES})
        text = manifest.model_dump_json(indent=2) + "\n"
        atomic_write_with(self.root / MANIFEST_NAME, lambda tmp: tmp.write_text(text))
        return manifest

    # -- compaction --------------------------------------------------------------------

    def compact(self, table: TableName | None = None, repo: str | None = None) -> CompactResult:
        """Merge each partition's part files into one (every table and repo by default).

        Runs under the writer lock; rows, their order (oldest file first) and the other
        partitions are unchanged, and a repeated ``instance_id`` is kept once. A partition
        with at most one part file is left alone, so a second call does nothing. The
        manifest is rewritten. Crash-safe: see the module docstring.

        Raises:
            ValueError: ``table`` is not a table name.
            DatasetError: a part file is unreadable or of another schema version (that
                partition and the ones after it are unchanged; earlier ones stay merged).
            OSError: a file could not be written (the next locked operation tidies up).
        """
        tables = TABLES if table is None else (_check_table(table),)
        merged: list[CompactedPartition] = []
        with self.exclusive():
            try:
                for name in tables:
                    for directory in self._partition_dirs(name, repo):
                        done = self._compact_partition(name, directory)
                        if done is not None:
                            merged.append(done)
            except BaseException:
                if merged:  # keep the manifest true to the partitions already merged
                    with contextlib.suppress(Exception):
                        self._write_manifest()
                raise
            if merged:
                self._write_manifest()
        return CompactResult(partitions=tuple(merged))

    def _compact_partition(self, table: TableName, directory: Path) -> CompactedPartition | None:
        """Merge the part files of one partition directory; None if it has fewer than two."""
        files = sorted(p for p in directory.iterdir() if is_part_file(p))
        if len(files) < 2:
            return None
        parts = _first_occurrences([(p, read_part(p)) for p in files])
        data = pa.concat_tables([part for _, part in parts])
        merged = self._replace_files(directory, files, data)
        return CompactedPartition(table=table, repo=unquote(directory.name),
                                  replaced=len(files), rows=data.num_rows, merged=merged)

    def _replace_files(self, directory: Path, files: Sequence[Path], data: pa.Table) -> str:
        """Replace ``files`` of one partition by one file holding ``data`` (by none when it
        has no row), through the compaction journal; the new file's relative path or ""."""
        merged, tmp, target = "", None, None
        if data.num_rows:
            target = self._new_part_path(directory, _strings(data, "instance_id"))
            if target in files:
                raise DatasetError(f"{target}: merged part file would overwrite an existing one")
            tmp = write_temp(target, lambda t: pq.write_table(data, t))
            merged = self._relative(target)
        journal = CompactionJournal(merged=merged,
                                    replaced=tuple(self._relative(p) for p in files))
        text = journal.model_dump_json() + "\n"
        atomic_write_with(self.root / JOURNAL_NAME, lambda t: t.write_text(text))
        if tmp is not None and target is not None:
            os.replace(tmp, target)
            fsync_dir(directory)
        self._finish_compaction()
        return merged

    # -- retirement ---------------------------------------------------------------------

    def retire(self, retired: Sequence[TaskRow], updated: Sequence[TaskRow] = ()) -> RetireResult:
        """Move tasks that no longer hold out of ``tasks`` into ``retired`` (rows as given:
        their reason says why), and rewrite ``updated`` rows of ``tasks`` in place (a
        re-verification that held adds to their evidence).

        ``retired`` is written first; then each ``tasks`` partition concerned is rewritten
        through the compaction journal, so a crash leaves every retired row in ``retired``
        and at worst still in ``tasks`` (the next retire takes it out). Nothing is deleted
        that is not in ``retired``; snapshots keep the files they hard-linked.

        Raises:
            ValueError: a row is in both lists, or an updated row is not in ``tasks``.
            DatasetError: a part file is unreadable or of another schema version.
        """
        gone = {r.instance_id for r in retired}
        new = {r.instance_id: r for r in updated}
        if both := gone & set(new):
            raise ValueError(f"retired and updated at once: {sorted(both)[:3]}")
        with self.exclusive():
            known = self.instance_ids("tasks")
            if missing := set(new) - known:
                raise ValueError(f"updated rows not in tasks: {sorted(missing)[:3]}")
            plan, _ = self._plan(retired, "retired")
            for (table, repo), group in plan.items():
                self._write_part(table, repo, group)
            removed = 0
            repos = {r.repo for r in [*retired, *updated]}
            for repo in sorted(repos):
                for directory in self._partition_dirs("tasks", repo):
                    removed += self._rewrite_partition(directory, gone, new)
            self._write_manifest()
        return RetireResult(retired=sum(len(g) for g in plan.values()), removed=removed,
                            updated=len(new))

    def _rewrite_partition(self, directory: Path, gone: set[str],
                           new: dict[str, TaskRow]) -> int:
        """One ``tasks`` partition without the ``gone`` ids and with ``new`` rows in place of
        theirs, as one file through the compaction journal; the number of rows dropped."""
        files = sorted(p for p in directory.iterdir() if is_part_file(p))
        rows = [r for path, part in _first_occurrences([(p, read_part(p)) for p in files])
                for r in rows_of(path, part)]
        ids = {r.instance_id for r in rows}
        if not (ids & gone or ids & set(new)):
            return 0
        kept = [new.get(r.instance_id, r) for r in rows if r.instance_id not in gone]
        self._replace_files(directory, files, table_from_rows([r.to_arrow_row() for r in kept]))
        return len(rows) - len(kept)

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # -- reading -----------------------------------------------------------------------

    def _partition_dirs(self, table: TableName, repo: str | None = None) -> list[Path]:
        base = self.root / _check_table(table)
        if repo is not None:
            dirs = [base / partition_dirname(repo)]
        else:
            dirs = sorted(d for d in base.iterdir() if d.is_dir()) if base.is_dir() else []
        return [d for d in dirs if d.is_dir()]

    def part_files(self, table: TableName = "tasks", repo: str | None = None) -> list[Path]:
        """The part files of a table (of one repo's partition if given), sorted by path.

        While a compaction runs (or after one crashed), a row may be in two of these files;
        :meth:`read_parts` and every other reader here drop the repeat.
        """
        dirs = self._partition_dirs(table, repo)
        return sorted(p for d in dirs for p in d.iterdir() if is_part_file(p))

    def read_parts(self, table: TableName = "tasks", repo: str | None = None,
                   columns: Sequence[str] | None = None) -> list[tuple[Path, pa.Table]]:
        """Each part file with its rows, every ``instance_id`` kept once (first file wins).

        ``columns`` selects columns (``instance_id`` is always added, first if missing).
        Takes no lock. The files are listed before and after reading them; when the two
        listings differ (a write or compaction ran meanwhile, so the first listing may have
        missed a merged file) or a listed file vanished, everything is read again, up to
        :data:`READ_ATTEMPTS` times.

        Raises:
            DatasetError: a part file is unreadable or of another schema version, or the
                files kept changing on every attempt.
        """
        names = None if columns is None else list(dict.fromkeys(["instance_id", *columns]))
        for _ in range(READ_ATTEMPTS):
            listed = self.part_files(table, repo)
            with contextlib.suppress(PartFileGone):
                parts = [(p, read_part(p, names)) for p in listed]
                if self.part_files(table, repo) == listed:
                    return _first_occurrences(parts)
        raise DatasetError(f"{self.root / table}: part files kept changing while being read "
                           f"({READ_ATTEMPTS} attempts); try again")

    def read(self, table: TableName = "tasks", repo: str | None = None) -> pa.Table:
        """The whole table (or one repo's rows) as :data:`TASK_SCHEMA`; empty if no files.

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        return self._concat([t for _, t in self.read_parts(table, repo)], TASK_SCHEMA)

    def column(self, column: str, table: TableName = "tasks",
               repo: str | None = None) -> dict[str, str]:
        """``instance_id`` -> one string column's value, reading that column only.

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        out: dict[str, str] = {}
        for _, part in self.read_parts(table, repo, columns=[column]):
            out.update(zip(_strings(part, "instance_id"), _strings(part, column)))
        return out

    def instance_ids(self, table: TableName = "tasks") -> set[str]:
        """Every ``instance_id`` in a table.

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        ids: set[str] = set()
        for _, part in self.read_parts(table, columns=["instance_id"]):
            ids.update(_strings(part, "instance_id"))
        return ids

    def decided_ids(self, table: TableName = "rejected") -> set[str]:
        """Ids with a verdict on the task itself (an ``infra_error`` row is no verdict).

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        ids: set[str] = set()
        for _, part in self.read_parts(table, columns=["status"]):
            for iid, status in zip(_strings(part, "instance_id"), _strings(part, "status")):
                if status != Status.infra_error.value:
                    ids.add(iid)
        return ids

    def verdict_ids(self) -> set[str]:
        """Every candidate id with a verdict on the task: a task, a retired task, or a
        rejected row that is not an ``infra_error`` (those are judged again). A candidate
        with one is never judged again.

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        return self.instance_ids("tasks") | self.instance_ids("retired") | self.decided_ids()

    def judged_rows(self, repo: str | None = None) -> list[TaskRow]:
        """Every candidate once, as it stands: its verdict (``tasks`` or ``rejected``), else
        its infrastructure failure (``infra``: judged again by the next run).

        Raises:
            DatasetError: as :meth:`rows`.
        """
        decided = [*self.rows("tasks", repo), *self.rows("rejected", repo)]
        ids = {r.instance_id for r in decided}
        return decided + [r for r in self.rows("infra", repo) if r.instance_id not in ids]

    def rows(self, table: TableName = "tasks", repo: str | None = None) -> list[TaskRow]:
        """The table's rows as validated :class:`TaskRow` records.

        Raises:
            DatasetError: a part file is unreadable, of another schema version, or holds a
                row that does not validate.
        """
        return [row for path, part in self.read_parts(table, repo) for row in rows_of(path, part)]

    def counts(self, table: TableName = "tasks") -> TableCounts:
        """Rows, files, rows per repo and rows per status of a table, counted from the files."""
        parts = self.read_parts(table, columns=_COUNT_COLUMNS)
        data = self._concat([t for _, t in parts], _COUNT_SCHEMA)
        repos, statuses = Counter(_strings(data, "repo")), Counter(_strings(data, "status"))
        return TableCounts(rows=data.num_rows, files=len(parts),
                           repos=dict(sorted(repos.items())),
                           statuses=dict(sorted(statuses.items())))

    def manifest(self) -> Manifest | None:
        """The manifest as last written, or None if nothing was ever written.

        Raises:
            DatasetError: ``manifest.json`` exists but is not a valid manifest.
        """
        path = self.root / MANIFEST_NAME
        try:
            return Manifest.model_validate(json.loads(path.read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, ValidationError) as exc:
            raise DatasetError(f"{path}: not a valid repogym manifest ({exc})") from exc

    @staticmethod
    def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
        return pa.concat_tables(tables) if tables else schema.empty_table()


def rows_of(path: Path, part: pa.Table) -> list[TaskRow]:
    """The rows of a part file read with every column, validated.

    Raises:
        DatasetError: a row does not validate; the message names ``path`` and the row's id.
    """
    result: list[TaskRow] = []
    for raw in part.to_pylist():
        try:
            result.append(TaskRow.from_arrow_row(raw))
        except (ValidationError, ValueError) as exc:
            raise DatasetError(f"{path}: invalid row {raw.get('instance_id')!r}: {exc}") from exc
    return result
