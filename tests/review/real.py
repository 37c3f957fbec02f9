"""Real flagged tasks for the review tests: made by the pipeline, not written by hand.

:func:`real_review` (session scope) runs :func:`repogym.pipeline.run_repo` on the tiny
project of ``tests/conftest.py`` with the local provider (its environment is shared with the
other tests through ``shared_local_envs``, so a warm session pays for the judge only), takes
two of the tasks the judge accepted and writes them into a new dataset as the judge writes a
flagged task: a ``review`` verdict with reason ``statement_leak``, whose statement quotes a
line the gold patch adds (a real leak by :func:`repogym.generators.leaks.statement_leaks`).

* ``leaky``: a task with one hunk, flagged for its statement; ``clean`` holds a rewrite of
  its statement that the leak check passes (the statement the judge accepted).
* ``multi``: a task whose gold patch has two hunks and two FAIL_TO_PASS tests, each test
  fixed by one hunk (one test can be dropped and the task still has one).
* ``partial``: ``multi``'s task as a judge could wrongly have flagged it when its gold patch
  lost a hunk: the first hunk only. The test of the missing hunk fails under that gold
  patch, so the task does not hold until that test is dropped (a new id: the id hashes the
  patches). Nothing else about the row is changed.

Tests copy ``root`` before they change it (the fixture is shared by the session).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.datasets.store import DatasetStore
from repogym.generators.leaks import statement_leaks
from repogym.pipeline import run_repo
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Judged, RepoSpec, Status, Verdict
from tests.conftest import TINY_PROJECT, commit_files

HUNK = re.compile(r"^@@ ", re.M)


@dataclass
class RealTask:
    """One flagged task: its id, the judge's accepted row it came from, the fragment its
    flagged statement leaks and a clean rewrite of that statement."""

    instance_id: str
    accepted: TaskRow
    fragment: str
    clean: str


@dataclass
class RealReview:
    """A dataset of real flagged tasks (see the module docstring)."""

    root: Path
    settings: Settings
    leaky: RealTask
    multi: RealTask
    partial: RealTask
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [self.leaky.instance_id, self.multi.instance_id, self.partial.instance_id]

    def task(self, instance_id: str) -> RealTask:
        return next(t for t in (self.leaky, self.multi, self.partial)
                    if t.instance_id == instance_id)


def hunks(patch: str) -> tuple[str, list[str]]:
    """(the file header, each hunk) of a one-file unified diff."""
    starts = [m.start() for m in HUNK.finditer(patch)]
    return patch[:starts[0]], [patch[a:b] for a, b in zip(starts, [*starts[1:], len(patch)])]


def added_line(patch: str) -> str:
    """The first line the patch adds that the leak check counts (stripped, >= 8 chars)."""
    return next(line[1:].strip() for line in patch.splitlines()
                if line.startswith("+") and not line.startswith("+++")
                and len(line[1:].strip()) >= 8)


def flag(row: TaskRow, *, patch: str | None = None) -> tuple[Judged, RealTask]:
    """``row`` flagged for a statement that quotes a line of its gold patch (``patch``
    replaces the gold patch when given)."""
    candidate = row.to_candidate()
    if patch is not None:
        candidate = candidate.model_copy(update={"gold_patch": patch})
    fragment = added_line(candidate.gold_patch)
    leaky = f"{row.problem_statement}\n\nThe fix is a one-liner: `{fragment}`."
    leaks = statement_leaks(leaky, candidate.gold_patch, candidate.test_patch)
    assert fragment in [leak.fragment for leak in leaks], leaks
    clean = row.problem_statement.strip()  # the judge accepted it: it gives nothing away
    assert not statement_leaks(clean, candidate.gold_patch, candidate.test_patch)
    verdict = Verdict(instance_id=candidate.instance_id, status=Status.review,
                      reason="statement_leak",
                      detail=f"the statement quotes the fix: {fragment!r}",
                      fail_to_pass=row.FAIL_TO_PASS, pass_to_pass=row.PASS_TO_PASS,
                      evidence=dict(row.evidence), seconds=row.judge_seconds)
    judged = Judged(candidate=candidate, verdict=verdict, statement=leaky, image=row.image,
                    created_at=row.created_at - timedelta(hours=1))
    return judged, RealTask(candidate.instance_id, row, fragment, clean)


def fixed_by_first_hunk(row: TaskRow) -> bool:
    """A two-hunk gold patch of ``add`` then ``is_even`` with their two tests failing."""
    _, parts = hunks(row.patch)
    return (row.patch.count("+++ ") == 1 and len(parts) == 2
            and "def add(" in parts[0] and "def is_even(" in parts[1]
            and set(row.FAIL_TO_PASS) == {"tests/test_ops.py::test_add",
                                          "tests/test_ops.py::test_is_even"})


def make_real_review(base: Path, shared_local_envs: Path) -> RealReview:
    seconds: dict[str, float] = {}
    src = base / "tinycalc"
    commit_files(src, TINY_PROJECT)  # the tiny_repo fixture's project, at its fixed date
    settings = Settings(out=base / "pipeline", provider="local", local_envs=shared_local_envs,
                        max_candidates=8, baseline_runs=1, oracle_runs=1, probes=0,
                        test_timeout=60)
    start = time.monotonic()
    summary = run_repo(RepoSpec(source=str(src)), settings)
    seconds["run_repo"] = time.monotonic() - start
    accepted = DatasetStore(settings.out).rows("tasks")
    assert summary.accepted == len(accepted) >= 2, summary
    singles = [r for r in accepted if len(hunks(r.patch)[1]) == 1]
    multis = [r for r in accepted if fixed_by_first_hunk(r)]
    assert singles and multis, [(r.instance_id, r.FAIL_TO_PASS) for r in accepted]
    header, parts = hunks(multis[0].patch)
    flagged = [flag(singles[0]), flag(multis[0]), flag(multis[0], patch=header + parts[0])]
    root = base / "review-data"
    DatasetStore(root).write([j for j, _ in flagged])
    leaky, multi, partial = (t for _, t in flagged)
    return RealReview(root=root, settings=settings, leaky=leaky, multi=multi, partial=partial,
                      seconds=seconds)


@pytest.fixture(scope="session")
def real_review(tmp_path_factory: pytest.TempPathFactory,
                shared_local_envs: Path) -> RealReview:
    """Real flagged tasks (module docstring); built once per session."""
    return make_real_review(tmp_path_factory.mktemp("real-review"), shared_local_envs)
