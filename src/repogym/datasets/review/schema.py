"""The review queue's tables, in any SQLAlchemy database (plain Core, no dialect-specific SQL).

=====================  ==================================================================
table                  one row per
=====================  ==================================================================
``review_items``       flagged task: its state, current claim and latest version
``review_decisions``   reviewer's decision on an item (two for a double-reviewed one)
``review_versions``    edit of an item's task (statement mended, tests dropped), kept
                       beside the original, with its leak check and re-verification
``reviewers``          reviewer who may sign in, with the SHA-256 of their token
``review_sessions``    browser session (the SHA-256 of its cookie), with its CSRF token
=====================  ==================================================================

A database made by an older repogym (``review_items`` without the claim, label and version
columns; no other table) is brought up to date by :func:`create_schema`: missing tables are
created and missing columns added with their defaults, so no decision already recorded is
lost.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.schema import CreateIndex, CreateTable

from repogym.schemas.arrow import TaskRow

MAX_REVIEWER = 255
METADATA = MetaData()

REVIEW_ITEMS = Table(
    "review_items", METADATA,
    Column("instance_id", String(512), primary_key=True),
    Column("repo", String(512), nullable=False, index=True),
    Column("reason", String(512), nullable=False),
    Column("state", String(16), nullable=False, index=True),
    Column("row_json", Text, nullable=False),  # the task as the judge flagged it (version 0)
    Column("flagged_at", DateTime(timezone=True), nullable=False),
    Column("queued_at", DateTime(timezone=True), nullable=False),
    Column("reviewer", String(MAX_REVIEWER), nullable=False),  # who made the final decision
    Column("note", Text, nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=True),
    Column("published", Boolean, nullable=False),
    # since the team queue:
    Column("language", String(32), nullable=False, server_default="python"),
    Column("claimed_by", String(MAX_REVIEWER), nullable=False, server_default=""),
    Column("claimed_until", DateTime(timezone=True), nullable=True),
    Column("reviews_needed", Integer, nullable=False, server_default="1"),
    Column("disputed", Boolean, nullable=False, server_default=text("false")),
    Column("label", String(32), nullable=False, server_default=""),
    Column("severity", String(16), nullable=False, server_default=""),
    Column("version", Integer, nullable=False, server_default="0"),
)
"""One row per flagged task (see :mod:`repogym.datasets.review.queue`)."""

REVIEW_DECISIONS = Table(
    "review_decisions", METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("instance_id", String(512), nullable=False, index=True),
    Column("reviewer", String(MAX_REVIEWER), nullable=False),
    Column("action", String(16), nullable=False),  # approve | reject
    Column("label", String(32), nullable=False),
    Column("severity", String(16), nullable=False),
    Column("note", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=False, index=True),
    UniqueConstraint("instance_id", "reviewer", "version",
                     name="uq_review_decision_per_reviewer"),
)
"""Every reviewer's decision; a reviewer decides each version of an item once."""

REVIEW_VERSIONS = Table(
    "review_versions", METADATA,
    Column("instance_id", String(512), primary_key=True),
    Column("version", Integer, primary_key=True),  # 1, 2, ...: version 0 is the item's row
    Column("row_json", Text, nullable=False),
    Column("editor", String(MAX_REVIEWER), nullable=False),
    Column("edited_at", DateTime(timezone=True), nullable=False),
    Column("summary", Text, nullable=False),  # what changed, in words
    Column("verified", String(16), nullable=False, server_default=""),  # "", held, failed
    Column("verify_detail", Text, nullable=False, server_default=""),
    Column("verified_at", DateTime(timezone=True), nullable=True),
)
"""Mended versions of a task; the original stays in ``review_items.row_json``."""

REVIEWERS = Table(
    "reviewers", METADATA,
    Column("name", String(MAX_REVIEWER), primary_key=True),
    Column("token_sha256", String(64), nullable=False, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("active", Boolean, nullable=False),
)
"""Who may sign in; tokens are stored hashed, never in clear."""

REVIEW_SESSIONS = Table(
    "review_sessions", METADATA,
    Column("id_sha256", String(64), primary_key=True),
    Column("reviewer", String(MAX_REVIEWER), nullable=False),  # "" before sign-in
    Column("csrf", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False, index=True),
)
"""Browser sessions: the cookie's hash, who signed in, and the token every form carries."""

TABLES = (REVIEW_ITEMS, REVIEW_DECISIONS, REVIEW_VERSIONS, REVIEWERS, REVIEW_SESSIONS)


def create_schema(engine: Engine) -> None:
    """Create missing tables and indexes, add columns an older queue lacks (safe under
    concurrent creators: each step tolerates another process having done it)."""
    with engine.begin() as conn:
        for table in TABLES:
            conn.execute(CreateTable(table, if_not_exists=True))
            for index in sorted(table.indexes, key=lambda i: str(i.name)):
                conn.execute(CreateIndex(index, if_not_exists=True))
    with engine.connect() as conn:
        present = {c["name"] for c in inspect(conn).get_columns(REVIEW_ITEMS.name)}
    missing = [c for c in REVIEW_ITEMS.columns if c.name not in present]
    for column in missing:
        try:
            with engine.begin() as conn:
                conn.execute(text(_add_column_sql(column, conn)))
        except SQLAlchemyError:
            with engine.connect() as conn:  # another process added it first: fine
                if column.name not in {c["name"] for c in
                                       inspect(conn).get_columns(REVIEW_ITEMS.name)}:
                    raise
    if any(c.name == "language" for c in missing):
        with engine.begin() as conn:
            _backfill_language(conn)


def _add_column_sql(column: Column[Any], conn: Connection) -> str:
    kind = column.type.compile(dialect=conn.dialect)
    default = column.server_default.arg if column.server_default is not None else None  # type: ignore[attr-defined]
    literal = getattr(default, "text", None) or (f"'{default}'" if default is not None
                                                  else "NULL")
    nullability = "" if column.nullable else " NOT NULL"
    return (f"ALTER TABLE {REVIEW_ITEMS.name} ADD COLUMN {column.name} {kind} "
            f"DEFAULT {literal}{nullability}")


def _backfill_language(conn: Connection) -> None:
    """Fill ``language`` of rows queued before the column existed from their task rows."""
    c = REVIEW_ITEMS.c
    for iid, raw in conn.execute(select(c.instance_id, c.row_json)).all():
        language = TaskRow.model_validate_json(raw).language
        if language != "python":
            conn.execute(update(REVIEW_ITEMS).where(c.instance_id == iid)
                         .values(language=language))
