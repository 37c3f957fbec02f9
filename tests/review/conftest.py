"""Flagged tasks for the review tests: real ``Judged`` records written through
:meth:`DatasetStore.write` (status ``review``, as the judge writes them); no Docker needed.
The ``queue`` runs on SQLite and on a real PostgreSQL server (:func:`db_url`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest

from repogym.datasets.review import ReviewQueue
from repogym.datasets.store import DatasetStore
from repogym.schemas.records import Candidate, CandidateKind, Judged, Status, Verdict

FLAGGED_AT = datetime(2024, 5, 17, 12, 0, tzinfo=timezone.utc)
XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'


def bug_diff(n: int) -> str:
    return ("--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
            f"-    return a + b + {n}\n+    return a - b + {n}\n")


def gold_diff(n: int) -> str:
    return ("--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
            f"-    return a - b + {n}\n+    return a + b + {n}\n")


def judged(n: int, status: Status = Status.review, reason: str = "statement_leak",
           statement: str = "", repo: str = "acme__calc", test_patch: str = "") -> Judged:
    """A judged candidate of ``repo``; ``n`` varies its id and age (older for smaller n)."""
    cand = Candidate(kind=CandidateKind.synthetic, repo=repo, base_commit=f"{n:08d}" + "c" * 32,
                     bug_patch=bug_diff(n), gold_patch=gold_diff(n), test_patch=test_patch,
                     generator="procedural", mutator="binop_swap", files=("calc/ops.py",),
                     lines=(2,), provenance={"seed": str(n)})
    verdict = Verdict(instance_id=cand.instance_id, status=status,
                      reason="" if status is Status.accept else reason,
                      detail=f"statement quotes the fix: 'a + b + {n}'",
                      fail_to_pass=(f"tests/test_ops.py::test_add_{n}",),
                      pass_to_pass=("tests/test_ops.py::test_sub", "tests/test_ops.py::test_mul"),
                      evidence={"noop_failing": "1", "oracle_runs": "3"}, seconds=4.5)
    return Judged(candidate=cand, verdict=verdict, image=f"repogym/env-{repo}:0123",
                  statement=statement or f"add() gives wrong results for case {n}.",
                  created_at=FLAGGED_AT + timedelta(minutes=n))


def write_flagged(root: Path, count: int, start: int = 0, **kwargs: object) -> list[str]:
    """Write ``count`` review rows to the dataset at ``root``; returns their ids."""
    batch = [judged(start + i, **kwargs) for i in range(count)]  # type: ignore[arg-type]
    DatasetStore(root).write(batch)
    return [j.candidate.instance_id for j in batch]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A dataset with 3 flagged tasks, plus one rejected and one accepted (not for review)."""
    root = tmp_path / "data"
    write_flagged(root, 3)
    DatasetStore(root).write([judged(50, status=Status.reject, reason="no_op:no_failing_test"),
                              judged(51, status=Status.accept)])
    return root


@pytest.fixture
def flagged_ids(dataset: Path) -> list[str]:
    """The ids of the dataset's flagged tasks, oldest first."""
    return [judged(i).candidate.instance_id for i in range(3)]


DB_KINDS = ("sqlite", "postgres")
sqlite_only = pytest.mark.sqlite_only
"""Marks a test (or, as ``pytestmark``, a module) of something only SQLite has, such as the
default file in the dataset folder: its ``db_url`` is ``sqlite`` only."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: run with db_url 'sqlite' only "
                            "(tests/review/conftest.py)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test using ``db_url`` (``queue`` does) runs once per :data:`DB_KINDS`, ids
    ``sqlite`` and ``postgres``; one marked :data:`sqlite_only` on SQLite only."""
    if "db_url" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("db_url", ["sqlite"] if only else list(DB_KINDS), indirect=True)


@pytest.fixture
def db_url(request: pytest.FixtureRequest) -> str | None:
    """The queue's database: ``sqlite``, None (the default ``review.sqlite`` in the dataset
    folder); ``postgres``, a new database on the session's PostgreSQL server (started only
    when a ``postgres`` test runs)."""
    if request.param == "sqlite":
        return None
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def queue(dataset: Path, db_url: str | None) -> Iterator[ReviewQueue]:
    with ReviewQueue(DatasetStore(dataset), db_url) as q:
        yield q
