"""Flagged tasks for the review tests: real ``Judged`` records written through
:meth:`DatasetStore.write` (status ``review``, as the judge writes them); no Docker needed."""

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


@pytest.fixture
def queue(dataset: Path) -> Iterator[ReviewQueue]:
    with ReviewQueue(DatasetStore(dataset)) as q:
        yield q
