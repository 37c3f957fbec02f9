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

Storage: the tables of :mod:`repogym.datasets.review.schema` in any SQLAlchemy database (plain
Core, no dialect-specific SQL), by default SQLite at ``<dataset>/review.sqlite``; a shared
PostgreSQL URL (``REPOGYM_REVIEW_DB_URL``) serves a team on several machines.

The team's workflow:

* **claim** an item before deciding or mending it; a claim lasts :data:`CLAIM_MINUTES`
  (``REPOGYM_REVIEW_CLAIM_MINUTES``), is renewed by claiming again, ends with the decision or
  :meth:`ReviewQueue.release`. An item claimed by someone else cannot be decided or mended;
  deciding an unclaimed item claims it in the same statement.
* **mend**: a new version of the task with an edited statement (the leak check runs on the
  edit, and an edit that still gives the fix away is refused) or flaky tests dropped from
  FAIL_TO_PASS / PASS_TO_PASS. The original stays beside every version. Approving a mended
  task first re-verifies it in its sandbox (gold patch passes, empty patch fails); a version
  that does not hold cannot be approved.
* **decide** with a reason from :class:`DecisionLabel` and a :class:`Severity`; approving
  needs a severity of ``none`` or ``minor``.
* **double review**: an item may need two reviewers (a sample chosen at import,
  ``REPOGYM_REVIEW_DOUBLE_FRACTION``, or :meth:`ReviewQueue.require_two`). Each decides
  blind; when they agree, the decision stands; when they disagree, the item is *disputed*
  and a third reviewer's decision is final. :mod:`repogym.datasets.review.stats` measures
  agreement.

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
import hashlib
from datetime import datetime, timedelta, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Sequence, get_args

import pyarrow as pa
from pydantic import ValidationError
from sqlalchemy import case, create_engine, event, func, insert, or_, select, update
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, SQLAlchemyError

from repogym.datasets.review.schema import (
    MAX_REVIEWER,
    REVIEW_DECISIONS,
    REVIEW_ITEMS,
    REVIEW_VERSIONS,
    create_schema,
)
from repogym.datasets.store import DatasetStore, read_part
from repogym.errors import ConfigError, DatasetError, InputError
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Judged, Record, Status, Verdict, utcnow

StatusFilter = Literal["pending", "approved", "rejected", "all"]
STATUS_FILTERS: tuple[str, ...] = get_args(StatusFilter)
DB_NAME = "review.sqlite"
MAX_NOTE = 10_000
MAX_STATEMENT = 50_000
CLAIM_MINUTES = 30.0
SQLITE_BUSY_SECONDS = 30.0
SCAN_ATTEMPTS = 10  # scans of the rejected table while writers keep changing its files


class ReviewState(str, Enum):
    """Where an item of the queue stands."""

    pending = "pending"
    approved = "approved"
    rejected = "rejected"


class ReviewAction(str, Enum):
    """What a reviewer decides."""

    approve = "approve"
    reject = "reject"

    @property
    def state(self) -> ReviewState:
        return ReviewState.approved if self is ReviewAction.approve else ReviewState.rejected


class DecisionLabel(str, Enum):
    """Why: the reason a decision carries (a fixed list, so agreement can be measured)."""

    sound = "sound"  # nothing wrong: the flag was a false alarm
    mended = "mended"  # the problem was mended here (statement edited, a test dropped)
    statement_leak = "statement_leak"  # the statement gives the fix away
    underspecified = "underspecified"  # the statement does not say enough to solve it
    misleading = "misleading"  # the statement says something untrue
    flaky_test = "flaky_test"  # a listed test passes or fails by chance
    wrong_tests = "wrong_tests"  # the tests check something the statement does not ask
    trivial = "trivial"  # nothing to learn: the fix is obvious from the failure
    environment = "environment"  # the environment is broken
    duplicate = "duplicate"  # the same task as another
    other = "other"


class Severity(str, Enum):
    """How bad the problem named by the label is (SWE-bench Verified's 0-3 scale)."""

    none = "none"
    minor = "minor"
    major = "major"
    severe = "severe"


APPROVABLE = frozenset({Severity.none, Severity.minor})
"""Severities an approval may carry: a task with a major problem is rejected or mended first."""

APPROVE_LABELS = frozenset({DecisionLabel.sound, DecisionLabel.mended, DecisionLabel.other,
                            DecisionLabel.underspecified, DecisionLabel.misleading,
                            DecisionLabel.statement_leak, DecisionLabel.flaky_test})
"""Labels an approval may carry (with a minor severity for a problem left in)."""


class ReviewConflict(InputError):
    """Someone else holds or decided the item; this action was not recorded.

    Attributes:
        instance_id: the item.
        reviewer: who holds or decided it.
        state: the item's state.
        decided_at: when it was decided (None while pending).
    """

    def __init__(self, message: str, instance_id: str, reviewer: str,
                 state: ReviewState = ReviewState.pending,
                 decided_at: datetime | None = None) -> None:
        super().__init__(message)
        self.instance_id, self.reviewer = instance_id, reviewer
        self.state, self.decided_at = state, decided_at

    @classmethod
    def decided(cls, instance_id: str, state: ReviewState, reviewer: str,
                decided_at: datetime | None, attempted: str) -> ReviewConflict:
        when = f" at {decided_at:%Y-%m-%d %H:%M:%S} UTC" if decided_at else ""
        return cls(f"{instance_id}: already {state.value} by {reviewer}{when}; "
                   f"your {attempted} was not recorded", instance_id, reviewer, state,
                   decided_at)


class ClaimHeld(ReviewConflict):
    """Another reviewer holds a live claim on the item."""

    def __init__(self, instance_id: str, holder: str, until: datetime, attempted: str) -> None:
        super().__init__(f"{instance_id}: claimed by {holder} until {until:%H:%M:%S} UTC; "
                         f"your {attempted} was not recorded", instance_id, holder)
        self.until = until


class AlreadyReviewed(ReviewConflict):
    """This reviewer already decided the item (a double review needs someone else)."""


class UnknownReviewItem(InputError):
    """No item with this id is in the queue (nor flagged for review in the dataset)."""


class StatementLeaks(InputError):
    """An edited statement still gives the fix away; the edit was not saved.

    Attributes:
        fragments: what leaks (patch lines, new names, approach sentences), for highlighting.
    """

    def __init__(self, instance_id: str, fragments: Sequence[str]) -> None:
        shown = "; ".join(repr(f[:80]) for f in fragments[:5])
        super().__init__(f"{instance_id}: the edited statement still gives the fix away "
                         f"({shown}); the edit was not saved")
        self.fragments = tuple(fragments)


class MendDoesNotHold(InputError):
    """A mended version failed its re-verification and cannot be approved."""


class Recheck(Record):
    """What re-verifying a mended task found (see :func:`repogym.datasets.reverify.decide`).

    ``held`` True: the gold patch passes and the empty patch fails; False: it does not hold,
    ``detail`` says why; ``error`` set: the sandbox broke and nothing was decided.
    """

    held: bool = False
    detail: str = ""
    error: str = ""


Verifier = Callable[[TaskRow], Recheck]
"""Re-verifies one task in its environment (see :mod:`repogym.datasets.review.mend`)."""


class Decision(Record):
    """One reviewer's decision on an item."""

    instance_id: str
    reviewer: str
    action: ReviewAction
    label: DecisionLabel
    severity: Severity
    note: str = ""
    version: int = 0
    decided_at: datetime


class Version(Record):
    """A mended version of an item's task (version 0, the original, is the item's row)."""

    instance_id: str
    version: int
    task: TaskRow
    editor: str
    edited_at: datetime
    summary: str
    verified: str = ""  # "", "held" or "failed"
    verify_detail: str = ""
    verified_at: datetime | None = None


class ReviewItem(Record):
    """One flagged task in the queue, with its claim, decisions and versions.

    ``task`` is the current version (the original until mended; then ``original`` holds
    the judge's row). ``decisions`` are every reviewer's, oldest first; ``versions`` are
    loaded by :meth:`ReviewQueue.get` only.
    """

    instance_id: str
    repo: str
    reason: str
    state: ReviewState
    flagged_at: datetime
    queued_at: datetime
    language: str = "python"
    reviewer: str = ""
    note: str = ""
    label: str = ""
    severity: str = ""
    decided_at: datetime | None = None
    published: bool = False
    claimed_by: str = ""
    claimed_until: datetime | None = None
    reviews_needed: int = 1
    disputed: bool = False
    version: int = 0
    task: TaskRow
    original: TaskRow | None = None
    decisions: tuple[Decision, ...] = ()
    versions: tuple[Version, ...] = ()

    @property
    def detail(self) -> str:
        """The judge's human-readable explanation of why it flagged the task."""
        return self.original.detail if self.original is not None else self.task.detail

    def holder(self, now: datetime | None = None) -> str:
        """Who holds a live claim ("" if nobody)."""
        if not self.claimed_by or self.claimed_until is None:
            return ""
        return self.claimed_by if self.claimed_until > (now or utcnow()) else ""

    @property
    def counted(self) -> tuple[Decision, ...]:
        """The decisions that count: those on the current version (a decision on a version
        mended since judged something else; it stays in ``decisions`` as history)."""
        return tuple(d for d in self.decisions if d.version == self.version)

    def reviewed_by(self, reviewer: str) -> bool:
        """Whether ``reviewer`` decided the current version."""
        return any(d.reviewer == reviewer for d in self.counted)

    @property
    def current_version(self) -> Version | None:
        return next((v for v in self.versions if v.version == self.version), None)


class ItemFilter(Record):
    """Which items :meth:`ReviewQueue.list` returns (every field optional)."""

    status: StatusFilter = "pending"
    repo: str = ""
    language: str = ""
    reason: str = ""  # the judge's flag reason; a prefix such as ``probe:`` matches a family
    older_than: timedelta | None = None  # flagged at least this long ago
    newer_than: timedelta | None = None  # flagged at most this long ago
    claimed_by: str = ""  # live claims of this reviewer only
    limit: int | None = None  # at most this many (the first in the list's order)


class SyncResult(Record):
    """What one :meth:`ReviewQueue.sync` did."""

    imported: int
    published: int


def default_url(root: Path) -> str:
    """The embedded default: SQLite at ``<root>/review.sqlite``."""
    return URL.create("sqlite", database=str(Path(root).resolve() / DB_NAME)).render_as_string()


def is_sqlite(url: str) -> bool:
    """Whether ``url`` names a SQLite database (a queue on one machine)."""
    with contextlib.suppress(ArgumentError):
        return make_url(url).get_backend_name() == "sqlite"
    return False


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


def _utc_or_none(value: datetime | None) -> datetime | None:
    return None if value is None else _utc(value)


def make_engine(url: str) -> Engine:
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
def db_errors(url: str) -> Iterator[None]:
    """Translate database failures into :class:`DatasetError` naming the database."""
    try:
        yield
    except SQLAlchemyError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DatasetError(f"review database {make_safe(url)}: {first}") from exc


def _item(row: Any, current: dict[str, TaskRow],
          decisions: dict[str, builtins.list[Decision]]) -> ReviewItem:
    m = row._mapping
    flagged = TaskRow.model_validate_json(m["row_json"])
    task = current.get(m["instance_id"], flagged)
    return ReviewItem(
        instance_id=m["instance_id"], repo=m["repo"], reason=m["reason"],
        state=ReviewState(m["state"]), flagged_at=_utc(m["flagged_at"]),
        queued_at=_utc(m["queued_at"]), language=m["language"], reviewer=m["reviewer"],
        note=m["note"], label=m["label"], severity=m["severity"],
        decided_at=_utc_or_none(m["decided_at"]), published=bool(m["published"]),
        claimed_by=m["claimed_by"], claimed_until=_utc_or_none(m["claimed_until"]),
        reviews_needed=m["reviews_needed"], disputed=bool(m["disputed"]),
        version=m["version"], task=task, original=flagged if task is not flagged else None,
        decisions=tuple(decisions.get(m["instance_id"], ())))


def _decision(row: Any) -> Decision:
    m = row._mapping
    return Decision(instance_id=m["instance_id"], reviewer=m["reviewer"],
                    action=ReviewAction(m["action"]), label=DecisionLabel(m["label"]),
                    severity=Severity(m["severity"]), note=m["note"], version=m["version"],
                    decided_at=_utc(m["decided_at"]))


def _version(row: Any) -> Version:
    m = row._mapping
    return Version(instance_id=m["instance_id"], version=m["version"],
                   task=TaskRow.model_validate_json(m["row_json"]), editor=m["editor"],
                   edited_at=_utc(m["edited_at"]), summary=m["summary"],
                   verified=m["verified"], verify_detail=m["verify_detail"],
                   verified_at=_utc_or_none(m["verified_at"]))


def in_double_sample(instance_id: str, fraction: float) -> bool:
    """Whether ``instance_id`` falls in a ``fraction`` sample (stable: by its hash)."""
    if fraction <= 0:
        return False
    digest = int.from_bytes(hashlib.sha256(instance_id.encode()).digest()[:4], "big")
    return digest % 10_000 < round(fraction * 10_000)


def _values_for(row: TaskRow, now: datetime, double_fraction: float) -> dict[str, Any]:
    return dict(instance_id=row.instance_id, repo=row.repo, reason=row.reason,
                state=ReviewState.pending.value, row_json=row.model_dump_json(),
                flagged_at=row.created_at, queued_at=now, reviewer="", note="",
                decided_at=None, published=False, language=row.language, claimed_by="",
                claimed_until=None, disputed=False, label="", severity="", version=0,
                reviews_needed=2 if in_double_sample(row.instance_id, double_fraction) else 1)


def approved_judged(item: ReviewItem) -> Judged:
    """The ``accept`` verdict an approval writes to the ``tasks`` table: the current version
    of the task (a mended statement, fewer tests), the judge's evidence plus the review's.

    Deterministic in ``item`` (the decision time comes from the queue), so publishing again
    after a crash writes the same row.

    Raises:
        ValueError: ``item`` is not approved.
    """
    if item.state is not ReviewState.approved or item.decided_at is None:
        raise ValueError(f"{item.instance_id}: is {item.state.value}, not approved")
    row, flagged = item.task, item.original or item.task
    evidence = {**row.evidence, "review_reviewer": item.reviewer, "review_note": item.note,
                "review_reason": flagged.reason, "review_detail": flagged.detail,
                "review_decided_at": item.decided_at.isoformat(),
                "review_label": item.label, "review_severity": item.severity,
                "review_reviewers": ",".join(d.reviewer for d in item.counted)
                or item.reviewer}
    if item.original is not None:
        evidence |= {"review_version": str(item.version),
                     "review_original_statement": flagged.problem_statement}
        dropped = [t for t in flagged.FAIL_TO_PASS + flagged.PASS_TO_PASS
                   if t not in row.FAIL_TO_PASS + row.PASS_TO_PASS]
        if dropped:
            evidence["review_dropped_tests"] = "\n".join(dropped)
    mended = " after mending" if item.original is not None else ""
    verdict = Verdict(instance_id=row.instance_id, status=Status.accept, reason="",
                      detail=f"approved by {item.reviewer} in manual review{mended} "
                             f"(flagged {flagged.reason or 'for review'})",
                      fail_to_pass=row.FAIL_TO_PASS, pass_to_pass=row.PASS_TO_PASS,
                      evidence=evidence, seconds=row.judge_seconds)
    return Judged(candidate=row.to_candidate(), verdict=verdict,
                  statement=row.problem_statement, image=row.image, created_at=item.decided_at)


def check_reviewer(reviewer: str) -> str:
    """A reviewer's name, stripped; one line of at most 255 characters.

    Raises:
        InputError: empty, too long or several lines.
    """
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


def parse_label(value: str | DecisionLabel | None, default: DecisionLabel) -> DecisionLabel:
    """A label from its name ("" or None: ``default``).

    Raises:
        InputError: not one of :class:`DecisionLabel`.
    """
    if value is None or value == "":
        return default
    try:
        return DecisionLabel(value)
    except ValueError:
        raise InputError(f"unknown reason {value!r}; valid: "
                         f"{', '.join(x.value for x in DecisionLabel)}") from None


def parse_severity(value: str | Severity | None, default: Severity) -> Severity:
    """A severity from its name ("" or None: ``default``).

    Raises:
        InputError: not one of :class:`Severity`.
    """
    if value is None or value == "":
        return default
    try:
        return Severity(value)
    except ValueError:
        raise InputError(f"unknown severity {value!r}; valid: "
                         f"{', '.join(x.value for x in Severity)}") from None


def check_decision(action: ReviewAction, label: DecisionLabel, severity: Severity) -> None:
    """The labelling rules: an approval carries at most a minor problem and an approvable
    reason; a rejection names a problem (not ``sound`` nor ``mended``) that is not ``none``.

    Raises:
        InputError: the combination breaks a rule.
    """
    if action is ReviewAction.approve:
        if severity not in APPROVABLE:
            raise InputError(f"an approval's severity is none or minor, not {severity.value}; "
                             "mend the task first, or reject it")
        if label not in APPROVE_LABELS:
            raise InputError(f"an approval cannot carry the reason {label.value!r}; reject it")
        return
    if label in (DecisionLabel.sound, DecisionLabel.mended):
        raise InputError(f"a rejection needs the problem as its reason, not {label.value!r}")
    if severity is Severity.none:
        raise InputError("a rejection needs a severity above none")


def decision_outcome(decisions: Sequence[Decision], needed: int,
                     disputed: bool) -> tuple[Decision | None, int, bool]:
    """(the final decision or None, reviews now needed, disputed) after ``decisions``.

    Enough decisions that agree (or any after a dispute): the last one is final. Enough that
    disagree: the item becomes disputed and needs one more, whose decision is final.
    """
    if len(decisions) < needed:
        return None, needed, disputed
    if disputed or len({d.action for d in decisions}) == 1:
        return decisions[-1], needed, disputed
    return None, len(decisions) + 1, True


class ReviewQueue:
    """The flagged tasks of ``store`` and the decisions on them (see the module docstring).

    Args:
        store: the dataset whose ``review`` rows are queued and which approvals write to.
        url: a SQLAlchemy database URL; None (or "") means SQLite at
            ``<store.root>/review.sqlite``.
        verifier: re-verifies a mended task before its approval (None: approving a mended
            task is refused with a :class:`ConfigError`).
        claim_minutes: how long a claim lasts.
        double_fraction: the share of newly imported items that need two reviewers.
        clock: the current time (tests move it to expire claims).

    Raises:
        InputError: the default database is used and ``store.root`` is not a directory (no
            dataset there).
        ConfigError: ``url`` is malformed or its driver is missing.
        DatasetError: the database cannot be reached or its tables created.

    Safe to share between threads (each call checks out its own connection) and to use from
    several processes at once. Close with :meth:`close` or use as a context manager.
    """

    def __init__(self, store: DatasetStore, url: str | None = None, *,
                 verifier: Verifier | None = None, claim_minutes: float = CLAIM_MINUTES,
                 double_fraction: float = 0.0,
                 clock: Callable[[], datetime] = utcnow) -> None:
        if not url and not store.root.is_dir():
            raise InputError(f"{store.root}: no dataset here (not a directory)")
        if claim_minutes <= 0 or not 0.0 <= double_fraction <= 1.0:
            raise ConfigError("claim_minutes must be positive and double_fraction in [0, 1]")
        self.store = store
        self.url = url or default_url(store.root)
        self.verifier, self.clock = verifier, clock
        self.claim_span = timedelta(minutes=claim_minutes)
        self.double_fraction = double_fraction
        self.engine = make_engine(self.url)
        with db_errors(self.url):
            create_schema(self.engine)

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
        with db_errors(self.url):
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
        now = self.clock()
        values = [_values_for(r, now, self.double_fraction) for r in rows]
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(REVIEW_ITEMS), values)
            return len(rows)
        except IntegrityError:
            pass
        inserted = 0
        for value in values:
            with contextlib.suppress(IntegrityError), self.engine.begin() as conn:
                conn.execute(insert(REVIEW_ITEMS).values(**value))
                inserted += 1
        return inserted

    # -- reading -----------------------------------------------------------------------

    def list(self, status: str | ItemFilter = "pending") -> builtins.list[ReviewItem]:
        """Items matching ``status`` (``pending``, ``approved``, ``rejected`` or ``all``) or an
        :class:`ItemFilter`, after a :meth:`sync`. Order: pending first (oldest flag first),
        then by decision, newest first.

        Raises:
            InputError: an unknown status.
            DatasetError: a part file or the database is unreadable.
        """
        wanted = status if isinstance(status, ItemFilter) else self._status_filter(status)
        self.sync()
        with db_errors(self.url):
            return self._select(*self._where(wanted), limit=wanted.limit)

    def count(self, status: str | ItemFilter = "pending") -> int:
        """How many items :meth:`list` would return without a limit (no sync)."""
        wanted = status if isinstance(status, ItemFilter) else self._status_filter(status)
        with db_errors(self.url), self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(REVIEW_ITEMS)
                                    .where(*self._where(wanted))).scalar_one())

    def pending_ids(self) -> builtins.list[str]:
        """The ids of pending items in the list's order (no task rows read)."""
        c = REVIEW_ITEMS.c
        with db_errors(self.url), self.engine.connect() as conn:
            return list(conn.execute(select(c.instance_id).where(
                c.state == ReviewState.pending.value).order_by(c.flagged_at, c.instance_id))
                .scalars())

    @staticmethod
    def _status_filter(status: str) -> ItemFilter:
        if status not in STATUS_FILTERS:
            raise InputError(f"unknown status {status!r}; valid: {', '.join(STATUS_FILTERS)}")
        return ItemFilter(status=status)

    def _where(self, f: ItemFilter) -> builtins.list[Any]:
        c, now = REVIEW_ITEMS.c, self.clock()
        where: builtins.list[Any] = [] if f.status == "all" else [c.state == f.status]
        if f.repo:
            where.append(c.repo == f.repo)
        if f.language:
            where.append(c.language == f.language)
        if f.reason:
            where.append(or_(c.reason == f.reason, c.reason.startswith(f.reason, autoescape=True))
                         if f.reason.endswith(":") else c.reason == f.reason)
        if f.older_than is not None:
            where.append(c.flagged_at <= now - f.older_than)
        if f.newer_than is not None:
            where.append(c.flagged_at >= now - f.newer_than)
        if f.claimed_by:
            where += [c.claimed_by == f.claimed_by, c.claimed_until > now]
        return where

    def facets(self) -> dict[str, builtins.list[str]]:
        """The repos, languages and reasons present in the queue (for filter menus)."""
        c = REVIEW_ITEMS.c
        with db_errors(self.url), self.engine.connect() as conn:
            return {name: sorted(conn.execute(select(col).distinct()).scalars())
                    for name, col in (("repo", c.repo), ("language", c.language),
                                      ("reason", c.reason))}

    def get(self, instance_id: str) -> ReviewItem:
        """The item with this id with its decisions and versions (syncing first if it is not
        queued yet).

        Raises:
            UnknownReviewItem: no such item, in the queue or flagged in the dataset.
            DatasetError: a part file or the database is unreadable.
        """
        with db_errors(self.url):
            found = self._select(REVIEW_ITEMS.c.instance_id == instance_id)
            if not found:
                self.sync()
                found = self._select(REVIEW_ITEMS.c.instance_id == instance_id)
            if not found:
                raise UnknownReviewItem(f"{instance_id}: not in the review queue of "
                                        f"{self.store.root} (no such task flagged for review)")
            with self.engine.connect() as conn:
                versions = tuple(_version(r) for r in conn.execute(
                    select(REVIEW_VERSIONS).where(REVIEW_VERSIONS.c.instance_id == instance_id)
                    .order_by(REVIEW_VERSIONS.c.version)))
        return found[0].model_copy(update={"versions": versions})

    def decisions(self, since: datetime | None = None) -> builtins.list[Decision]:
        """Every decision (since ``since``), oldest first."""
        d = REVIEW_DECISIONS.c
        query = select(REVIEW_DECISIONS).order_by(d.decided_at, d.id)
        if since is not None:
            query = query.where(d.decided_at >= since)
        with db_errors(self.url), self.engine.connect() as conn:
            return [_decision(r) for r in conn.execute(query)]

    def _select(self, *where: Any, limit: int | None = None) -> builtins.list[ReviewItem]:
        c = REVIEW_ITEMS.c
        pending_first = case((c.state == ReviewState.pending.value, 0), else_=1)
        query = (select(REVIEW_ITEMS).where(*where)
                 .order_by(pending_first, c.decided_at.desc(), c.flagged_at, c.instance_id)
                 .limit(limit))
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            ids = [r._mapping["instance_id"] for r in rows]
            current = self._current_tasks(conn, [r for r in rows if r._mapping["version"]])
            decisions: dict[str, builtins.list[Decision]] = {}
            for chunk in _chunks(ids, 500):
                d = REVIEW_DECISIONS.c
                for r in conn.execute(select(REVIEW_DECISIONS).where(d.instance_id.in_(chunk))
                                      .order_by(d.id)):
                    decisions.setdefault(r._mapping["instance_id"], []).append(_decision(r))
        return [_item(r, current, decisions) for r in rows]

    @staticmethod
    def _current_tasks(conn: Connection, rows: Sequence[Any]) -> dict[str, TaskRow]:
        v = REVIEW_VERSIONS.c
        current = {}
        for row in rows:
            m = row._mapping
            raw = conn.execute(select(v.row_json).where(
                v.instance_id == m["instance_id"], v.version == m["version"])).scalar_one()
            current[m["instance_id"]] = TaskRow.model_validate_json(raw)
        return current

    # -- claiming ----------------------------------------------------------------------

    def claim(self, instance_id: str, reviewer: str) -> ReviewItem:
        """Claim a pending item for :attr:`claim_span` (renewing one's own claim).

        Raises:
            ClaimHeld: someone else holds a live claim.
            AlreadyReviewed: ``reviewer`` already decided it (double review needs another).
            ReviewConflict: the item is decided.
            UnknownReviewItem: no such item.
        """
        name = check_reviewer(reviewer)
        item = self.get(instance_id)
        if item.reviewed_by(name) and item.state is ReviewState.pending:
            raise AlreadyReviewed(f"{instance_id}: you ({name}) already reviewed it; it waits "
                                  "for another reviewer", instance_id, name)
        now = self.clock()
        c = REVIEW_ITEMS.c
        change = (update(REVIEW_ITEMS).where(c.instance_id == instance_id,
                                             c.state == ReviewState.pending.value,
                                             self._claimable_by(name, now))
                  .values(claimed_by=name, claimed_until=now + self.claim_span))
        with db_errors(self.url), self.engine.begin() as conn:
            won = conn.execute(change).rowcount == 1
        if not won:
            raise self._why_not(instance_id, "claim")
        return self.get(instance_id)

    def release(self, instance_id: str, reviewer: str) -> ReviewItem:
        """Give up one's claim (nothing happens if ``reviewer`` does not hold it)."""
        name = check_reviewer(reviewer)
        c = REVIEW_ITEMS.c
        with db_errors(self.url), self.engine.begin() as conn:
            conn.execute(update(REVIEW_ITEMS).where(c.instance_id == instance_id,
                                                    c.claimed_by == name)
                         .values(claimed_by="", claimed_until=None))
        return self.get(instance_id)

    @staticmethod
    def _claimable_by(name: str, now: datetime) -> Any:
        c = REVIEW_ITEMS.c
        return or_(c.claimed_by == name, c.claimed_by == "", c.claimed_until.is_(None),
                   c.claimed_until <= now)

    def _why_not(self, instance_id: str, attempted: str) -> ReviewConflict:
        """The conflict that stopped an action: decided, or claimed by someone else."""
        item = self.get(instance_id)
        if item.state is not ReviewState.pending:
            return ReviewConflict.decided(instance_id, item.state, item.reviewer,
                                          item.decided_at, attempted)
        holder = item.holder(self.clock())
        if holder and item.claimed_until is not None:
            return ClaimHeld(instance_id, holder, item.claimed_until, attempted)
        return ReviewConflict(f"{instance_id}: changed while you were looking (now at version "
                              f"{item.version}); look again. Your {attempted} was not "
                              "recorded", instance_id, item.claimed_by)

    def require_two(self, instance_ids: Sequence[str]) -> int:
        """Make pending items need two reviewers (a double-review sample). Returns how many
        changed."""
        self.sync()
        c = REVIEW_ITEMS.c
        with db_errors(self.url), self.engine.begin() as conn:
            return int(conn.execute(update(REVIEW_ITEMS).where(
                c.instance_id.in_(list(instance_ids)), c.state == ReviewState.pending.value,
                c.reviews_needed < 2).values(reviews_needed=2)).rowcount)

    # -- mending -----------------------------------------------------------------------

    def mend(self, instance_id: str, reviewer: str, *, statement: str | None = None,
             drop_tests: Sequence[str] = ()) -> ReviewItem:
        """Save a new version of the item's task: ``statement`` replaces the problem statement
        (the leak check runs on an edited one), ``drop_tests`` leave FAIL_TO_PASS /
        PASS_TO_PASS.
        ``reviewer`` must hold the claim. The original and earlier versions are kept.

        Raises:
            StatementLeaks: the new statement still gives the fix away (nothing saved).
            InputError: nothing changes, the statement is empty or too long, a dropped test
                is not listed, or every FAIL_TO_PASS test would go.
            ClaimHeld, ReviewConflict: ``reviewer`` does not hold the claim, the item is
                decided, or it was mended meanwhile.
        """
        from repogym.generators.leaks import statement_leaks

        name = check_reviewer(reviewer)
        item = self.get(instance_id)
        now = self.clock()
        if item.state is ReviewState.pending and item.holder(now) != name:
            raise (self._why_not(instance_id, "edit") if item.holder(now) else
                   InputError(f"{instance_id}: claim it before mending it"))
        task = item.task
        new = _mended_row(task, statement, drop_tests)
        leaks = (statement_leaks(new.problem_statement, task.patch, task.test_patch)
                 if new.problem_statement != task.problem_statement else [])
        if leaks:
            raise StatementLeaks(instance_id, [leak.fragment for leak in leaks])
        c, version = REVIEW_ITEMS.c, item.version + 1
        bump = (update(REVIEW_ITEMS).where(
            c.instance_id == instance_id, c.state == ReviewState.pending.value,
            c.version == item.version, c.claimed_by == name, c.claimed_until > now)
            .values(version=version))
        with db_errors(self.url), self.engine.begin() as conn:
            won = conn.execute(bump).rowcount == 1
            if won:
                conn.execute(insert(REVIEW_VERSIONS).values(
                    instance_id=instance_id, version=version, row_json=new.model_dump_json(),
                    editor=name, edited_at=now, summary=_summary(task, new), verified="",
                    verify_detail="", verified_at=None))
        if not won:
            raise self._why_not(instance_id, "edit")
        return self.get(instance_id)

    def _ensure_holds(self, item: ReviewItem) -> None:
        """Re-verify the item's current (mended) version unless done; refuse one that fails.

        Raises:
            ConfigError: no verifier.
            MendDoesNotHold: the version failed its re-verification.
            InfraError: the sandbox broke (nothing recorded; try again).
        """
        from repogym.errors import InfraError

        version = item.current_version
        if version is None or version.verified == "held":
            return
        if version.verified != "failed":
            if self.verifier is None:
                raise ConfigError(f"{item.instance_id}: approving a mended task re-verifies it "
                                  "in its sandbox, and this queue has no verifier")
            check = self.verifier(version.task)
            if check.error:
                raise InfraError(f"{item.instance_id}: re-verifying the mended task failed in "
                                 f"its sandbox ({check.error}); nothing was decided")
            v = REVIEW_VERSIONS.c
            with db_errors(self.url), self.engine.begin() as conn:
                conn.execute(update(REVIEW_VERSIONS).where(
                    v.instance_id == item.instance_id, v.version == version.version).values(
                    verified="held" if check.held else "failed", verify_detail=check.detail,
                    verified_at=self.clock()))
            if check.held:
                return
            version = version.model_copy(update={"verify_detail": check.detail})
        raise MendDoesNotHold(f"{item.instance_id}: version {version.version} does not hold "
                              f"when re-verified ({version.verify_detail}); mend it again or "
                              "reject it")

    # -- deciding ----------------------------------------------------------------------

    def decide(self, instance_id: str, reviewer: str, action: ReviewAction | str, *,
               label: DecisionLabel | str | None = None,
               severity: Severity | str | None = None, note: str = "") -> ReviewItem:
        """Record ``reviewer``'s decision. Final when enough reviewers agree (module
        docstring); a final approval writes the task to the ``tasks`` table (a mended task
        is re-verified first).

        Defaults: an approval is ``sound`` / ``none``; a rejection ``other`` / ``major``.

        Returns:
            The item after the decision (still pending when another review is needed).

        Raises:
            InputError: a bad name, note, label or severity (:func:`check_decision`).
            ClaimHeld: someone else holds the claim.
            AlreadyReviewed: ``reviewer`` already decided this item.
            ReviewConflict: the item was already decided, or mended meanwhile.
            MendDoesNotHold, ConfigError, InfraError: see :meth:`_ensure_holds`.
            DatasetError: the ``tasks`` row could not be written (the approval *is*
                recorded; the next :meth:`sync` writes it).
        """
        try:
            act = ReviewAction(action)
        except ValueError:
            raise InputError(f"unknown action {action!r}; valid: approve, reject") from None
        approve = act is ReviewAction.approve
        name = check_reviewer(reviewer)
        text = _check_note(note, required=not approve)
        lab = parse_label(label, DecisionLabel.sound if approve else DecisionLabel.other)
        sev = parse_severity(severity, Severity.none if approve else Severity.major)
        check_decision(act, lab, sev)
        item = self.get(instance_id)
        if item.state is ReviewState.pending and item.reviewed_by(name):
            raise AlreadyReviewed(f"{instance_id}: you ({name}) already reviewed it; it waits "
                                  "for another reviewer", instance_id, name)
        if approve and item.state is ReviewState.pending:
            if item.holder(self.clock()) not in ("", name):  # no sandbox run for nothing
                raise self._why_not(instance_id, "approval")
            self._ensure_holds(item)
        final = self._record(item, Decision(
            instance_id=instance_id, reviewer=name, action=act, label=lab, severity=sev,
            note=text, version=item.version, decided_at=self.clock()))
        after = self.get(instance_id)
        return self._publish(after) if final and approve else after

    def _record(self, item: ReviewItem, decision: Decision) -> bool:
        """Insert the decision and settle the item in one transaction; True when final."""
        c, now, name = REVIEW_ITEMS.c, decision.decided_at, decision.reviewer
        verb = "approval" if decision.action is ReviewAction.approve else "rejection"
        take = (update(REVIEW_ITEMS).where(
            c.instance_id == item.instance_id, c.state == ReviewState.pending.value,
            c.version == item.version, self._claimable_by(name, now))
            .values(claimed_by="", claimed_until=None))
        d = REVIEW_DECISIONS.c
        with db_errors(self.url), self.engine.begin() as conn:
            won = conn.execute(take).rowcount == 1  # holds the item row's lock from here on
            again = won and conn.execute(select(d.id).where(
                d.instance_id == item.instance_id, d.reviewer == name,
                d.version == item.version)).first() is not None
            final = won and not again and self._settle(conn, item.instance_id, decision)
        if again:
            raise AlreadyReviewed(f"{item.instance_id}: you ({name}) already reviewed it",
                                  item.instance_id, name)
        if not won:
            raise self._why_not(item.instance_id, verb)
        return final

    @staticmethod
    def _settle(conn: Connection, instance_id: str, decision: Decision) -> bool:
        """Insert ``decision`` and apply :func:`decision_outcome`; True when final."""
        c = REVIEW_ITEMS.c
        conn.execute(insert(REVIEW_DECISIONS).values(
            instance_id=instance_id, reviewer=decision.reviewer, action=decision.action.value,
            label=decision.label.value, severity=decision.severity.value, note=decision.note,
            version=decision.version, decided_at=decision.decided_at))
        d = REVIEW_DECISIONS.c
        state = conn.execute(select(c.reviews_needed, c.disputed)
                             .where(c.instance_id == instance_id)).one()
        made = [_decision(r) for r in conn.execute(
            select(REVIEW_DECISIONS).where(d.instance_id == instance_id,
                                           d.version == decision.version).order_by(d.id))]
        final, needed, disputed = decision_outcome(made, state.reviews_needed,
                                                   bool(state.disputed))
        values: dict[str, Any] = {"reviews_needed": needed, "disputed": disputed}
        if final is not None:
            values |= dict(state=final.action.state.value, reviewer=final.reviewer,
                           note=final.note, label=final.label.value,
                           severity=final.severity.value, decided_at=decision.decided_at,
                           published=False)
        conn.execute(update(REVIEW_ITEMS).where(c.instance_id == instance_id).values(**values))
        return final is not None

    def approve(self, instance_id: str, reviewer: str, note: str = "", *,
                label: DecisionLabel | str | None = None,
                severity: Severity | str | None = None) -> ReviewItem:
        """:meth:`decide` to approve (see there)."""
        return self.decide(instance_id, reviewer, ReviewAction.approve, label=label,
                           severity=severity, note=note)

    def reject(self, instance_id: str, reviewer: str, note: str, *,
               label: DecisionLabel | str | None = None,
               severity: Severity | str | None = None) -> ReviewItem:
        """:meth:`decide` to reject (see there); a note saying why is required."""
        return self.decide(instance_id, reviewer, ReviewAction.reject, label=label,
                           severity=severity, note=note)

    def _publish(self, item: ReviewItem) -> ReviewItem:
        """Write an approved item's ``tasks`` row, then mark it published."""
        try:
            self.store.write([approved_judged(item)])
        except (OSError, DatasetError, ValueError) as exc:
            raise DatasetError(f"{item.instance_id}: approved by {item.reviewer}, but writing "
                               f"it to the dataset failed ({exc}); the next sync retries") from exc
        c = REVIEW_ITEMS.c
        with db_errors(self.url), self.engine.begin() as conn:
            conn.execute(update(REVIEW_ITEMS).where(c.instance_id == item.instance_id,
                                                    c.state == ReviewState.approved.value)
                         .values(published=True))
        return item.model_copy(update={"published": True})


def _mended_row(task: TaskRow, statement: str | None, drop_tests: Sequence[str]) -> TaskRow:
    """``task`` with a new statement and fewer tests, validated.

    Raises:
        InputError: nothing changes, a bad statement, an unlisted test, or no FAIL_TO_PASS left.
    """
    text = (task.problem_statement if statement is None  # a browser's form sends CRLF
            else statement.replace("\r\n", "\n").replace("\r", "\n").strip())
    if not text:
        raise InputError("the statement cannot be empty")
    if len(text) > MAX_STATEMENT:
        raise InputError(f"the statement is {len(text)} characters; at most {MAX_STATEMENT}")
    drop = set(drop_tests)
    unknown = sorted(drop - set(task.FAIL_TO_PASS) - set(task.PASS_TO_PASS))
    if unknown:
        raise InputError(f"not a listed test of this task: {', '.join(unknown[:5])}")
    f2p = tuple(t for t in task.FAIL_TO_PASS if t not in drop)
    if not f2p:
        raise InputError("every FAIL_TO_PASS test would be dropped; reject the task instead")
    if text == task.problem_statement and not drop:
        raise InputError("nothing to save: the statement is unchanged and no test is dropped")
    data = task.model_dump() | {"problem_statement": text, "FAIL_TO_PASS": f2p,
                                "PASS_TO_PASS": tuple(t for t in task.PASS_TO_PASS
                                                      if t not in drop)}
    return TaskRow.model_validate(data)


def _summary(old: TaskRow, new: TaskRow) -> str:
    parts = ["statement edited"] if old.problem_statement != new.problem_statement else []
    dropped = [t for t in old.FAIL_TO_PASS + old.PASS_TO_PASS
               if t not in new.FAIL_TO_PASS + new.PASS_TO_PASS]
    if dropped:
        parts.append("dropped " + ", ".join(dropped))
    return "; ".join(parts)


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class _Vanished(Exception):
    """A part file disappeared between listing and reading (a compaction replaced it)."""


def _read(path: Path, columns: builtins.list[str] | None) -> pa.Table:
    """:func:`read_part`, raising :class:`_Vanished` when the file no longer exists."""
    try:
        return read_part(path, columns)
    except DatasetError:
        if not path.exists():
            raise _Vanished(str(path)) from None
        raise


def _rows_of(path: Path, table: pa.Table, ids: set[str]) -> builtins.list[TaskRow]:
    """The rows of ``table`` (read from ``path``) whose id is in ``ids``, validated."""
    rows = []
    for raw in table.to_pylist():
        if raw["instance_id"] in ids:
            try:
                rows.append(TaskRow.from_arrow_row(raw))
            except (ValidationError, ValueError) as exc:
                raise DatasetError(f"{path}: invalid row {raw['instance_id']!r}: {exc}") from exc
    return rows


__all__ = [
    "APPROVABLE", "REVIEW_ITEMS", "STATUS_FILTERS", "AlreadyReviewed", "ClaimHeld", "Decision",
    "DecisionLabel", "ItemFilter", "MendDoesNotHold", "Recheck", "ReviewAction",
    "ReviewConflict", "ReviewItem", "ReviewQueue", "ReviewState", "Severity",
    "StatementLeaks", "StatusFilter", "SyncResult", "UnknownReviewItem", "Verifier", "Version",
    "age_text", "approved_judged", "check_decision", "check_reviewer", "db_errors",
    "decision_outcome", "default_url", "in_double_sample", "is_sqlite", "make_engine",
    "make_safe", "parse_label", "parse_severity",
]
