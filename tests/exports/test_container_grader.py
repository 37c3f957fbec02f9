"""The stdlib-only in-container grader agrees with repogym's own grading code, rule by rule.

(Its end-to-end behaviour in real containers is in test_harbor.py and test_swebench.py.)
"""

from __future__ import annotations

import ast
import json
import sys
from typing import Any

import pytest

from repogym.datasets.exports import container_grader as grader
from repogym.datasets.exports.grading import ContainerSpec, grading_files, protected_paths
from repogym.datasets.verify import spec_of
from repogym.grading import GradingSpec, _graded
from repogym.grading import protected_paths as verify_protected
from repogym.limits import policy_for
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import CandidateKind, Judged, TimeLimits
from repogym.toolchains import python as toolchain
from repogym.toolchains import resume
from repogym.toolchains.pytest_report import parse_report
from repogym.toolchains.python import PythonToolchain
from tests.exports.conftest import make_judged

PATHS = ["conftest.py", "pkg/conftest.py", "tests/test_a.py", "test_b.py", "pkg/b_test.py",
         "pkg/core.py", "testing/helpers.py", "src/pkg/tests/util.py", "pkg/testsuite.py",
         "pytest.ini", "docs/conf.py", "test/x.py", "pkg/test.py", "a/tests", "setup.cfg",
         "tests.py", "pkg/tests.py", "pkg/mytest.py", "pkg/test.pyc", "test", "pkg/_test.py"]
# every rule of PythonToolchain.is_protected, with near misses; checked as modified and added
PROTECTION_PATHS = PATHS + [
    "pytest.toml", ".pytest.toml", "sub/pytest.toml", "pkg/.pytest.ini", "pyproject.toml",
    "docs/tox.ini", "sitecustomize.py", "pkg/usercustomize.py", "evil.pth", "pkg/zz.pth",
    "pkg.egg-info/entry_points.txt", "src/pkg.egg-info/PKG-INFO", "x-1.0.dist-info/RECORD",
    "__editable__.pkg-1.0.pth", "__editable___pkg_finder.py", "lib/__editable__x/m.py",
    "json.py", "json/__init__.py", "os.py", "pkg/json.py", "src/json.py", "pytest.py",
    "_pytest/main.py", "pluggy/__init__.py", "iniconfig.py", "packaging/version.py",
    "colorama.py", "pygments", "json", "hackmod.py", "widgets/mod_0.py", "typing_extensions.py",
    "setup.py", "README.md", "Makefile", "egg-info.txt", "pkg/dist-info.py",
]


def _spec(**update) -> dict:
    return ContainerSpec.of(TaskRow.from_judged(make_judged(0))).model_copy(
        update=update).model_dump()


def _row(judged: Judged, **verdict) -> TaskRow:
    return TaskRow.from_judged(judged.model_copy(update={
        "verdict": judged.verdict.model_copy(update=verdict)}))


def test_grader_imports_only_the_stdlib():
    with open(grader.__file__, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


def test_run_settings_match_the_toolchain():
    assert grader.PYTEST_ARGS == toolchain.PYTEST_ARGS
    assert grader.RUN_ENV == toolchain.RUN_ENV
    assert grader.MAX_CULPRITS == resume.MAX_CULPRITS
    assert grader.NO_BODY == __import__("repogym.toolchains.pytest_report",
                                        fromlist=["NO_BODY"]).NO_BODY
    assert grader.LAUNCHER_FILE in grading_files(TaskRow.from_judged(make_judged(0)))


@pytest.mark.parametrize("path", PATHS)
def test_is_test_file_matches_the_toolchain(path):
    assert grader.is_test_file(path, _spec()) == PythonToolchain().is_test_file(path)


@pytest.mark.parametrize("added", [False, True], ids=["modified", "added"])
@pytest.mark.parametrize("path", PROTECTION_PATHS)
def test_is_protected_matches_verify(path, added):
    """``verify._discard_protected``: listed exactly, or ``toolchain.is_protected``."""
    row = _row(make_judged(3, kind=CandidateKind.mined),
               protected_files=("widgets/plugin.py",))
    spec = ContainerSpec.of(row).model_dump()
    expected = (path in verify_protected(spec_of(row))
                or PythonToolchain().is_protected(path, added=added))
    assert grader.is_protected(path, spec, added) == expected


@pytest.mark.parametrize("kind", list(CandidateKind))
def test_protected_paths_match_verify(kind):
    row = _row(make_judged(3, kind=kind), protected_files=("widgets/plugin.py",))
    assert protected_paths(row) == verify_protected(spec_of(row))
    assert "widgets/plugin.py" in protected_paths(row)
    if kind is CandidateKind.mined:
        assert "tests/test_mod_3.py" in protected_paths(row)


def test_protection_rules_cover_hooks_and_runner_config():
    spec = _spec()
    for path in ("sub/pytest.ini", "pkg/sitecustomize.py", "evil.pth", "tests/new.py",
                 "tox.ini", "widgets/conftest.py", "tests/test_other.py", "pytest.toml"):
        assert grader.is_protected(path, spec), path
    assert grader.is_protected("pluggy.py", spec, added=True)
    assert not grader.is_protected("pluggy.py", spec)  # the project's own, committed
    assert not grader.is_protected("widgets/mod_0.py", spec, added=True)


def test_spec_carries_the_judges_limits_and_runner_changes():
    limits = TimeLimits(tests={"tests/test_mod_0.py::test_total": 3.5}, default=60.0,
                        run=90.0, grace=1.5)
    row = _row(make_judged(0), time_limits=limits, runner_changes=("plugin:env_thing",))
    spec = ContainerSpec.of(row, timeout=300.0)
    assert spec.time_limits == limits and spec.runner_changes == ("plugin:env_thing",)
    assert grader.run_budget(spec.model_dump()) == 90.0
    assert grader.plugin_limits(spec.model_dump()) == limits.plugin_config()
    assert grader.run_budget(ContainerSpec.of(row, timeout=30.0).model_dump()) == 30.0
    older = ContainerSpec.of(TaskRow.from_judged(make_judged(0)), timeout=120.0)
    assert older.time_limits == policy_for(120.0, 120.0).unknown()  # grade_in's default


def _events(*events) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\n"


def _test(nodeid, when="call", outcome="passed", **kw) -> dict:
    return {"event": "test", "nodeid": nodeid, "when": when, "outcome": outcome, **kw}


def _ran(nodeid, outcome="passed", **kw) -> list[dict]:
    """A whole test: begin, setup, call, teardown."""
    return [{"event": "begin", "nodeid": nodeid}, _test(nodeid, "setup"),
            _test(nodeid, "call", outcome, **kw), _test(nodeid, "teardown")]


N = "n" * 32
FINISH = {"event": "finish", "exitstatus": 0, "nonce": N}
FINISH_1 = {"event": "finish", "exitstatus": 1, "nonce": N}
CHANGED = {"event": "runner_changed", "when": "collection", "what": ["plugin:env", "x.y"]}
# name -> (report, exit code, the run timed out)
REPORTS = {
    "all_pass": (_events({"event": "start"}, *_ran("t::a", body=True), FINISH), 0, False),
    "fail_and_error": (_events(_test("t::a", outcome="failed", message="boom"),
                               _test("t::b", "setup", "failed"),
                               {"event": "collect_error", "nodeid": "t2.py"}, FINISH_1), 1,
                       False),
    "xfail_skip_xpass": (_events(_test("t::a", outcome="skipped", wasxfail=True),
                                 _test("t::b", "setup", "skipped"),
                                 _test("t::c", wasxfail=True, body=False), FINISH), 0, False),
    "forged_nonce": (_events(_test("t::a"), {**FINISH, "nonce": "forged"}), 0, False),
    "two_finishes": (_events(FINISH, FINISH), 0, False),
    "exit_code_mismatch": (_events(_test("t::a"), FINISH), 1, False),
    "zero_exit_with_failure": (_events(_test("t::a", outcome="failed"), FINISH), 0, False),
    "old_tamper_event": (_events(_test("t::a"), {"event": "tamper", "what": ["x"]}, FINISH),
                         0, False),
    "runner_changed": (_events(*_ran("t::a"), CHANGED, FINISH), 0, False),
    "runner_changed_twice": (_events(*_ran("t::a"), CHANGED, {**CHANGED, "what": ["x.y", "z"]},
                                     FINISH), 0, False),
    "killed_midway": (_events(_test("t::a", "setup")) + "{not json", -9, False),
    "garbage": ("PASSED t::a\n", 0, False),
    # a pass whose body never ran is an error; the exit code 0 is still consistent
    "no_body": (_events(*_ran("t::a", body=False), *_ran("t::b", body=None), FINISH), 0,
                False),
    "no_body_and_exit_1": (_events(*_ran("t::a", body=False), FINISH_1), 1, False),
    # binary grading stopped the run at a skipped test: pytest exits 1 with no failure
    "stopped_at_a_skip": (_events(*_ran("t::a", "skipped"), {"event": "stopped",
                                  "nodeid": "t::a", "nonce": N}, FINISH_1), 1, False),
    "stopped_forged": (_events(*_ran("t::a", "skipped"), {"event": "stopped",
                               "nodeid": "t::a", "nonce": "x" * 32}, FINISH_1), 1, False),
    # soft limit: interrupted, fails as timed out, the run goes on
    "soft_timeout": (_events({"event": "begin", "nodeid": "t::a"}, _test("t::a", "setup"),
                             {"event": "timeout", "nodeid": "t::a", "limit": 2, "hard": False},
                             _test("t::a", outcome="failed", message="Timeout: ..."),
                             _test("t::a", "teardown"), *_ran("t::b"), FINISH_1), 1, False),
    # hard limit: the plugin killed the run in t::b; t::c never ran
    "hard_timeout": (_events(*_ran("t::a"), {"event": "begin", "nodeid": "t::b"},
                             _test("t::b", "setup"),
                             {"event": "timeout", "nodeid": "t::b", "limit": 2.5, "hard": False},
                             {"event": "timeout", "nodeid": "t::b", "limit": 2.5, "hard": True}),
                     -9, False),
    "died_in_call": (_events(*_ran("t::a"), {"event": "begin", "nodeid": "t::b"},
                             _test("t::b", "setup")), 137, False),
    "died_after_teardown": (_events(*_ran("t::a")), -9, False),
    "died_after_timed_out_test": (_events(*_ran("t::a"), {"event": "timeout", "nodeid": "t::a",
                                                          "limit": 1}), -9, False),
    # the run's own limit (the sandbox's / `timeout`'s) stopped it in t::b
    "run_limit_in_a_test": (_events(*_ran("t::a"), {"event": "begin", "nodeid": "t::b"}), -9,
                            True),
    "run_limit_between_tests": (_events(*_ran("t::a")), -9, True),
}
ALLOWED = {"none": (), "env": ("plugin:env", "x.y"), "some": ("x.y",)}


def _theirs(name, allowed=()):
    """The core's run of a report: parsed, blamed as run_to_end does, one part merged."""
    raw, code, timed_out = REPORTS[name]
    run = parse_report(raw, nonce=N, exit_code=code, duration=7.2, timed_out=timed_out,
                       allowed_changes=allowed)
    return resume.merged([resume._blame_loss(resume._blame_overrun(run))])


def _ours(name, allowed=()):
    raw, code, timed_out = REPORTS[name]
    report = grader.parse_report(raw, N, code, timed_out, allowed, duration=7.2)
    return grader.merged([grader.blame_overrun(report)])


@pytest.mark.parametrize("allowed", sorted(ALLOWED))
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_parsing_matches_the_toolchain(name, allowed):
    ours, theirs = _ours(name, ALLOWED[allowed]), _theirs(name, ALLOWED[allowed])
    assert ours["tests"] == {k: {"outcome": v.outcome.value, "timed_out": v.timed_out,
                                 "message": v.message} for k, v in theirs.results.items()}
    assert ours["finished"] == theirs.finished
    assert ours["problems"] == list(theirs.problems)
    assert (ours["died_in"], ours["culprits"]) == (theirs.died_in, list(theirs.culprits))


def test_the_report_rules_are_exercised():
    """The fixtures above reach every rule (a guard against a vacuous parity test)."""
    assert _ours("no_body")["tests"]["t::a"] == {"outcome": "error", "timed_out": False,
                                                 "message": grader.NO_BODY}
    assert _ours("no_body")["problems"] == [] and _ours("no_body_and_exit_1")["problems"] == [
        "exit code 1 but the report has no failure"]
    assert _ours("stopped_at_a_skip")["problems"] == [] and _ours("stopped_forged")[
        "problems"] == ["exit code 1 but the report has no failure"]
    assert _ours("soft_timeout")["tests"]["t::a"]["timed_out"]
    hard = _ours("hard_timeout")
    assert hard["died_in"] == "t::b" and hard["tests"]["t::b"]["outcome"] == "failed"
    assert "t::c" not in hard["tests"]
    assert _ours("died_in_call")["tests"]["t::b"]["outcome"] == "error"
    assert _ours("died_after_teardown")["died_in"] is None
    assert _ours("died_after_timed_out_test")["died_in"] == "t::a"
    assert "run reached its limit" in _ours("run_limit_in_a_test")["tests"]["t::b"]["message"]
    assert _ours("runner_changed")["problems"] and not _ours("runner_changed",
                                                             ALLOWED["env"])["problems"]


@pytest.mark.parametrize("allowed", sorted(ALLOWED))
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_grading_matches_verify(name, allowed):
    """Reward and problems equal verify's ``_graded`` for the same run."""
    wanted = {"t::a", "t::b"} if name not in ("all_pass", "garbage") else {"t::a"}
    spec = GradingSpec(instance_id="x", image="i", base_commit="c", bug_patch="",
                       test_patch="", FAIL_TO_PASS=("t::a",), PASS_TO_PASS=())
    run, report = _theirs(name, ALLOWED[allowed]), _ours(name, ALLOWED[allowed])
    for partial in (False, True):
        expected = _graded(spec, run, wanted, [], partial=partial)
        got = grader.grade(report, wanted, partial)
        assert (got["reward"], got["resolved"], got["problems"]) == (
            expected.reward, expected.resolved, list(expected.problems))
        assert got["trusted"] == run.trusted
        assert got["outcomes"] == {k: (v.value if v else None)
                                   for k, v in expected.outcomes.items()}


# -- runs that die in a test: the grader's run_to_end against repogym's ----------------------

def _scripted(plan: dict[str, str], todo: list[str]) -> tuple[str, int]:
    """The report of running ``todo`` when each test does what ``plan`` says: ``pass``,
    ``fail``, ``soft`` (past its limit, interrupted), ``hang`` (past its limit, killed
    with the run) or ``die`` (kills the run)."""
    events, bad = [], False
    for t in todo:
        how = plan[t]
        if how in ("pass", "fail"):
            events += _ran(t, "passed" if how == "pass" else "failed")
            bad = bad or how == "fail"
            continue
        events += [{"event": "begin", "nodeid": t}, _test(t, "setup")]
        if how == "die":
            return _events(*events), -9
        events.append({"event": "timeout", "nodeid": t, "limit": 2.0, "hard": False})
        if how == "hang":
            events.append({"event": "timeout", "nodeid": t, "limit": 2.0, "hard": True})
            return _events(*events), -9
        events += [_test(t, outcome="failed", message="Timeout"), _test(t, "teardown")]
        bad = True
    return _events(*events, FINISH_1 if bad else FINISH), 1 if bad else 0


PLANS = {
    "all_pass": {"t::a": "pass", "t::b": "pass", "t::c": "pass"},
    "hang_in_the_middle": {"t::a": "pass", "t::b": "hang", "t::c": "pass"},
    "die_then_hang": {"t::a": "die", "t::b": "pass", "t::c": "hang", "t::d": "fail"},
    "soft_timeout": {"t::a": "soft", "t::b": "pass"},
    "last_dies": {"t::a": "pass", "t::b": "die"},
    "every_test_dies": {f"t::{i}": "die" for i in range(8)},
}


class _ScriptedRunner:
    def __init__(self, plan):
        self.plan, self.calls = plan, []

    def run_tests(self, sandbox, *, timeout, select=None, plugins=(), limits=None,
                  exclude=(), allowed_changes=(), **_options):
        self.calls.append(list(select))
        raw, code = _scripted(self.plan, list(select))
        return parse_report(raw, nonce=N, exit_code=code, duration=1.0,
                            allowed_changes=allowed_changes)


@pytest.mark.parametrize("partial", [False, True], ids=["binary", "partial"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_runs_to_the_end_as_verify_does(plan, partial):
    tests = PLANS[plan]
    wanted = set(tests)
    runner = _ScriptedRunner(tests)
    sandbox: Any = None  # never touched: no part loses its sandbox
    run = resume.run_to_end(runner, sandbox, timeout=600.0, select=sorted(wanted),
                            stop=None if partial else (lambda _r: True))
    calls = []

    def part(todo, timeout):
        calls.append(list(todo))
        raw, code = _scripted(tests, todo)
        return grader.parse_report(raw, N, code, False, (), duration=1.0)

    report = grader.run_to_end(part, wanted, 600.0, partial)
    assert calls == runner.calls
    assert report["culprits"] == list(run.culprits)
    spec = GradingSpec(instance_id="x", image="i", base_commit="c", bug_patch="",
                       test_patch="", FAIL_TO_PASS=tuple(sorted(wanted)), PASS_TO_PASS=())
    expected = _graded(spec, run, wanted, [], partial=partial)
    got = grader.grade(report, wanted, partial)
    assert (got["reward"], got["resolved"], got["problems"]) == (
        expected.reward, expected.resolved, list(expected.problems))
    assert got["outcomes"] == {k: (v.value if v else None) for k, v in expected.outcomes.items()}
    if plan == "hang_in_the_middle":
        assert got["reward"] == (2 / 3 if partial else 0.0)
        assert any("t::b: timed out" in p for p in got["problems"])


def test_bad_spec_scores_zero_with_exit_2(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(json.dumps({"instance_id": "x"}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "reward.txt").write_text("1\n")  # planted: must not survive
    (out / "reward.json").write_text('{"reward": 1}')
    code = grader.main(["--spec", str(tmp_path / "spec.json"), "--plugin", "p.py",
                        "--out", str(out)])
    assert code == grader.EXIT_USAGE
    assert (out / "reward.txt").read_text() == "0\n" and not (out / "reward.json").exists()
    assert "REPOGYM_REWARD=0" in capsys.readouterr().out


# -- the tree rebuild on a real git repository (no container needed) -------------------------

def _git(cwd, *args):
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


@pytest.fixture
def prepared(tmp_path):
    """A repository in its broken state plus a read-only anchor, as PREPARE_SCRIPT leaves
    them; and the spec of a task whose test patch adds tests/test_new.py."""
    import shutil
    import subprocess

    from repogym.patches import new_file_diff

    repo, anchor = tmp_path / "repo", tmp_path / "anchor"
    for rel, text in {"pkg/core.py": "X = 1\n", "tests/test_core.py": "def test_x(): pass\n",
                      ".gitignore": "*.egg-info/\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "task")
    (repo / "pkg.egg-info").mkdir()
    (repo / "pkg.egg-info/PKG-INFO").write_text("Name: pkg\n")
    anchor.mkdir()
    shutil.copytree(repo / ".git", anchor / "task.git")
    (anchor / "commit").write_text(subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo,
                                                  capture_output=True, text=True).stdout)
    subprocess.run(["tar", "-cf", str(anchor / "post-install.tar"), "pkg.egg-info"], cwd=repo,
                   check=True)
    row = TaskRow.from_judged(make_judged(0))
    spec = ContainerSpec.of(row).model_copy(update={
        "repo_dir": str(repo), "anchor": str(anchor),
        "test_patch": new_file_diff("tests/test_new.py", "def test_new(): pass\n"),
        "protected": ("tests/test_new.py", "tests/test_core.py")}).model_dump()
    return repo, spec, tmp_path / "scratch"


def test_solver_edits_are_kept_and_test_edits_discarded(prepared):
    repo, spec, scratch = prepared
    (repo / "pkg/core.py").write_text("X = 2\n")  # the fix
    (repo / "pkg/extra.py").write_text("Y = 3\n")  # a new module
    (repo / "tests/test_core.py").write_text("def test_x(): assert True\n")
    (repo / "conftest.py").write_text("raise SystemExit\n")
    (repo / "pkg/evil.pth").write_text("import os\n")
    (repo / ".gitignore").write_text("*.egg-info/\nsneaky_conftest/\n")
    (repo / "sneaky_conftest").mkdir()
    (repo / "sneaky_conftest/conftest.py").write_text("x = 1\n")  # ignored by the solver
    (repo / "tests/test_new.py").write_text("def test_new(): assert True  # forged\n")
    (repo / "pkg.egg-info/PKG-INFO").unlink()
    (repo / "vendored/.git").mkdir(parents=True)  # a nested repository
    (repo / "vendored/conftest.py").write_text("x = 1\n")
    (repo / "pkg/core.py").chmod(0)
    scratch.mkdir()
    problem, discarded = grader.prepare_tree(spec, None, str(scratch))
    assert problem is None
    assert (repo / "pkg/core.py").read_text() == "X = 2\n"
    assert (repo / "pkg/extra.py").read_text() == "Y = 3\n"
    assert (repo / "tests/test_core.py").read_text() == "def test_x(): pass\n"
    assert (repo / "tests/test_new.py").read_text() == "def test_new(): pass\n"  # test_patch
    assert (repo / "pkg.egg-info/PKG-INFO").read_text() == "Name: pkg\n"  # post-install
    for gone in ("conftest.py", "pkg/evil.pth", "sneaky_conftest", "vendored"):
        assert not (repo / gone).exists(), gone
    assert {"tests/test_core.py", "conftest.py", "pkg/evil.pth", "tests/test_new.py"} <= set(
        discarded)


def test_patch_file_mode_and_a_patch_that_does_not_apply(prepared, tmp_path):
    from repogym.patches import unified_diff

    repo, spec, scratch = prepared
    scratch.mkdir()
    good, bad = tmp_path / "good.diff", tmp_path / "bad.diff"
    good.write_text(unified_diff("pkg/core.py", "X = 1\n", "X = 5\n"))
    bad.write_text(unified_diff("pkg/core.py", "X = 9\n", "X = 5\n"))
    (repo / "pkg/core.py").write_text("junk left by someone\n")  # reset before applying
    assert grader.prepare_tree(spec, str(good), str(scratch)) == (None, [])
    assert (repo / "pkg/core.py").read_text() == "X = 5\n"
    problem, _ = grader.prepare_tree(spec, str(bad), str(scratch))
    assert problem == "patch does not apply"
    assert (repo / "pkg/core.py").read_text() == "X = 1\n"


def test_a_patch_cannot_hide_a_conftest_behind_gitignore(prepared, tmp_path):
    """``git status`` does not list ignored files, so the grader also takes every path the
    patch names (``git apply --numstat``)."""
    from repogym.patches import new_file_diff

    repo, spec, scratch = prepared
    scratch.mkdir()
    patch = tmp_path / "hack.diff"
    patch.write_text(new_file_diff(".gitignore.d", "x\n")
                     + "diff --git a/.gitignore b/.gitignore\n--- a/.gitignore\n"
                       "+++ b/.gitignore\n@@ -1 +1,2 @@\n *.egg-info/\n+conftest.py\n"
                     + new_file_diff("conftest.py", "import pytest\n"))
    problem, discarded = grader.prepare_tree(spec, str(patch), str(scratch))
    assert problem is None and "conftest.py" in discarded
    assert not (repo / "conftest.py").exists()


def test_the_work_tree_gets_a_fresh_git_dir_at_the_broken_commit(prepared):
    """The launcher pins pytest's configuration to the files committed at ``HEAD`` in the
    work tree; the solver's ``.git`` (a commit that adds a configuration file, or drops a
    committed one) is replaced by one at the anchor's commit before the run."""
    import os
    import subprocess

    from repogym.toolchains.plugins import repogym_launch

    repo, spec, scratch = prepared
    (repo / "pytest.toml").write_text('[pytest]\naddopts = ["-p", "hackmod"]\n')
    (repo / "hackmod.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "rm", "-q", "--cached", "pkg/core.py")
    _git(repo, "commit", "-qm", "solver")
    names = ("pytest.toml", "pkg/core.py", ".gitignore")
    assert repogym_launch.committed(str(repo), names) == {"pytest.toml", ".gitignore"}
    scratch.mkdir()
    problem, discarded = grader.prepare_tree(spec, None, str(scratch))
    assert problem is None and "pytest.toml" in discarded and "hackmod.py" not in discarded
    assert repogym_launch.committed(str(repo), names) == {"pkg/core.py", ".gitignore"}
    assert repogym_launch.pinned_config(str(repo)) == os.devnull

    def git_out(*args):
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                              check=True).stdout.split()

    anchor = (scratch.parent / "anchor/commit").read_text().strip()
    assert git_out("rev-parse", "HEAD") == [anchor]
    assert git_out("rev-list", "--all", "--count") == ["1"]
    assert git_out("status", "--porcelain", "--untracked-files=all") == [
        "??", "hackmod.py", "??", "tests/test_new.py"]  # the kept change, the test patch


def test_added_root_modules_that_shadow_the_runner_are_discarded(prepared, tmp_path):
    from repogym.patches import new_file_diff, unified_diff

    repo, spec, scratch = prepared
    scratch.mkdir()
    patch = tmp_path / "shadow.diff"
    patch.write_text(new_file_diff("pluggy.py", "raise SystemExit\n")
                     + new_file_diff("json/__init__.py", "x = 1\n")
                     + new_file_diff("pkg/json.py", "x = 1\n")
                     + new_file_diff("hackmod.py", "x = 1\n")
                     + unified_diff("pkg/core.py", "X = 1\n", "X = 2\n"))
    problem, discarded = grader.prepare_tree(spec, str(patch), str(scratch))
    assert problem is None and sorted(discarded) == ["json/__init__.py", "pluggy.py"]
    assert not (repo / "pluggy.py").exists() and not (repo / "json/__init__.py").exists()
    assert (repo / "pkg/json.py").exists() and (repo / "hackmod.py").exists()


def test_missing_launcher_is_bad_input(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(ContainerSpec.of(TaskRow.from_judged(make_judged(0))).model_dump_json())
    (tmp_path / "repogym_report.py").write_text("")
    code = grader.main(["--spec", str(spec), "--plugin", str(tmp_path / "repogym_report.py")])
    assert code == grader.EXIT_USAGE
    assert f"no launcher file at {tmp_path / grader.LAUNCHER_FILE}" in capsys.readouterr().out


def test_lines_for_swebench_keep_python_ids_with_spaces_whole(capsys):
    """SWE-bench's pytest parser cuts ``test_x[Donald E. Knuth]`` at its first space (the
    official harness left every such gold patch unresolved): Python's lines are read whole,
    as JavaScript's, and anything but a trusted pass is a failure."""
    spaced = "test_inflection.py::test_parameterize[Donald E. Knuth-donald-e-knuth]"
    result = {"instance_id": "x", "reward": 0.0, "trusted": True, "discarded": [],
              "problems": [], "resolved": False,
              "outcomes": {spaced: "passed", "t.py::b": "xfail", "t.py::c": None}}
    grader.emit(result, None, "python")
    out = capsys.readouterr().out
    assert f"[FAILED] t.py::b\n[FAILED] t.py::c\n[PASSED] {spaced}\n" in out
