"""The on-disk format of the dataset: explicit Arrow schemas and the row they hold.

Both tables of the dataset (``tasks``: accepted tasks; ``rejected``: every other verdict,
with ``status`` and ``reason`` saying why) share one schema, :data:`TASK_SCHEMA`.
Every column is non-null; "nothing" is an empty string, an empty list or ``{}``.
Column names follow SWE-bench where one exists (``patch``, ``test_patch``,
``problem_statement``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``).

==================  ===========================  ===============================================
column              Arrow type                   meaning
==================  ===========================  ===============================================
instance_id         string                       stable id ``<repo>.<commit8>.<kind>.<hash8>``
                                                 (:func:`~repogym.schemas.records.make_instance_id`
                                                 over the three patches); unique within a table
repo                string                       repository name (``owner__repo``); also the
                                                 partition key, kept inside every file because
                                                 HF ``datasets`` drops hive partition columns
language            string                       the task's language: the toolchain that grades
                                                 it (``python``); version 1 rows read as python
base_commit         string                       full sha the task starts from
image               string                       environment image tag (or env dir) to run in
bug_patch           string                       unified diff: ``base_commit`` -> broken state
patch               string                       the gold fix: broken state -> working state
test_patch          string                       diff adding the tests (mined tasks; else "")
problem_statement   string                       the statement shown to the solver
FAIL_TO_PASS        list<string>                 test ids that fail broken and pass fixed
PASS_TO_PASS        list<string>                 test ids that pass in both states
kind                string                       ``synthetic`` or ``mined`` (CandidateKind)
generator           string                       registered name of the generator
mutator             string                       registered name of the mutator ("" if none)
files               list<string>                 files the bug touches
lines               list<int32>                  lines the bug touches (aligned with the mutator)
provenance          string (JSON object)         where the candidate came from (str -> str)
status              string                       ``accept``, ``reject``, ``review`` or
                                                 ``infra_error`` (Status)
reason              string                       machine-readable reason code
                                                 (e.g. ``no_op:no_failing_test``); "" on accept
detail              string                       human-readable explanation of the verdict
evidence            string (JSON object)         the judge's evidence (str -> str), keys sorted;
                                                 ``time_limits`` (a TimeLimits as JSON: what
                                                 grading allows each listed test and the run)
                                                 ``runner_changes`` (a JSON list: runner
                                                 changes the env makes itself) and
                                                 ``protected_files`` (a JSON list: runner
                                                 plugin modules) among them
judge_seconds       float64                      wall time the judge spent on the candidate
confidence          float64                      how sure we are of the task, in [0, 1]
                                                 (:mod:`repogym.schemas.confidence`: the
                                                 checks behind it are in ``evidence``'s
                                                 ``confidence``); 0 for a rejection
created_at          timestamp[us, tz=UTC]        when the verdict was made
schema_version      int16                        :data:`SCHEMA_VERSION` the row was written with
pipeline_version    string                       ``repogym.__version__`` of the writer ("0" if
                                                 unknown)
==================  ===========================  ===============================================

The schema version is also stored in the Arrow schema metadata under
:data:`SCHEMA_VERSION_KEY` (``b"repogym.schema_version"``), so a reader can refuse a file
before reading any row. Bump :data:`SCHEMA_VERSION` on any change of columns or meaning.

Conversion goes one way through :class:`TaskRow`, which validates:
``Judged -> TaskRow.from_judged -> TaskRow.to_arrow_row -> dict`` (:func:`row_from_judged`)
and back with :meth:`TaskRow.from_arrow_row`.
"""

from __future__ import annotations

import importlib
import json
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, NamedTuple

import pyarrow as pa
from pydantic import Field, field_validator

from repogym.schemas.confidence import Confidence, confidence_of, confidence_score
from repogym.schemas.records import (
    Candidate,
    CandidateKind,
    Judged,
    Record,
    Status,
    TimeLimits,
    Verdict,
)

SCHEMA_VERSION = 3
SCHEMA_VERSION_KEY = b"repogym.schema_version"
READABLE_VERSIONS = (1, 2, 3)
"""Versions a reader accepts; older rows are upgraded as they are read (:data:`UPGRADES`)."""


class Derived(NamedTuple):
    """A column an older file lacks, computed for each of its rows from columns it has."""

    needs: tuple[str, ...]
    compute: Callable[[Mapping[str, Any]], Any]


def _confidence_of_row(row: Mapping[str, Any]) -> float:
    if row.get("status") != Status.accept.value:
        return 0.0
    raw = row.get("evidence") or "{}"
    return confidence_score(json.loads(raw) if isinstance(raw, str) else raw)


CONFIDENCE_FROM_EVIDENCE = Derived(("evidence", "status"), _confidence_of_row)
UPGRADES: dict[int, dict[str, Any]] = {
    1: {"language": "python", "confidence": CONFIDENCE_FROM_EVIDENCE},
    2: {"confidence": CONFIDENCE_FROM_EVIDENCE},
}
"""Per older version, the columns it lacks and the value its rows get: a constant, or a
:class:`Derived` value (1: before ``language``, every task was Python; 1 and 2: before
``confidence``, it is read from the row's evidence as :mod:`repogym.schemas.confidence`
reads older evidence)."""

JSON_COLUMNS: tuple[str, ...] = ("provenance", "evidence")
TIME_LIMITS_KEY = "time_limits"
RUNNER_CHANGES_KEY = "runner_changes"
PROTECTED_FILES_KEY = "protected_files"


def _field(name: str, type_: pa.DataType) -> pa.Field[Any]:
    return pa.field(name, type_, nullable=False)


_STR = pa.string()
_STR_LIST = pa.list_(pa.string())

TASK_SCHEMA: pa.Schema = pa.schema(
    [
        _field("instance_id", _STR),
        _field("repo", _STR),
        _field("language", _STR),
        _field("base_commit", _STR),
        _field("image", _STR),
        _field("bug_patch", _STR),
        _field("patch", _STR),
        _field("test_patch", _STR),
        _field("problem_statement", _STR),
        _field("FAIL_TO_PASS", _STR_LIST),
        _field("PASS_TO_PASS", _STR_LIST),
        _field("kind", _STR),
        _field("generator", _STR),
        _field("mutator", _STR),
        _field("files", _STR_LIST),
        _field("lines", pa.list_(pa.int32())),
        _field("provenance", _STR),
        _field("status", _STR),
        _field("reason", _STR),
        _field("detail", _STR),
        _field("evidence", _STR),
        _field("judge_seconds", pa.float64()),
        _field("confidence", pa.float64()),
        _field("created_at", pa.timestamp("us", tz="UTC")),
        _field("schema_version", pa.int16()),
        _field("pipeline_version", _STR),
    ],
    metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()},
)
"""Schema of the ``tasks`` table (accepted tasks)."""

REJECTED_SCHEMA: pa.Schema = TASK_SCHEMA
"""Schema of the ``rejected`` table: the same columns; ``status``/``reason`` say why."""


def pipeline_version() -> str:
    """``repogym.__version__`` if the package defines one, else ``"0"``.

    Looked up at call time, so importing this module never depends on import order.
    """
    return str(getattr(importlib.import_module("repogym"), "__version__", "0"))


def schema_version_of(schema: pa.Schema) -> int | None:
    """The schema version recorded in ``schema``'s metadata, or None if there is none.

    Raises:
        ValueError: the metadata holds a value that is not an integer.
    """
    raw = (schema.metadata or {}).get(SCHEMA_VERSION_KEY)
    return None if raw is None else int(raw.decode())


class TaskRow(Record):
    """One row of the dataset, typed; field names are the column names of :data:`TASK_SCHEMA`."""

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1)
    language: str = Field(default="python", min_length=1)
    base_commit: str
    image: str
    bug_patch: str
    patch: str
    test_patch: str
    problem_statement: str
    FAIL_TO_PASS: tuple[str, ...]
    PASS_TO_PASS: tuple[str, ...]
    kind: CandidateKind
    generator: str
    mutator: str
    files: tuple[str, ...]
    lines: tuple[int, ...]
    provenance: dict[str, str]
    status: Status
    reason: str
    detail: str
    evidence: dict[str, str]
    judge_seconds: float
    confidence: float = Field(0.0, ge=0.0, le=1.0)
    created_at: datetime
    schema_version: int
    pipeline_version: str

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)

    @property
    def time_limits(self) -> TimeLimits | None:
        """The grading time limits the judge derived from the baseline (None: older rows)."""
        raw = self.evidence.get(TIME_LIMITS_KEY)
        return TimeLimits.model_validate_json(raw) if raw else None

    @property
    def runner_changes(self) -> tuple[str, ...]:
        raw = self.evidence.get(RUNNER_CHANGES_KEY)
        return tuple(json.loads(raw)) if raw else ()

    @property
    def protected_files(self) -> tuple[str, ...]:
        raw = self.evidence.get(PROTECTED_FILES_KEY)
        return tuple(json.loads(raw)) if raw else ()

    def to_candidate(self) -> Candidate:
        """The candidate this row judged (its id is the row's ``instance_id``)."""
        return Candidate(kind=self.kind, repo=self.repo, language=self.language,
                         base_commit=self.base_commit,
                         bug_patch=self.bug_patch, gold_patch=self.patch,
                         test_patch=self.test_patch, generator=self.generator,
                         mutator=self.mutator, files=self.files, lines=self.lines,
                         provenance=self.provenance)

    @classmethod
    def from_judged(cls, judged: Judged) -> TaskRow:
        """The row for a judged candidate, stamped with the current schema and pipeline versions.

        Raises:
            ValueError: the verdict's ``instance_id`` is not the candidate's (they belong to
                different candidates).
        """
        c, v = judged.candidate, judged.verdict
        if v.instance_id != c.instance_id:
            raise ValueError(f"verdict {v.instance_id!r} does not belong to "
                             f"candidate {c.instance_id!r}")
        return cls(
            instance_id=c.instance_id, repo=c.repo, language=c.language,
            base_commit=c.base_commit,
            image=judged.image, bug_patch=c.bug_patch, patch=c.gold_patch,
            test_patch=c.test_patch, problem_statement=judged.statement,
            FAIL_TO_PASS=v.fail_to_pass, PASS_TO_PASS=v.pass_to_pass, kind=c.kind,
            generator=c.generator, mutator=c.mutator, files=c.files, lines=c.lines,
            provenance=c.provenance, status=v.status, reason=v.reason, detail=v.detail,
            evidence=(evidence := evidence_of(v)), judge_seconds=v.seconds,
            confidence=confidence_score(evidence) if v.status is Status.accept else 0.0,
            created_at=judged.created_at,
            schema_version=SCHEMA_VERSION, pipeline_version=pipeline_version(),
        )

    def with_evidence(self, update: Mapping[str, str], **fields: Any) -> TaskRow:
        """This row with ``update`` merged into its evidence (and ``fields`` set), its
        confidence read again from the new evidence, stamped with the current versions."""
        evidence = {**self.evidence, **update}
        return self.model_copy(update={
            **fields, "evidence": evidence, "schema_version": SCHEMA_VERSION,
            "pipeline_version": pipeline_version(),
            "confidence": (confidence_score(evidence)
                           if fields.get("status", self.status) is Status.accept else 0.0)})

    @property
    def confidence_record(self) -> Confidence:
        """The checks behind :attr:`confidence` (see :mod:`repogym.schemas.confidence`)."""
        return confidence_of(self.evidence)

    def to_arrow_row(self) -> dict[str, Any]:
        """A dict of plain Python values, keyed and ordered like :data:`TASK_SCHEMA`."""
        row = self.model_dump(mode="python")
        for name in JSON_COLUMNS:
            row[name] = json.dumps(row[name], sort_keys=True, ensure_ascii=False)
        row["kind"], row["status"] = self.kind.value, self.status.value
        for name in ("FAIL_TO_PASS", "PASS_TO_PASS", "files", "lines"):
            row[name] = list(row[name])
        return {name: row[name] for name in TASK_SCHEMA.names}

    @classmethod
    def from_arrow_row(cls, row: Mapping[str, Any]) -> TaskRow:
        """Parse one row as read from Parquet (e.g. an item of ``Table.to_pylist()``).

        Columns not in :data:`TASK_SCHEMA` are ignored.

        Raises:
            pydantic.ValidationError: a column is missing or holds a bad value.
            ValueError: a JSON column does not hold valid JSON.
        """
        data = {name: row[name] for name in TASK_SCHEMA.names if name in row}
        for name in JSON_COLUMNS:
            if isinstance(data.get(name), str):
                data[name] = json.loads(data[name])
        return cls.model_validate(data)


def evidence_of(verdict: Verdict) -> dict[str, str]:
    """A verdict's evidence as the row keeps it: its time limits and runner changes in it."""
    out = dict(verdict.evidence)
    if verdict.time_limits is not None:
        out[TIME_LIMITS_KEY] = verdict.time_limits.model_dump_json()
    if verdict.runner_changes:
        out[RUNNER_CHANGES_KEY] = json.dumps(list(verdict.runner_changes))
    if verdict.protected_files:
        out[PROTECTED_FILES_KEY] = json.dumps(list(verdict.protected_files))
    return out


def row_from_judged(judged: Judged) -> dict[str, Any]:
    """The Arrow row (plain Python values, :data:`TASK_SCHEMA` order) for a judged candidate."""
    return TaskRow.from_judged(judged).to_arrow_row()


def table_from_rows(rows: list[dict[str, Any]]) -> pa.Table:
    """A table of :data:`TASK_SCHEMA` (with its version metadata) from rows of
    :func:`row_from_judged` / :meth:`TaskRow.to_arrow_row`."""
    return pa.Table.from_pylist(rows, schema=TASK_SCHEMA)
