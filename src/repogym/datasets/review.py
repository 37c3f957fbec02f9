"""The review queue: candidates the judge flagged (``status == "review"``) waiting for a human.

The judge writes a flagged candidate to the dataset's ``rejected`` table with ``status ==
"review"`` and a reason (``statement_leak``, ``underspecified``, ``probe:<name>``...). This
module keeps those rows in a durable queue where a reviewer approves or rejects each one:

* **approve** moves the task into the dataset: a row with ``status == "accept"`` is written to
  the ``tasks`` table through :meth:`DatasetStore.write`; its ``evidence`` keeps the judge's
  evidence plus ``review_reviewer``, ``review_note``, ``review_reason`` (the original reason),
  ``review_detail`` and ``review_decided_at``; its ``detail`` says who approved it.
* **reject** keeps the task out; the queue records who rejected it, when and why (the
  ``rejected`` row stays as the judge wrote it).

Storage: one table ``review_items`` in any SQLAlchemy database (plain SQLAlchemy Core, no
dialect-specific SQL), by default SQLite at ``<dataset>/review.sqlite``; a shared Postgres URL
(``REPOGYM_REVIEW_DB_URL``) serves several reviewers on several machines.

=============  ==================  ========================================================
column         type                meaning
=============  ==================  ========================================================
instance_id    varchar(512) PK     the task's id (as in the dataset)
repo           varchar(512)        repository name
reason         varchar(512)        the judge's reason code for flagging
state          varchar(16)         ``pending``, ``approved`` or ``rejected``
row_json       text                the flagged dataset row (:class:`TaskRow` as JSON)
flagged_at     timestamp (UTC)     when the judge made the verdict
queued_at      timestamp (UTC)     when :meth:`ReviewQueue.sync` imported the row
reviewer       varchar(255)        who decided ("" while pending)
note           text                the reviewer's note ("" if none)
decided_at     timestamp (UTC)     when the decision was made (NULL while pending)
published      boolean             an approval whose ``tasks`` row has been written
=============  ==================  ========================================================

Guarantees:

* **One decision wins.** A decision is one conditional ``UPDATE ... WHERE state = 'pending'``
  in a transaction, and its row count says whether it won. Two reviewers acting at once:
  exactly one is recorded; the other gets :class:`ReviewConflict` naming who decided.
* **Crash-safe approval.** Approving first records ``state = 'approved', published = false``,
  then writes the ``tasks`` row, then sets ``published = true``. A crash (or a failed write)
  in between leaves an approved-unpublished item, which the next :meth:`ReviewQueue.sync`
  (run by every :meth:`ReviewQueue.list`) publishes. Store writes are idempotent by id, so
  publishing twice adds one row.
* **Idempotent import.** :meth:`ReviewQueue.sync` imports each flagged row once, however
  often and however many processes run it.
"""

from __future__ import annotations

import builtins
import contextlib
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence, get_args

import pyarrow as pa
from pydantic import ValidationError
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    MetaData,
    String,
    Table,
    Text,
    case,
    create_engine,
    event,
    insert,
    select,
    update,
)
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.schema import CreateIndex, CreateTable

from repogym.datasets.store import DatasetStore, read_part
from repogym.errors import ConfigError, DatasetError, InputError
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Judged, Record, Status, Verdict, utcnow

StatusFilter = Literal["pending", "approved", "rejected", "all"]
STATUS_FILTERS: tuple[str, ...] = get_args(StatusFilter)
DB_NAME = "review.sqlite"
MAX_REVIEWER = 255
MAX_NOTE = 10_000
SQLITE_BUSY_SECONDS = 30.0
SCAN_ATTEMPTS = 10  # scans of the rejected table while writers keep changing its files


class ReviewState(str, Enum):
    """Where an item of the queue stands."""

    pending = "pending"
    approved = "approved"
    rejected = "rejected"


class ReviewConflict(InputError):
    """Another reviewer decided the item first; this decision was not recorded.

    Attributes:
        instance_id: the item.
        state: the decision that won.
        reviewer: who made it.
        decided_at: when.
    """

    def __init__(self, instance_id: str, state: ReviewState, reviewer: str,
                 decided_at: datetime | None, attempted: str) -> None:
        when = f" at {decided_at:%Y-%m-%d %H:%M:%S} UTC" if decided_at else ""
        super().__init__(f"{instance_id}: already {state.value} by {reviewer}{when}; "
                         f"your {attempted} was not recorded")
        self.instance_id, self.state = instance_id, state
        self.reviewer, self.decided_at = reviewer, decided_at


class UnknownReviewItem(InputError):
    """No item with this id is in the queue (nor flagged for review in the dataset)."""


class ReviewItem(Record):
    """One flagged task in the queue, with its decision once made (see the module docstring)."""

    instance_id: str
    repo: str
    reason: str
    state: ReviewState
    flagged_at: datetime
    queued_at: datetime
    reviewer: str = ""
    note: str = ""
    decided_at: datetime | None = None
    published: bool = False
    task: TaskRow

    @property
    def detail(self) -> str:
        """The judge's human-readable explanation of why it flagged the task."""
        return self.task.detail


class SyncResult(Record):
    """What one :meth:`ReviewQueue.sync` did."""

    imported: int
    published: int


_METADATA = MetaData()
REVIEW_ITEMS = Table(
    "review_items", _METADATA,
    Column("instance_id", String(512), primary_key=True),
    Column("repo", String(512), nullable=False, index=True),
    Column("reason", String(512), nullable=False),
    Column("state", String(16), nullable=False, index=True),
    Column("row_json", Text, nullable=False),
    Column("flagged_at", DateTime(timezone=True), nullable=False),
    Column("queued_at", DateTime(timezone=True), nullable=False),
    Column("reviewer", String(MAX_REVIEWER), nullable=False),
    Column("note", Text, nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=True),
    Column("published", Boolean, nullable=False),
)
"""The queue's one table (columns in the module docstring)."""


def default_url(root: Path) -> str:
    """The embedded default: SQLite at ``<root>/review.sqlite``."""
    return URL.create("sqlite", database=str(Path(root).resolve() / DB_NAME)).render_as_string()


def age_text(when: datetime, now: datetime | None = None) -> str:
    """A short age such as ``"42s"``, ``"5m"``, ``"3h"`` or ``"2d"``."""
    seconds = max(0, int(((now or utcnow()) - _utc(when)).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _utc(value: datetime) -> datetime:
    """Naive datetimes (SQLite returns them) are UTC; aware ones are converted to UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(
        timezone.utc)


def _make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets a busy timeout and WAL so readers never block.

    Raises:
        ConfigError: the URL is malformed or names a driver that is not installed.
    """
    try:
        backend = make_url(url).get_backend_name()
        args: dict[str, Any] = {"timeout": SQLITE_BUSY_SECONDS} if backend == "sqlite" else {}
        engine = create_engine(url, connect_args=args, pool_pre_ping=backend != "sqlite")
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise ConfigError(f"review database URL {make_safe(url)!r} is not usable: {exc}") from exc
    if backend == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect)
    return engine


def make_safe(url: str) -> str:
    """``url`` with any password hidden, for messages."""
    with contextlib.suppress(ArgumentError):
        return make_url(url).render_as_string(hide_password=True)
    return "<malformed URL>"


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_SECONDS * 1000)}")
        cursor.execute("PRAGMA journal_mode = WAL")
    finally:
        cursor.close()


@contextlib.contextmanager
def _db_errors(url: str) -> Iterator[None]:
    """Translate database failures into :class:`DatasetError` naming the database."""
    try:
        yield
    except SQLAlchemyError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DatasetError(f"review database {make_safe(url)}: {first}") from exc


def _item(row: Any) -> ReviewItem:
    m = row._mapping
    return ReviewItem(
        instance_id=m["instance_id"], repo=m["repo"], reason=m["reason"],
        state=ReviewState(m["state"]), flagged_at=_utc(m["flagged_at"]),
        queued_at=_utc(m["queued_at"]), reviewer=m["reviewer"], note=m["note"],
        decided_at=_utc(m["decided_at"]) if m["decided_at"] is not None else None,
        published=bool(m["published"]), task=TaskRow.model_validate_json(m["row_json"]),
    )


def _values_for(row: TaskRow, now: datetime) -> dict[str, Any]:
    return dict(instance_id=row.instance_id, repo=row.repo, reason=row.reason,
                state=ReviewState.pending.value, row_json=row.model_dump_json(),
                flagged_at=row.created_at, queued_at=now, reviewer="", note="",
                decided_at=None, published=False)


def approved_judged(item: ReviewItem) -> Judged:
    """The ``accept`` verdict an approval writes to the ``tasks`` table.

    Deterministic in ``item`` (the decision time comes from the queue), so publishing again
    after a crash writes the same row.

    Raises:
        ValueError: ``item`` is not approved.
    """
    if item.state is not ReviewState.approved or item.decided_at is None:
        raise ValueError(f"{item.instance_id}: is {item.state.value}, not approved")
    row = item.task
    evidence = {**row.evidence, "review_reviewer": item.reviewer, "review_note": item.note,
                "review_reason": row.reason, "review_detail": row.detail,
                "review_decided_at": item.decided_at.isoformat()}
    verdict = Verdict(instance_id=row.instance_id, status=Status.accept, reason="",
                      detail=f"approved by {item.reviewer} in manual review "
                             f"(flagged {row.reason or 'for review'})",
                      fail_to_pass=row.FAIL_TO_PASS, pass_to_pass=row.PASS_TO_PASS,
                      evidence=evidence, seconds=row.judge_seconds)
    return Judged(candidate=row.to_candidate(), verdict=verdict,
                  statement=row.problem_statement, image=row.image, created_at=item.decided_at)


def _check_reviewer(reviewer: str) -> str:
    name = reviewer.strip()
    if not name:
        raise InputError("a reviewer name is required")
    if len(name) > MAX_REVIEWER or any(ch in name for ch in "\r\n\t"):
        raise InputError(f"reviewer name must be one line of at most {MAX_REVIEWER} characters")
    return name


def _check_note(note: str, required: bool) -> str:
    text = note.strip()
    if required and not text:
        raise InputError("a note saying why is required to reject")
    if len(text) > MAX_NOTE:
        raise InputError(f"note is {len(text)} characters; at most {MAX_NOTE} are kept")
    return text


class ReviewQueue:
    """The flagged tasks of ``store`` and the decisions on them (see the module docstring).

    Args:
        store: the dataset whose ``review`` rows are queued and which approvals write to.
        url: a SQLAlchemy database URL; None (or "") means SQLite at
            ``<store.root>/review.sqlite``.

    Raises:
        InputError: the default database is used and ``store.root`` is not a directory (no
            dataset there).
        ConfigError: ``url`` is malformed or its driver is missing.
        DatasetError: the database cannot be reached or its table created.

    Safe to share between threads (each call checks out its own connection) and to use from
    several processes at once. Close with :meth:`close` or use as a context manager.
    """

    def __init__(self, store: DatasetStore, url: str | None = None) -> None:
        if not url and not store.root.is_dir():
            raise InputError(f"{store.root}: no dataset here (not a directory)")
        self.store = store
        self.url = url or default_url(store.root)
        self.engine = _make_engine(self.url)
        with _db_errors(self.url), self.engine.begin() as conn:
            _create_schema(conn)

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> ReviewQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- import and repair -------------------------------------------------------------

    def sync(self) -> SyncResult:
        """Import the store's ``review`` rows not yet queued, then publish every approved item
        whose ``tasks`` row is missing (an approval interrupted by a crash).

        Idempotent; safe to run from several processes at once.

        Raises:
            DatasetError: a part file or the database is unreadable, or an approved item
                could not be written (it stays approved-unpublished for the next sync).
        """
        with _db_errors(self.url):
            imported = self._import(self._new_review_rows())
            pending = self._select(REVIEW_ITEMS.c.state == ReviewState.approved.value,
                                   REVIEW_ITEMS.c.published.is_(False))
        for item in pending:
            self._publish(item)
        return SyncResult(imported=imported, published=len(pending))

    def _queued_ids(self) -> set[str]:
        with self.engine.connect() as conn:
            return set(conn.execute(select(REVIEW_ITEMS.c.instance_id)).scalars())

    def _new_review_rows(self) -> builtins.list[TaskRow]:
        """``review`` rows of the ``rejected`` table not in the queue, each once.

        Takes no store lock. A part file that vanishes while read, or a listing that changed
        by the end of the scan (a write or a compaction ran), makes the scan start again, up
        to :data:`SCAN_ATTEMPTS` times, so a compaction never hides a row.

        Raises:
            DatasetError: a part file is unreadable, or the files kept changing.
        """
        for _ in range(SCAN_ATTEMPTS):
            listed = self.store.part_files("rejected")
            try:
                rows = self._scan(listed, self._queued_ids())
            except _Vanished:
                continue
            if self.store.part_files("rejected") == listed:
                return rows
        raise DatasetError(f"{self.store.root / 'rejected'}: part files kept changing while "
                           f"being read ({SCAN_ATTEMPTS} attempts); try again")

    @staticmethod
    def _scan(paths: builtins.list[Path], queued: set[str]) -> builtins.list[TaskRow]:
        """The new review rows of ``paths``; reads every column only of files holding one."""
        rows: builtins.list[TaskRow] = []
        for path in paths:
            ids = _read(path, ["instance_id", "status"]).to_pylist()
            new = {r["instance_id"] for r in ids
                   if r["status"] == Status.review.value and r["instance_id"] not in queued}
            if new:
                rows.extend(_rows_of(path, _read(path, None), new))
                queued = queued | new
        return rows

    def _import(self, rows: Sequence[TaskRow]) -> int:
        """Insert rows, in one transaction if no other process inserted one of them meanwhile,
        else one by one skipping those already there. Returns how many this call inserted."""
        if not rows:
            return 0
        now = utcnow()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(REVIEW_ITEMS), [_values_for(r, now) for r in rows])
            return len(rows)
        except IntegrityError:
            pass
        inserted = 0
        for row in rows:
            with contextlib.suppress(IntegrityError), self.engine.begin() as conn:
                conn.execute(insert(REVIEW_ITEMS).values(**_values_for(row, now)))
                inserted += 1
        return inserted

    # -- reading -----------------------------------------------------------------------

    def list(self, status: str = "pending") -> builtins.list[ReviewItem]:
        """Items in ``status`` (``pending``, ``approved``, ``rejected`` or ``all``), after a
        :meth:`sync`. Order: pending first (oldest flag first), then by decision, newest first.

        Raises:
            InputError: ``status`` is not one of the four.
            DatasetError: a part file or the database is unreadable.
        """
        if status not in STATUS_FILTERS:
            raise InputError(f"unknown status {status!r}; valid: {', '.join(STATUS_FILTERS)}")
        self.sync()
        where = [] if status == "all" else [REVIEW_ITEMS.c.state == status]
        with _db_errors(self.url):
            return self._select(*where)

    def get(self, instance_id: str) -> ReviewItem:
        """The item with this id (syncing first if it is not queued yet).

        Raises:
            UnknownReviewItem: no such item, in the queue or flagged in the dataset.
            DatasetError: a part file or the database is unreadable.
        """
        with _db_errors(self.url):
            found = self._select(REVIEW_ITEMS.c.instance_id == instance_id)
            if not found:
                self.sync()
                found = self._select(REVIEW_ITEMS.c.instance_id == instance_id)
        if not found:
            raise UnknownReviewItem(f"{instance_id}: not in the review queue of "
                                    f"{self.store.root} (no such task flagged for review)")
        return found[0]

    def _select(self, *where: Any) -> builtins.list[ReviewItem]:
        c = REVIEW_ITEMS.c
        pending_first = case((c.state == ReviewState.pending.value, 0), else_=1)
        query = (select(REVIEW_ITEMS).where(*where)
                 .order_by(pending_first, c.decided_at.desc(), c.flagged_at, c.instance_id))
        with self.engine.connect() as conn:
            return [_item(r) for r in conn.execute(query)]

    # -- deciding ----------------------------------------------------------------------

    def approve(self, instance_id: str, reviewer: str, note: str = "") -> ReviewItem:
        """Approve a pending item and write it to the ``tasks`` table with status ``accept``.

        Returns:
            The item, approved and published.

        Raises:
            InputError: ``reviewer`` is empty or longer than one line of 255 characters.
            UnknownReviewItem: no such item.
            ReviewConflict: the item was already decided (by someone else, or earlier).
            DatasetError: the ``tasks`` row could not be written. The approval *is*
                recorded; the next :meth:`sync` writes the row.
        """
        self._decide(instance_id, ReviewState.approved, _check_reviewer(reviewer),
                     _check_note(note, required=False))
        return self._publish(self.get(instance_id))

    def reject(self, instance_id: str, reviewer: str, note: str) -> ReviewItem:
        """Reject a pending item: it stays out of the dataset, with who and why recorded.

        Raises:
            InputError: ``reviewer`` or ``note`` is empty (or too long).
            UnknownReviewItem: no such item.
            ReviewConflict: the item was already decided.
            DatasetError: the database is unreadable.
        """
        self._decide(instance_id, ReviewState.rejected, _check_reviewer(reviewer),
                     _check_note(note, required=True))
        return self.get(instance_id)

    def _decide(self, instance_id: str, state: ReviewState, reviewer: str, note: str) -> None:
        """Record the decision iff the item is still pending; else raise who won."""
        self.get(instance_id)  # raises UnknownReviewItem, and imports a row not yet queued
        c = REVIEW_ITEMS.c
        change = (update(REVIEW_ITEMS)
                  .where(c.instance_id == instance_id, c.state == ReviewState.pending.value)
                  .values(state=state.value, reviewer=reviewer, note=note,
                          decided_at=utcnow(), published=False))
        with _db_errors(self.url), self.engine.begin() as conn:
            if conn.execute(change).rowcount == 1:
                return
            winner = conn.execute(select(c.state, c.reviewer, c.decided_at)
                                  .where(c.instance_id == instance_id)).one()
        verb = "approval" if state is ReviewState.approved else "rejection"
        raise ReviewConflict(instance_id, ReviewState(winner.state), winner.reviewer,
                             _utc(winner.decided_at) if winner.decided_at else None, verb)

    def _publish(self, item: ReviewItem) -> ReviewItem:
        """Write an approved item's ``tasks`` row, then mark it published."""
        try:
            self.store.write([approved_judged(item)])
        except (OSError, DatasetError, ValueError) as exc:
            raise DatasetError(f"{item.instance_id}: approved by {item.reviewer}, but writing "
                               f"it to the dataset failed ({exc}); the next sync retries") from exc
        c = REVIEW_ITEMS.c
        with _db_errors(self.url), self.engine.begin() as conn:
            conn.execute(update(REVIEW_ITEMS).where(c.instance_id == item.instance_id,
                                                    c.state == ReviewState.approved.value)
                         .values(published=True))
        return item.model_copy(update={"published": True})


class _Vanished(Exception):
    """A part file disappeared between listing and reading (a compaction replaced it)."""


def _read(path: Path, columns: list[str] | None) -> pa.Table:
    """:func:`read_part`, raising :class:`_Vanished` when the file no longer exists."""
    try:
        return read_part(path, columns)
    except DatasetError:
        if not path.exists():
            raise _Vanished(str(path)) from None
        raise


def _rows_of(path: Path, table: pa.Table, ids: set[str]) -> list[TaskRow]:
    """The rows of ``table`` (read from ``path``) whose id is in ``ids``, validated."""
    rows = []
    for raw in table.to_pylist():
        if raw["instance_id"] in ids:
            try:
                rows.append(TaskRow.from_arrow_row(raw))
            except (ValidationError, ValueError) as exc:
                raise DatasetError(f"{path}: invalid row {raw['instance_id']!r}: {exc}") from exc
    return rows


def _create_schema(conn: Connection) -> None:
    """Create the table and its indexes unless they exist (safe under concurrent creators)."""
    conn.execute(CreateTable(REVIEW_ITEMS, if_not_exists=True))
    for index in sorted(REVIEW_ITEMS.indexes, key=lambda i: str(i.name)):
        conn.execute(CreateIndex(index, if_not_exists=True))


__all__ = [
    "REVIEW_ITEMS", "STATUS_FILTERS", "ReviewConflict", "ReviewItem", "ReviewQueue",
    "ReviewState", "StatusFilter", "SyncResult", "UnknownReviewItem",
    "age_text", "approved_judged", "default_url",
]
