"""The stdlib-only in-container grader agrees with repogym's own grading code, rule by rule.

(Its end-to-end behaviour in real containers is in test_harbor.py and test_swebench.py.)
"""

from __future__ import annotations

import ast
import json
import sys

import pytest

from repogym.datasets.exports import container_grader as grader
from repogym.datasets.exports.grading import ContainerSpec, protected_paths
from repogym.datasets.verify import GradingSpec, _protected_paths
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import CandidateKind
from repogym.toolchains.python import PythonToolchain, parse_report
from tests.exports.conftest import make_judged

PATHS = ["conftest.py", "pkg/conftest.py", "tests/test_a.py", "test_b.py", "pkg/b_test.py",
         "pkg/core.py", "testing/helpers.py", "src/pkg/tests/util.py", "pkg/testsuite.py",
         "pytest.ini", "docs/conf.py", "test/x.py", "pkg/test.py", "a/tests", "setup.cfg"]


def test_grader_imports_only_the_stdlib():
    with open(grader.__file__, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


@pytest.mark.parametrize("path", PATHS)
def test_is_test_file_matches_the_toolchain(path):
    spec = ContainerSpec.of(TaskRow.from_judged(make_judged(0)))
    assert grader.is_test_file(path, spec.test_dir_names) == PythonToolchain().is_test_file(path)


@pytest.mark.parametrize("kind", list(CandidateKind))
def test_protected_paths_match_verify(kind):
    row = TaskRow.from_judged(make_judged(3, kind=kind))
    spec = GradingSpec(**{k: getattr(row, k) for k in GradingSpec.model_fields})
    assert protected_paths(row) == _protected_paths(None, None, spec)  # type: ignore[arg-type]
    if kind is CandidateKind.mined:
        assert "tests/test_mod_3.py" in protected_paths(row)


def test_protection_rules_cover_hooks_and_runner_config():
    spec = ContainerSpec.of(TaskRow.from_judged(make_judged(0))).model_dump()
    for path in ("sub/pytest.ini", "pkg/sitecustomize.py", "evil.pth", "tests/new.py",
                 "tox.ini", "widgets/conftest.py", "tests/test_other.py"):
        assert grader.is_protected(path, spec), path
    assert not grader.is_protected("widgets/mod_0.py", spec)


def _events(*events) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\n"


N = "n" * 32
REPORTS = {
    "all_pass": (_events({"event": "start", "nonce": N},
                         {"event": "test", "nodeid": "t::a", "when": "call", "outcome": "passed"},
                         {"event": "finish", "exitstatus": 0, "nonce": N}), 0),
    "fail_and_error": (_events({"event": "test", "nodeid": "t::a", "when": "call",
                                "outcome": "failed"},
                               {"event": "test", "nodeid": "t::b", "when": "setup",
                                "outcome": "failed"},
                               {"event": "collect_error", "nodeid": "t2.py"},
                               {"event": "finish", "exitstatus": 1, "nonce": N}), 1),
    "xfail_skip_xpass": (_events({"event": "test", "nodeid": "t::a", "when": "call",
                                  "outcome": "skipped", "wasxfail": True},
                                 {"event": "test", "nodeid": "t::b", "when": "setup",
                                  "outcome": "skipped"},
                                 {"event": "test", "nodeid": "t::c", "when": "call",
                                  "outcome": "passed", "wasxfail": True},
                                 {"event": "finish", "exitstatus": 0, "nonce": N}), 0),
    "forged_nonce": (_events({"event": "test", "nodeid": "t::a", "when": "call",
                              "outcome": "passed"},
                             {"event": "finish", "exitstatus": 0, "nonce": "forged"}), 0),
    "two_finishes": (_events({"event": "finish", "exitstatus": 0, "nonce": N},
                             {"event": "finish", "exitstatus": 0, "nonce": N}), 0),
    "exit_code_mismatch": (_events({"event": "test", "nodeid": "t::a", "when": "call",
                                    "outcome": "passed"},
                                   {"event": "finish", "exitstatus": 0, "nonce": N}), 1),
    "zero_exit_with_failure": (_events({"event": "test", "nodeid": "t::a", "when": "call",
                                        "outcome": "failed"},
                                       {"event": "finish", "exitstatus": 0, "nonce": N}), 0),
    "tampered": (_events({"event": "test", "nodeid": "t::a", "when": "call",
                          "outcome": "passed"}, {"event": "tamper", "what": ["x"]},
                         {"event": "finish", "exitstatus": 0, "nonce": N}), 0),
    "killed_midway": (_events({"event": "test", "nodeid": "t::a", "when": "setup",
                               "outcome": "passed"}) + "{not json", -9),
    "garbage": ("PASSED t::a\n", 0),
}


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_parsing_matches_the_toolchain(name):
    raw, code = REPORTS[name]
    ours = grader.parse_report(raw, N, code, timed_out=False)
    theirs = parse_report(raw, nonce=N, exit_code=code, duration=1.0)
    assert ours["results"] == {k: v.outcome.value for k, v in theirs.results.items()}
    assert ours["finished"] == theirs.finished
    assert ours["problems"] == list(theirs.problems)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_grading_matches_verify(name):
    """Reward and problems equal verify's ``_graded`` for the same run."""
    from repogym.datasets.verify import _graded

    raw, code = REPORTS[name]
    wanted = {"t::a", "t::b"} if "fail" in name else {"t::a"}
    run = parse_report(raw, nonce=N, exit_code=code, duration=1.0)
    spec = GradingSpec(instance_id="x", image="i", base_commit="c", bug_patch="",
                       test_patch="", FAIL_TO_PASS=("t::a",), PASS_TO_PASS=())
    for partial in (False, True):
        expected = _graded(spec, run, wanted, [], partial=partial)
        reward, resolved, outcomes, problems = grader.grade(
            grader.parse_report(raw, N, code, False), wanted, False, partial)
        assert (reward, resolved, problems) == (expected.reward, expected.resolved,
                                                list(expected.problems))
        assert outcomes == {k: (v.value if v else None) for k, v in expected.outcomes.items()}


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

    from repogym.generators.diffs import new_file_diff

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
    from repogym.generators.diffs import unified_diff

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
    from repogym.generators.diffs import new_file_diff

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
