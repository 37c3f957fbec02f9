"""Who may decide: reviewers with tokens, browser sessions, CSRF tokens.

* A **reviewer** is added by someone with access to the queue's database
  (``repogym review reviewer add NAME``), which prints a token once. The database keeps only
  its SHA-256: a token is 32 random bytes, so a fast hash is as good as a slow one here and
  a stolen database gives no token away.
* The **CLI** signs in with the token (``--token`` or ``REPOGYM_REVIEW_TOKEN``); the page
  with a form that trades the token for a **session**: a random cookie (HttpOnly,
  SameSite=Strict) whose SHA-256 is the session's key, valid for :data:`SESSION_HOURS`.
* Every **form** carries the session's CSRF token; a POST whose token does not match its
  session's is refused. A visitor who has not signed in gets an anonymous session, so the
  sign-in form is protected too, and signing in replaces the session (no fixation).
* The reviewer's name always comes from the sign-in, never from a form field.

**Open mode.** A queue on the default SQLite database with no reviewer added, served on a
loopback address, may stay open (a name is typed in the form, as on a one-person machine);
:func:`sign_in_required` decides, and the page says which mode it is in.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from repogym.datasets.review.queue import _utc, check_reviewer, db_errors, is_sqlite
from repogym.datasets.review.schema import REVIEW_SESSIONS, REVIEWERS
from repogym.errors import InputError
from repogym.schemas.records import Record, utcnow

SESSION_HOURS = 12.0
TOKEN_PREFIX = "rgr_"
COOKIE = "repogym_review_session"


class SignInFailed(InputError):
    """A token or session that does not sign anyone in (unknown, revoked or expired)."""


class Reviewer(Record):
    """A reviewer who may sign in."""

    name: str
    created_at: datetime
    active: bool


class Session(Record):
    """A browser session: who signed in ("" before sign-in) and its CSRF token."""

    reviewer: str
    csrf: str
    expires_at: datetime

    @property
    def signed_in(self) -> bool:
        return bool(self.reviewer)


def sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sign_in_required(url: str, has_reviewers: bool, host: str | None = None) -> bool:
    """Sign-in is required unless the queue is on SQLite with no reviewer added (and, for the
    page, served on a loopback ``host``)."""
    local = is_sqlite(url) and (host is None or is_loopback(host))
    return has_reviewers or not local


class Reviewers:
    """The reviewers and sessions stored in a queue's database (``engine``, named ``url``)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine, self.url = engine, url

    # -- reviewers ---------------------------------------------------------------------

    def add(self, name: str) -> str:
        """Add a reviewer; returns their token (shown once, stored hashed).

        Raises:
            InputError: a bad name, or a reviewer of that name exists.
        """
        who = check_reviewer(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with db_errors(self.url):  # the try inside: db_errors makes it a DatasetError
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(REVIEWERS).values(name=who, token_sha256=sha256(token),
                                                          created_at=utcnow(), active=True))
            except IntegrityError:
                raise InputError(f"reviewer {who!r} exists; use rotate for a new token") \
                    from None
        return token

    def rotate(self, name: str) -> str:
        """A new token for ``name`` (the old one stops working; sessions end)."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._change(name, token_sha256=sha256(token), active=True)
        return token

    def disable(self, name: str) -> None:
        """Stop ``name`` from signing in and end their sessions."""
        self._change(name, active=False)

    def _change(self, name: str, **values: object) -> None:
        with db_errors(self.url), self.engine.begin() as conn:
            if conn.execute(update(REVIEWERS).where(REVIEWERS.c.name == name)
                            .values(**values)).rowcount != 1:
                raise InputError(f"no reviewer named {name!r}")
            conn.execute(delete(REVIEW_SESSIONS).where(REVIEW_SESSIONS.c.reviewer == name))

    def list(self) -> list[Reviewer]:
        with db_errors(self.url), self.engine.connect() as conn:
            return [Reviewer(name=r.name, created_at=_utc(r.created_at), active=bool(r.active))
                    for r in conn.execute(select(REVIEWERS).order_by(REVIEWERS.c.name))]

    def any(self) -> bool:
        """Whether any reviewer was ever added (then sign-in is required everywhere)."""
        with db_errors(self.url), self.engine.connect() as conn:
            return conn.execute(select(REVIEWERS.c.name).limit(1)).first() is not None

    def who(self, token: str) -> str:
        """The active reviewer ``token`` belongs to.

        Raises:
            SignInFailed: no active reviewer has this token.
        """
        if not token.startswith(TOKEN_PREFIX):
            raise SignInFailed("not a reviewer token (they start with rgr_)")
        c = REVIEWERS.c
        with db_errors(self.url), self.engine.connect() as conn:
            name = conn.execute(select(c.name).where(c.token_sha256 == sha256(token),
                                                     c.active.is_(True))).scalar()
        if name is None:
            raise SignInFailed("unknown or revoked reviewer token")
        return str(name)

    # -- sessions ----------------------------------------------------------------------

    def open_session(self, reviewer: str = "", replaces: str = "") -> tuple[str, Session]:
        """A new session (anonymous when ``reviewer`` is ""); returns (cookie, session).
        ``replaces``: a cookie whose session ends (sign-in starts a fresh one)."""
        cookie, now = secrets.token_urlsafe(32), utcnow()
        session = Session(reviewer=reviewer, csrf=secrets.token_urlsafe(32),
                          expires_at=now + timedelta(hours=SESSION_HOURS))
        s = REVIEW_SESSIONS.c
        with db_errors(self.url), self.engine.begin() as conn:
            conn.execute(delete(REVIEW_SESSIONS).where(s.expires_at < now))
            if replaces:
                conn.execute(delete(REVIEW_SESSIONS).where(s.id_sha256 == sha256(replaces)))
            conn.execute(insert(REVIEW_SESSIONS).values(
                id_sha256=sha256(cookie), reviewer=reviewer, csrf=session.csrf,
                created_at=now, expires_at=session.expires_at))
        return cookie, session

    def session(self, cookie: str) -> Session | None:
        """The live session of ``cookie`` (None: unknown or expired; a disabled reviewer's
        sessions are gone)."""
        if not cookie:
            return None
        s = REVIEW_SESSIONS.c
        with db_errors(self.url), self.engine.connect() as conn:
            row = conn.execute(select(REVIEW_SESSIONS).where(
                s.id_sha256 == sha256(cookie), s.expires_at > utcnow())).first()
        if row is None:
            return None
        return Session(reviewer=row.reviewer, csrf=row.csrf, expires_at=_utc(row.expires_at))

    def close_session(self, cookie: str) -> None:
        with db_errors(self.url), self.engine.begin() as conn:
            conn.execute(delete(REVIEW_SESSIONS).where(
                REVIEW_SESSIONS.c.id_sha256 == sha256(cookie)))


def csrf_ok(session: Session | None, submitted: str) -> bool:
    """Whether a form's CSRF token is its session's (constant-time)."""
    return (session is not None and bool(submitted)
            and hmac.compare_digest(session.csrf.encode(), submitted.encode()))


__all__ = ["COOKIE", "Reviewer", "Reviewers", "Session", "SignInFailed", "csrf_ok",
           "is_loopback", "sign_in_required"]
