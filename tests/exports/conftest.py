"""Fixtures of the export tests.

* :func:`judged_rows`: realistic judged tasks (synthetic and mined) written to a real
  DatasetStore, no Docker: for the format conformance suite.
* ``real_tasks`` (session, Docker): a tiny repository with two commits, its env image, and
  two tasks the real Judge accepted in it: a synthetic bug (no test patch) and a mined fix
  whose test patch adds a new test file. Each has a unique "fix line" that the exported
  environments must never reveal.
* ``js_tasks`` (session, Docker): JavaScript tasks the whole pipeline accepted in
  jshttp/mime-types (mocha): a synthetic one and a mined one (its test patch changes
  ``test/test.js``), each with a fix line found nowhere in its broken state.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from repogym.datasets import DatasetStore
from repogym.grading import Result
from repogym.patches import new_file_diff, reverse_diff, unified_diff
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Candidate, CandidateKind, Judged, Status, Verdict
from tests.conftest import TINY_PROJECT, build_tiny_env, commit_files

# -- realistic rows without Docker ------------------------------------------------------------

SOURCE = ("def total(items):\n    result = 0\n    for item in items:\n"
          "        result += item\n    return result\n")


IMAGE = "repogym-env/acme-widgets:0123456789abcdef"


def make_judged(i: int, *, kind: CandidateKind = CandidateKind.synthetic,
                repo: str = "acme__widgets", image: str = IMAGE,
                status: Status = Status.accept) -> Judged:
    """A judged candidate shaped like the pipeline's (patches git-style, tests as node ids)."""
    path = f"widgets/mod_{i}.py"
    broken = SOURCE.replace("result += item", f"result -= item  # {i}")
    bug = unified_diff(path, SOURCE, broken) if kind is CandidateKind.synthetic else ""
    gold = reverse_diff(bug) if bug else unified_diff(path, broken, SOURCE)
    tests = (new_file_diff(f"tests/test_mod_{i}.py", f"def test_{i}():\n    assert True\n")
             if kind is CandidateKind.mined else "")
    cand = Candidate(kind=kind, repo=repo, base_commit=f"{i:040x}", bug_patch=bug,
                     gold_patch=gold, test_patch=tests, generator="procedural",
                     mutator="operator_swap" if bug else "", files=(path,), lines=(4,),
                     provenance={"seed": str(i)})
    verdict = Verdict(instance_id=cand.instance_id, status=status,
                      reason="" if status is Status.accept else "no_op",
                      fail_to_pass=(f"tests/test_mod_{i}.py::test_total",),
                      pass_to_pass=tuple(f"tests/test_other.py::test_{k}" for k in range(5)),
                      evidence={"oracle": "x3"}, seconds=1.5)
    statement = (f"`total()` in module {i} returns a negative sum "
                 "ünïcödé \"quoted\" \\ text.")
    return Judged(candidate=cand, verdict=verdict, statement=statement, image=image)


@pytest.fixture
def judged_rows(tmp_path: Path) -> tuple[DatasetStore, list[TaskRow]]:
    """A store with 5 accepted tasks (3 synthetic, 2 mined) and 1 rejected candidate."""
    store = DatasetStore(tmp_path / "data")
    judged = [make_judged(i, kind=CandidateKind.synthetic if i < 3 else CandidateKind.mined)
              for i in range(5)]
    judged.append(make_judged(9, status=Status.reject))
    store.write(judged)
    return store, store.rows("tasks")


# -- real tasks in Docker --------------------------------------------------------------------

UNITS = "def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
TEST_UNITS = ("from tinycalc.units import celsius_to_fahrenheit\n\n\n"
              "def test_freezing():\n    assert celsius_to_fahrenheit(0) == 32\n\n\n"
              "def test_boiling():\n    assert celsius_to_fahrenheit(100) == 212\n")
SCALE_BUGGY = "def scale_all(values, factor):\n    return [v + factor for v in values]\n"
SCALE_FIXED = "def scale_all(values, factor):\n    return [v * factor for v in values]\n"
TEST_SCALE = ("from tinycalc.scale import scale_all\n\n\n"
              "def test_scale_all():\n    assert scale_all([1, 2, 3], 3) == [3, 6, 9]\n")
SYNTHETIC_FIX_LINE = "return celsius * 9 / 5 + 32"
MINED_FIX_LINE = "return [v * factor for v in values]"


@dataclass
class RealTasks:
    """Two accepted tasks of a real env image, and a store holding them."""

    store: DatasetStore
    synthetic: TaskRow
    mined: TaskRow
    image: str

    @property
    def rows(self) -> list[TaskRow]:
        return [self.synthetic, self.mined]

    def fix_line(self, row: TaskRow) -> str:
        return SYNTHETIC_FIX_LINE if row is self.synthetic else MINED_FIX_LINE


def _candidates(first: str, head: str) -> tuple[Candidate, Candidate]:
    bug = unified_diff("tinycalc/units.py", UNITS, UNITS.replace("+ 32", "- 32"))
    synthetic = Candidate(kind=CandidateKind.synthetic, repo="tinycalc", base_commit=head,
                          bug_patch=bug, gold_patch=reverse_diff(bug), generator="test",
                          mutator="operator_swap", files=("tinycalc/units.py",))
    mined = Candidate(kind=CandidateKind.mined, repo="tinycalc", base_commit=first,
                      bug_patch="", gold_patch=unified_diff("tinycalc/scale.py", SCALE_BUGGY,
                                                            SCALE_FIXED),
                      test_patch=new_file_diff("tests/test_scale.py", TEST_SCALE),
                      generator="mined", files=("tinycalc/scale.py",),
                      provenance={"commit": head})
    return synthetic, mined


STATEMENTS = {
    CandidateKind.synthetic: "Converting 0 degrees Celsius to Fahrenheit gives -32 instead of 32.",
    CandidateKind.mined: "scale_all([1, 2, 3], 3) returns [4, 5, 6]; each value should be "
                         "multiplied by the factor.",
}


@pytest.fixture(scope="session")
def real_tasks(tmp_path_factory, base_image) -> RealTasks:
    from repogym.baseline import record_baseline
    from repogym.judges.judge import Judge, JudgeSettings

    out = tmp_path_factory.mktemp("export-tasks")
    src = out / "tinycalc"
    with pytest.MonkeyPatch.context() as mp:  # fixed dates: same shas, so the env is reused
        mp.setenv("GIT_AUTHOR_DATE", "2020-01-01T00:00:00Z")
        mp.setenv("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z")
        first = commit_files(src, {**TINY_PROJECT, "tinycalc/units.py": UNITS,
                                   "tests/test_units.py": TEST_UNITS,
                                   "tinycalc/scale.py": SCALE_BUGGY}, "units and scale")
        head = commit_files(src, {"tinycalc/scale.py": SCALE_FIXED,
                                  "tests/test_scale.py": TEST_SCALE}, "fix scale_all")
    tiny = build_tiny_env("docker", src, out)
    judged = []
    with tiny.provider.open(tiny.env) as sandbox:
        base = record_baseline(sandbox, tiny.toolchain, repo="tinycalc", commit=head,
                               image=tiny.env.ref, runs=1, timeout=120)
        judge = Judge(sandbox, tiny.toolchain, base,
                      JudgeSettings(oracle_runs=1, timeout=120, probes=0))
        for cand in _candidates(first, head):
            verdict = judge.judge(cand).verdict
            assert verdict.status is Status.accept, verdict
            judged.append(Judged(candidate=cand, verdict=verdict,
                                 statement=STATEMENTS[cand.kind], image=tiny.env.ref))
    store = DatasetStore(out / "data")
    store.write(judged)
    rows = {r.kind: r for r in store.rows("tasks")}
    assert rows[CandidateKind.mined].test_patch and rows[CandidateKind.mined].FAIL_TO_PASS == (
        "tests/test_scale.py::test_scale_all",)
    return RealTasks(store, rows[CandidateKind.synthetic], rows[CandidateKind.mined],
                     tiny.env.ref)


# -- real JavaScript tasks in Docker ---------------------------------------------------------

REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"
JS_BUNDLE = "jshttp+mime-types"


@dataclass
class JsTasks:
    """A synthetic and a mined JavaScript task the pipeline accepted, and their store."""

    store: DatasetStore
    synthetic: TaskRow
    mined: TaskRow

    @property
    def rows(self) -> list[TaskRow]:
        return [self.synthetic, self.mined]

    @staticmethod
    def fix_text(row: TaskRow) -> str:
        """The fixed side of the gold patch's first hunk (its context and added lines, as
        the fixed file holds them): found nowhere in the broken state."""
        lines: list[str] = []
        inside = False
        for line in row.patch.splitlines():
            if line.startswith("@@"):
                if inside:
                    break
                inside = True
            elif line.startswith("diff --git") and inside:
                break
            elif inside and not line.startswith(("-", "\\")):
                lines.append(line[1:])
        assert any(line.strip() for line in lines), row.patch
        return "\n".join(lines)


@pytest.fixture(scope="session")
def js_tasks(tmp_path_factory, base_image) -> JsTasks:
    from repogym.config import Settings
    from repogym.pipeline import run_repo
    from repogym.schemas.records import RepoSpec

    root = tmp_path_factory.mktemp("export-js-tasks")
    source = root / "mime"
    subprocess.run(["git", "clone", "-q", str(REPOS / f"{JS_BUNDLE}.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image,
                        generators=("procedural", "mined"), max_candidates=3,
                        baseline_runs=2, oracle_runs=2, max_combined=0, mine_last=60)
    summary = run_repo(RepoSpec(source=str(source)), settings)
    store = DatasetStore(settings.out)
    rows = sorted((r for r in store.rows("tasks") if r.status is Status.accept),
                  key=lambda r: r.instance_id)
    assert {r.language for r in rows} == {"javascript"}, summary
    picked = {}
    for kind in (CandidateKind.synthetic, CandidateKind.mined):
        found = [r for r in rows if r.kind is kind]
        assert found, (kind, summary)
        picked[kind] = found[0]
    assert picked[CandidateKind.mined].test_patch, picked[CandidateKind.mined]
    return JsTasks(store, picked[CandidateKind.synthetic], picked[CandidateKind.mined])


# -- Docker helpers --------------------------------------------------------------------------

TEST_LABELS = {"repogym": "test"}


def tar_of(files: dict[str, bytes], mode: int = 0o755) -> bytes:
    """A tar archive of ``files`` (name -> bytes), every file readable and executable."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tree_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def container_factory(docker_client) -> Iterator[Any]:
    """``start(image)`` -> a running container (network off, labelled repogym=test),
    removed at teardown."""
    started: list[Any] = []

    def start(image: str) -> Any:
        container = docker_client.containers.run(image, ["sleep", "infinity"], detach=True,
                                                 network_mode="none", labels=TEST_LABELS,
                                                 init=True)
        started.append(container)
        return container

    yield start
    for container in started:
        container.remove(force=True)


def sh(container: Any, script: str, user: str = "root") -> tuple[int, str]:
    """Run a bash script in the container; (exit code, stdout+stderr)."""
    code, out = container.exec_run(["bash", "-c", script], user=user)
    return code, out.decode(errors="replace")


def stopped_at_a_failure(result: dict, tests: list[str]) -> bool:
    """Whether a binary grade of ``tests`` (all failing) stopped at the first one: it
    failed for real, and the ones after it never ran (no outcome)."""
    got = [result["outcomes"][t] for t in tests]
    return "failed" in got and set(got) <= {"failed", None}


def outcomes_of(result: Result) -> dict[str, str | None]:
    return {t: o.value if o else None for t, o in result.outcomes.items()}


def same_grade(got: dict, verified: Result) -> None:
    """The container's grade is ``grade_in``'s: reward, and each listed test's outcome."""
    assert (got["reward"], got["resolved"]) == (verified.reward, verified.resolved), (
        got["problems"], verified.problems)
    assert got["outcomes"] == outcomes_of(verified), (got["problems"], verified.problems)
    assert sorted(got["discarded"]) == sorted(verified.discarded)
    assert got["problems"] == list(verified.problems)

