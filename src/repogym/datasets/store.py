"""The dataset on disk: Parquet part files under one root, written atomically and idempotently.

Layout (the schema of every part file is :data:`~repogym.schemas.arrow.TASK_SCHEMA`)::

    <root>/
      manifest.json                          counts and versions, rewritten after every write
      .lock                                  fcntl lock file that serialises writers
      tasks/<repo>/part-<utc>-<hash8>.parquet      accepted tasks
      rejected/<repo>/part-<utc>-<hash8>.parquet   every other verdict, with its reason

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
* **Serialised writers.** :meth:`DatasetStore.write` holds an exclusive ``fcntl`` lock on
  ``<root>/.lock`` from reading the existing ids to renaming the last file, so concurrent
  processes never duplicate an id. Readers take no lock: files appear whole or not at all.
* **Versioned.** Every file carries its schema version in the Arrow metadata; a file of
  another version, or one that is not Parquet, raises :class:`~repogym.errors.DatasetError`
  naming the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Literal, Sequence
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field, ValidationError

from repogym.errors import DatasetError
from repogym.schemas.arrow import (
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    TASK_SCHEMA,
    TaskRow,
    pipeline_version,
    table_from_rows,
)
from repogym.schemas.records import Judged, Record, Status, short_hash, utcnow

TableName = Literal["tasks", "rejected"]
TABLES: tuple[TableName, ...] = ("tasks", "rejected")
MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".lock"
TMP_PREFIX = ".tmp-"
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


def table_for(status: Status) -> TableName:
    """The table a verdict goes to: ``tasks`` for ``accept``, ``rejected`` for the rest."""
    return "tasks" if status is Status.accept else "rejected"


def partition_dirname(repo: str) -> str:
    """``<repo>``, URI-encoded so any repository name is one safe, non-hidden path segment."""
    encoded = quote(repo, safe="")
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def is_part_file(path: Path) -> bool:
    """A data file of the dataset: ``*.parquet`` not hidden by a ``.`` or ``_`` prefix."""
    return path.suffix == ".parquet" and not path.name.startswith((".", "_"))


def read_part(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Read one part file as :data:`TASK_SCHEMA` (or the given subset of its columns).

    Raises:
        DatasetError: the file is not readable Parquet, has a schema version other than
            :data:`SCHEMA_VERSION` (or none), or lacks a column. The message names the file.
    """
    names = list(columns) if columns is not None else list(TASK_SCHEMA.names)
    target = pa.schema([TASK_SCHEMA.field(n) for n in names],
                       metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()})
    try:
        with pq.ParquetFile(path) as pf:
            _check_schema(path, pf.schema_arrow, names)
            return pf.read(columns=names).select(names).cast(target)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{path}: not a readable repogym Parquet file ({exc})") from exc


def _check_schema(path: Path, schema: pa.Schema, names: list[str]) -> None:
    raw = (schema.metadata or {}).get(SCHEMA_VERSION_KEY)
    found = None if raw is None else raw.decode(errors="replace")
    if found != str(SCHEMA_VERSION):
        what = "no schema version" if found is None else f"schema version {found}"
        raise DatasetError(f"{path}: file has {what}, but this repogym reads only schema "
                           f"version {SCHEMA_VERSION} (metadata key {SCHEMA_VERSION_KEY.decode()})")
    missing = [n for n in names if n not in schema.names]
    if missing:
        raise DatasetError(f"{path}: missing columns {missing} for schema version {SCHEMA_VERSION}")


def _atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Write ``path`` through ``write(tmp)`` on a temp file in the same directory + rename."""
    tmp = path.with_name(f"{TMP_PREFIX}{secrets.token_hex(6)}-{path.name}")
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _strings(table: pa.Table, column: str) -> list[str]:
    """A non-null string column as a list of ``str``."""
    return [str(value) for value in table.column(column).to_pylist()]


def _check_table(table: str) -> TableName:
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; valid tables: {', '.join(TABLES)}")
    return table


class DatasetStore:
    """The ``tasks`` and ``rejected`` tables under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

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
        with self._locked():
            self._remove_temp_files()
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
        with self._locked():
            self._remove_temp_files()
            return self._write_manifest()

    def _plan(self, rows: list[TaskRow]) -> tuple[dict[tuple[TableName, str], list[TaskRow]], int]:
        seen = {t: self.instance_ids(t) for t in {table_for(r.status) for r in rows}}
        plan: dict[tuple[TableName, str], list[TaskRow]] = {}
        skipped = 0
        for row in rows:
            table = table_for(row.status)
            if row.instance_id in seen[table]:
                skipped += 1
                continue
            seen[table].add(row.instance_id)
            plan.setdefault((table, row.repo), []).append(row)
        return plan, skipped

    def _write_part(self, table: TableName, repo: str, rows: list[TaskRow]) -> Path:
        directory = self.root / table / partition_dirname(repo)
        directory.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        digest = short_hash(*sorted(r.instance_id for r in rows))
        path = directory / f"part-{stamp}-{digest}.parquet"
        data = table_from_rows([r.to_arrow_row() for r in rows])
        _atomic_write(path, lambda tmp: pq.write_table(data, tmp))
        return path

    def _write_manifest(self) -> Manifest:
        manifest = Manifest(schema_version=SCHEMA_VERSION, pipeline_version=pipeline_version(),
                            updated_at=utcnow(), tables={t: self.counts(t) for t in TABLES})
        text = manifest.model_dump_json(indent=2) + "\n"
        _atomic_write(self.root / MANIFEST_NAME, lambda tmp: tmp.write_text(text))
        return manifest

    def _remove_temp_files(self) -> None:
        """Delete ``.tmp-*`` left by crashed writers. Only safe while holding the lock."""
        candidates = [*self.root.glob(f"{TMP_PREFIX}*"),
                      *self.root.glob(f"*/*/{TMP_PREFIX}*")]
        for path in candidates:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

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

    # -- reading -----------------------------------------------------------------------

    def part_files(self, table: TableName = "tasks", repo: str | None = None) -> list[Path]:
        """The part files of a table (of one repo's partition if given), sorted by path."""
        base = self.root / _check_table(table)
        if repo is not None:
            dirs = [base / partition_dirname(repo)]
        else:
            dirs = sorted(d for d in base.iterdir() if d.is_dir()) if base.is_dir() else []
        return sorted(p for d in dirs if d.is_dir() for p in d.iterdir() if is_part_file(p))

    def read(self, table: TableName = "tasks", repo: str | None = None) -> pa.Table:
        """The whole table (or one repo's rows) as :data:`TASK_SCHEMA`; empty if no files.

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        return self._concat([read_part(p) for p in self.part_files(table, repo)], TASK_SCHEMA)

    def instance_ids(self, table: TableName = "tasks") -> set[str]:
        """Every ``instance_id`` in a table.

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        ids: set[str] = set()
        for path in self.part_files(table):
            ids.update(_strings(read_part(path, ["instance_id"]), "instance_id"))
        return ids

    def decided_ids(self, table: TableName = "rejected") -> set[str]:
        """Ids with a verdict on the task itself (an ``infra_error`` row is no verdict).

        Raises:
            DatasetError: a part file is unreadable or of another schema version.
        """
        ids: set[str] = set()
        for path in self.part_files(table):
            part = read_part(path, ["instance_id", "status"])
            for iid, status in zip(_strings(part, "instance_id"), _strings(part, "status")):
                if status != Status.infra_error.value:
                    ids.add(iid)
        return ids

    def rows(self, table: TableName = "tasks", repo: str | None = None) -> list[TaskRow]:
        """The table's rows as validated :class:`TaskRow` records.

        Raises:
            DatasetError: a part file is unreadable, of another schema version, or holds a
                row that does not validate.
        """
        result: list[TaskRow] = []
        for path in self.part_files(table, repo):
            for raw in read_part(path).to_pylist():
                try:
                    result.append(TaskRow.from_arrow_row(raw))
                except (ValidationError, ValueError) as exc:
                    raise DatasetError(f"{path}: invalid row {raw.get('instance_id')!r}: "
                                       f"{exc}") from exc
        return result

    def counts(self, table: TableName = "tasks") -> TableCounts:
        """Rows, files, rows per repo and rows per status of a table, counted from the files."""
        files = self.part_files(table)
        data = self._concat([read_part(p, _COUNT_COLUMNS) for p in files], _COUNT_SCHEMA)
        repos, statuses = Counter(_strings(data, "repo")), Counter(_strings(data, "status"))
        return TableCounts(rows=data.num_rows, files=len(files), repos=dict(sorted(repos.items())),
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
