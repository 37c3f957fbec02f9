"""The Arrow schema of the dataset and the Judged <-> row conversion (no files involved)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pytest

import repogym
import repogym.schemas as schemas
from repogym.schemas import (
    REJECTED_SCHEMA,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    TASK_SCHEMA,
    Candidate,
    CandidateKind,
    Judged,
    Status,
    TaskRow,
    Verdict,
    row_from_judged,
    schema_version_of,
    table_from_rows,
)

CREATED = datetime(2024, 5, 17, 12, 30, 45, 123456, tzinfo=timezone.utc)


def make_judged(n: int = 0, repo: str = "acme__calc", status: Status = Status.accept,
                **verdict: Any) -> Judged:
    """A judged candidate whose every field is non-trivial; ``n`` varies the instance id."""
    cand = Candidate(
        kind=CandidateKind.synthetic, repo=repo, base_commit=f"{n:04d}" + "ab" * 18,
        bug_patch=f"--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = {n}\n+x = -{n}\n",
        gold_patch=f"--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = -{n}\n+x = {n}\n",
        test_patch="" if n % 2 else "diff --git a/t.py b/t.py\n",
        statement="original statement", generator="mutation", mutator="comparison_flip",
        files=("calc.py", "util/ünïcode.py"), lines=(1, 42),
        provenance={"seed": str(n), "pr": "https://example.com/pr/1"},
    )
    defaults: dict[str, Any] = dict(
        instance_id=cand.instance_id, status=status,
        reason="" if status is Status.accept else "no_op:no_failing_test",
        detail=f"detail {n}\nsecond line", fail_to_pass=("tests/test_calc.py::test_x",),
        pass_to_pass=("tests/test_calc.py::test_a", "tests/test_calc.py::test_b[1-2]"),
        evidence={"z_log": "tail…", "a_exit": "1"}, seconds=12.5 + n,
    )
    defaults.update(verdict)
    return Judged(candidate=cand, verdict=Verdict(**defaults),
                  statement=f"Calc returns the wrong sign ({n}) — fix it.",
                  image=f"repogym/env-{repo}:abc123", created_at=CREATED + timedelta(seconds=n))


REQUIRED_COLUMNS: dict[str, pa.DataType] = {
    "instance_id": pa.string(), "repo": pa.string(), "base_commit": pa.string(),
    "image": pa.string(), "bug_patch": pa.string(), "patch": pa.string(),
    "test_patch": pa.string(), "problem_statement": pa.string(),
    "FAIL_TO_PASS": pa.list_(pa.string()), "PASS_TO_PASS": pa.list_(pa.string()),
    "kind": pa.string(), "generator": pa.string(), "mutator": pa.string(),
    "status": pa.string(), "reason": pa.string(), "detail": pa.string(),
    "evidence": pa.string(), "judge_seconds": pa.float64(), "confidence": pa.float64(),
    "created_at": pa.timestamp("us", tz="UTC"), "schema_version": pa.int16(),
    "pipeline_version": pa.string(),
}


@pytest.mark.parametrize("name", sorted(REQUIRED_COLUMNS))
def test_schema_has_column_with_type(name: str) -> None:
    field = TASK_SCHEMA.field(name)
    assert field.type == REQUIRED_COLUMNS[name]
    assert not field.nullable


def test_schema_version_in_metadata() -> None:
    assert TASK_SCHEMA.metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert schema_version_of(TASK_SCHEMA) == SCHEMA_VERSION == 3
    assert schema_version_of(pa.schema([])) is None


def test_rejected_table_shares_the_schema() -> None:
    assert REJECTED_SCHEMA.equals(TASK_SCHEMA, check_metadata=True)


def test_every_column_is_documented_in_the_module_docstring() -> None:
    doc = schemas.arrow.__doc__ or ""
    missing = [name for name in TASK_SCHEMA.names if f"\n{name} " not in doc]
    assert not missing


def test_row_from_judged_maps_every_field() -> None:
    j = make_judged(3, status=Status.reject)
    row = row_from_judged(j)
    assert list(row) == TASK_SCHEMA.names
    c, v = j.candidate, j.verdict
    assert row["instance_id"] == c.instance_id == v.instance_id
    assert (row["repo"], row["base_commit"], row["image"]) == (c.repo, c.base_commit, j.image)
    assert row["language"] == c.language == "python"
    other = j.model_copy(update={"candidate": c.model_copy(update={"language": "go"})})
    assert row_from_judged(other)["language"] == "go"
    assert other.candidate.instance_id == c.instance_id  # the language is not in the id
    assert (row["bug_patch"], row["patch"], row["test_patch"]) == (
        c.bug_patch, c.gold_patch, c.test_patch)
    assert row["problem_statement"] == j.statement
    assert row["FAIL_TO_PASS"] == list(v.fail_to_pass)
    assert row["PASS_TO_PASS"] == list(v.pass_to_pass)
    assert (row["kind"], row["generator"], row["mutator"]) == ("synthetic", "mutation",
                                                               "comparison_flip")
    assert (row["files"], row["lines"]) == (list(c.files), list(c.lines))
    assert (row["status"], row["reason"], row["detail"]) == ("reject", v.reason, v.detail)
    assert row["judge_seconds"] == v.seconds
    assert row["created_at"] == j.created_at
    assert row["schema_version"] == SCHEMA_VERSION


def test_json_columns_are_sorted_json_objects() -> None:
    row = row_from_judged(make_judged())
    assert row["evidence"] == json.dumps({"a_exit": "1", "z_log": "tail…"}, ensure_ascii=False)
    assert json.loads(row["provenance"]) == make_judged().candidate.provenance


def test_round_trip_through_arrow_in_memory() -> None:
    batch = [make_judged(i, status=s) for i, s in enumerate(Status)]
    table = table_from_rows([row_from_judged(j) for j in batch])
    assert table.schema.equals(TASK_SCHEMA, check_metadata=True)
    back = [TaskRow.from_arrow_row(r) for r in table.to_pylist()]
    assert back == [TaskRow.from_judged(j) for j in batch]


def test_naive_created_at_is_taken_as_utc() -> None:
    j = make_judged().model_copy(update={"created_at": datetime(2024, 1, 2, 3, 4, 5)})
    row = TaskRow.from_judged(j)
    assert row.created_at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_aware_created_at_is_converted_to_utc() -> None:
    plus2 = timezone(timedelta(hours=2))
    j = make_judged().model_copy(update={"created_at": datetime(2024, 1, 2, 5, tzinfo=plus2)})
    assert TaskRow.from_judged(j).created_at.utcoffset() == timedelta(0)
    assert TaskRow.from_judged(j).created_at.hour == 3


def test_verdict_of_another_candidate_is_refused() -> None:
    with pytest.raises(ValueError, match="does not belong"):
        row_from_judged(make_judged(instance_id="someone.else"))


def test_empty_repo_is_refused() -> None:
    with pytest.raises(ValueError):
        row_from_judged(make_judged(repo=""))


def test_pipeline_version_defaults_to_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(repogym, "__version__", raising=False)
    assert row_from_judged(make_judged())["pipeline_version"] == "0"


def test_pipeline_version_comes_from_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repogym, "__version__", "9.8.7", raising=False)
    assert row_from_judged(make_judged())["pipeline_version"] == "9.8.7"


def test_from_arrow_row_ignores_unknown_columns() -> None:
    row = {**row_from_judged(make_judged()), "__index_level_0__": 7}
    assert TaskRow.from_arrow_row(row) == TaskRow.from_judged(make_judged())


def test_schemas_package_exports_exist() -> None:
    for name in schemas.__all__:
        assert hasattr(schemas, name), name
