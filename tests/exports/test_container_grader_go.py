"""The in-container grader's Go rules agree with repogym's Go toolchain, rule by rule (no
Docker; the real containers are in test_go.py):

* protection (``GoToolchain.is_protected`` and ``verify``'s exact paths);
* ids (``split_id``, ``id_of``, ``by_file``) and the test files' declared tests
  (``_declared``), on a real git work tree;
* the run: the script the grader fills in from the plan is, byte for byte, the one
  ``repogym.toolchains.go.plan`` makes for the same selection, exclusion, limits, scratch
  folder and nonce (and so are its command, canary, report and build log paths);
* reading a run: the shared reader ``repogym_go_report`` (loaded by path, as the grader
  loads it) against the toolchain's ``parse_events``, on event streams of every kind;
* the spec, the grading files and the command line, the SWE-bench lines, and the exports
  of Go rows (no Docker: a Go plan needs none).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repogym.datasets.exports import container_grader as grader
from repogym.datasets.exports import export_rows
from repogym.datasets.exports.grading import (
    GO_REPORT_FILE,
    PYTHON_FIELDS,
    SPEC_FILE,
    ContainerSpec,
    GoPlan,
    JsPlan,
    go_plan,
    grader_args,
    grading_files,
    plugin_source,
)
from repogym.datasets.verify import spec_of
from repogym.errors import InputError
from repogym.grading import protected_paths as verify_protected
from repogym.patches import new_file_diff, unified_diff
from repogym.sandboxes.base import ExecResult, Sandbox
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Candidate, CandidateKind, Judged, TimeLimits, Verdict
from repogym.toolchains.go import GoToolchain, by_file, id_of, plan, split_id
from repogym.toolchains.go import export as go_export
from repogym.toolchains.go.report import parse_events
from repogym.toolchains.plugins import repogym_go_report
from tests.conftest import commit_files

TC = GoToolchain()
N = "0123456789abcdef" * 2
READER = grader.load_go_report(str(Path(repogym_go_report.__file__)))


def _go_row(i: int = 0, *, kind: CandidateKind = CandidateKind.synthetic,
            limits: TimeLimits | None = None) -> TaskRow:
    """A judged Go task shaped like the pipeline's (ids ``<file>::<Test>[/<sub>]``)."""
    src = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"
    bug = unified_diff("calc.go", src, src.replace("a + b", "a - b")) \
        if kind is CandidateKind.synthetic else ""
    gold = unified_diff("calc.go", src.replace("a + b", "a - b"), src)
    tests = new_file_diff("new_test.go", "package calc\n") if kind is CandidateKind.mined else ""
    cand = Candidate(kind=kind, repo="acme__calc", language="go", base_commit=f"{i:040x}",
                     bug_patch=bug, gold_patch=gold, test_patch=tests, generator="procedural",
                     mutator="go_swap", files=("calc.go",))
    verdict = Verdict(instance_id=cand.instance_id, status="accept",
                      fail_to_pass=("calc_test.go::TestAdd/negative",),
                      pass_to_pass=("sub/x_test.go::TestX",), time_limits=limits,
                      evidence={}, seconds=1.0)
    return TaskRow.from_judged(Judged(candidate=cand, verdict=verdict,
                                      statement="Add subtracts", image="repogym-env/calc:1"))


def _spec(row: TaskRow | None = None) -> dict[str, Any]:
    return json.loads(ContainerSpec.of(row or _go_row(kind=CandidateKind.mined)).to_json())


# -- the reader and the grader are stdlib only --------------------------------------------------

def test_the_reader_imports_only_the_stdlib():
    tree = ast.parse(Path(repogym_go_report.__file__).read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


def test_constants_match_the_export():
    assert grader.GO_REPORT_FILE == GO_REPORT_FILE
    assert plugin_source(GO_REPORT_FILE) == Path(repogym_go_report.__file__).read_bytes()
    assert (grader.GO_SCRATCH, grader.GO_NONCE, grader.GO_PACKAGES) == (
        go_export.SCRATCH, go_export.NONCE, go_export.PACKAGES)
    assert (grader.GO_RUN, grader.GO_SKIP, grader.GO_TIMEOUTS) == (
        go_export.RUN, go_export.SKIP, go_export.TIMEOUTS)
    assert (grader.GO_DEFAULT_TIMEOUT, grader.GO_SCRIPT, grader.GO_INDEX) == (
        go_export.DEFAULT_TIMEOUT, go_export.SCRIPT, go_export.INDEX)
    assert set(grader.GO_PLAN_REQUIRED) == set(GoPlan.model_fields)
    plan_data = go_export.grading_plan()
    assert GoPlan.model_validate(plan_data) == go_plan()
    assert set(grader.GO_SLOT.findall(json.dumps(plan_data))) >= {"12", "16"}  # the canary's


# -- protection -----------------------------------------------------------------------------

PATHS = [
    "uuid.go", "uuid_test.go", "pkg/x_test.go", "pkg/x.go", "x_test.go.orig", "xtest.go",
    "go.mod", "sub/go.mod", "go.sum", "go.work", "go.work.sum", "sub/go.work.sum", "go.mod.bak",
    "go.modx", "vendor/modules.txt", "a/vendor/b/c.go", "vendor", "vendor.go", "testdata",
    "testdata/in.json", "pkg/testdata/deep/x.go", "test/x.go", "tests/x.go", "main.go",
    "zz_probe_exit.go", "zz_probe_main_test.go", "README.md", "Makefile", "go.mod\n",
    "a\nb_test.go", "x_test.go\n", ".github/workflows/ci.yml", "internal/testing/t.go",
]


@pytest.mark.parametrize("added", [False, True], ids=["modified", "added"])
@pytest.mark.parametrize("path", PATHS)
def test_is_protected_matches_the_toolchain_and_verify(path, added):
    rules = go_export.protection_rules()
    assert grader.protected_by_rules(path, rules) == TC.is_protected(path, added=added)
    row = _go_row(kind=CandidateKind.mined)
    expected = path in verify_protected(spec_of(row)) or TC.is_protected(path, added=added)
    assert grader.is_protected(path, _spec(row), added) == expected


def test_protection_covers_what_the_go_probes_plant():
    rules = go_export.protection_rules()
    for path in ("uuid_test.go", "zz_probe_main_test.go", "go.mod", "go.sum", "go.work",
                 "vendor/github.com/x/y.go", "testdata/golden.txt"):
        assert grader.protected_by_rules(path, rules), path
    for path in ("zz_probe_exit.go", "zz_probe_forge.go", "version4.go", "internal/x.go"):
        assert not grader.protected_by_rules(path, rules), path


# -- ids and the test files' declared tests -------------------------------------------------

IDS = ["a_test.go::TestA", "a_test.go::TestA/sub_case", "pkg/x_test.go::TestX/a/b",
       "pkg/deep/y_test.go::TestY", "pkg/x_test.go::TestX/with::colons", "_test.go::TestGen"]


@pytest.mark.parametrize("test", IDS)
def test_ids_split_and_name_as_the_toolchain_does(test):
    assert grader.go_split_id(test) == split_id(test)
    declared = {(".", "TestA"): "a_test.go", ("pkg", "TestX"): "pkg/x_test.go"}
    folder, _, name = split_id(test)
    assert grader.go_id_of(declared, folder, name) == id_of(declared, folder, name)
    assert grader.go_id_of({}, folder, name) == id_of({}, folder, name)


def test_bare_test_files_select_their_tests_as_the_toolchain_does():
    declared = {(".", "TestA"): "a_test.go", (".", "TestB"): "a_test.go",
                ("pkg", "TestX"): "pkg/x_test.go"}
    for select in (["a_test.go"], ["a_test.go::TestB", "a_test.go", "pkg/y_test.go"],
                   ["pkg/x_test.go::TestX/a", "pkg/x_test.go"], IDS):
        assert grader.go_by_file(select, declared) == by_file(select, declared)


class RepoSandbox(Sandbox):
    """A work tree on this machine, as much of a sandbox as ``_declared`` uses."""

    provider = "fake"

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def repo_dir(self) -> str:
        return str(self.root)

    def exec(self, cmd, *, timeout, env=None, workdir=None, user=None) -> ExecResult:
        proc = subprocess.run(cmd, cwd=self.root, capture_output=True, text=True)
        return ExecResult(exit_code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr,
                          duration=0.0)

    def read_file(self, path: str) -> bytes:
        full = self.root / path
        if not full.is_file():
            raise FileNotFoundError(path)
        return full.read_bytes()

    def write_file(self, path, content, *, mode=0o644) -> None:
        raise NotImplementedError

    def reset(self, commit: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def test_declared_tests_match_the_toolchain(tmp_path):
    repo = tmp_path / "repo"
    commit_files(repo, {
        "go.mod": "module example.com/m\n",
        "a_test.go": "package m\n\nfunc TestA(t *testing.T) {}\nfunc ExampleA() {}\n"
                     "func helper() {}\n func TestIndented(t *testing.T) {}\n",
        "b_test.go": "package m\n\nfunc TestA(t *testing.T) {}\nfunc TestB(t *testing.T) {}\n"
                     "func FuzzB(f *testing.F) {}\n",
        "pkg/x_test.go": "package pkg\n\nfunc TestX(t *testing.T) {}\n",
        "pkg/deep/y_test.go": "package deep\n\nfunc TestY (t *testing.T) {}\n",
        ".gitignore": "ignored_test.go\n",
        "gone_test.go": "package m\n\nfunc TestGone(t *testing.T) {}\n",
    }, "tests")
    (repo / "new_test.go").write_text("package m\n\nfunc TestNew(t *testing.T) {}\n")
    (repo / "ignored_test.go").write_text("package m\n\nfunc TestIgnored(t *testing.T) {}\n")
    (repo / "gone_test.go").unlink()  # tracked, deleted in the work tree
    ours = grader.go_declared(str(repo), go_plan().test_functions)
    theirs = TC._declared(RepoSandbox(repo))
    assert ours == theirs
    assert ours[(".", "TestA")] == "a_test.go" and (".", "TestNew") in ours
    assert (".", "TestIgnored") not in ours and ("pkg/deep", "TestY") in ours


# -- the run script -------------------------------------------------------------------------

LIMITS = [None, TimeLimits(tests={"a_test.go::TestA": 2.5, "pkg/x_test.go::TestX/a": 31.0},
                           default=3.0, run=90.0, grace=1.5),
          TimeLimits(default=None, run=45.0), TimeLimits(default=500.0, run=20.0)]
SELECTIONS = [(IDS[:1], []), (IDS, []), (IDS[2:4], IDS[:2]), (IDS[1:], ["a_test.go::TestA"]),
              (["pkg/x_test.go::TestX/a/b", "pkg/x_test.go::TestX/c"], ["pkg/x_test.go::TestX/a"]),
              (["a_test.go::Test(weird)$[chars]|.*"], []),
              (["pkg/x_test.go"], []), (["pkg/x_test.go", "a_test.go::TestA"], IDS[2:3])]


def _limits_of(limits: TimeLimits | None) -> dict[str, Any]:
    """The spec's ``time_limits`` for ``limits`` (the grader always has some: a row without
    gets the ceilings grade_in uses)."""
    return json.loads((limits or TimeLimits()).model_dump_json())


@pytest.mark.parametrize("limits", LIMITS, ids=["none", "per-test", "no-default", "capped"])
@pytest.mark.parametrize("select, exclude", SELECTIONS)
def test_the_filled_script_is_the_toolchains(select, exclude, limits):
    scratch = "/var/tmp/rg-k2j_x9/run"
    theirs = plan(select, exclude, limits or TimeLimits(), nonce=N, scratch=scratch,
                  canary=True)
    data = go_plan().model_dump()
    canary = grader.go_fill(data["canary"], N, {})
    assert canary == theirs.canary_name
    selection = grader.go_selection(select, exclude, _limits_of(limits), canary,
                                    data["min_binary_timeout"])
    assert grader.go_script(data, scratch, N, selection) == theirs.script()
    assert grader.go_fill(data["command"], N, {grader.GO_SCRIPT: "/var/tmp/rg-1/run-2.sh"}) \
        == theirs.command("/var/tmp/rg-1/run-2.sh")
    values = {grader.GO_SCRATCH: scratch}
    assert grader.go_fill(data["report"], N, values) == theirs.report
    assert grader.go_fill(data["build_log"], N, dict(values, **{grader.GO_INDEX: "7"})) == \
        theirs.build_log(7)


def test_the_script_takes_only_what_the_shell_takes_as_it_is():
    data = go_plan().model_dump()
    selection = grader.go_selection(IDS[:1], [], _limits_of(None), "TestC", 10.0)
    for scratch, nonce in (("/var/tmp/a b", N), ("/var/tmp/$(x)", N), ("/var/tmp/x", "zz;")):
        with pytest.raises(grader.GraderError):
            grader.go_script(data, scratch, nonce, selection)
    with pytest.raises(grader.GraderError, match="placeholder"):
        grader.go_fill("@RG_SOMETHING_NEW@", N, {})


def test_the_template_refuses_a_script_it_cannot_place(monkeypatch):
    from repogym.toolchains.go import script

    monkeypatch.setattr(script, "_assoc", lambda name, values: f"declare -A {name}=()")
    with pytest.raises(ValueError, match="not once"):
        go_export.script_template()


# -- reading a run: the shared reader and the toolchain's parse_events ------------------------

def marker(action: str, nonce: str = N, **fields: object) -> str:
    return json.dumps({"Action": f"repogym-{action}", "Nonce": nonce, **fields})


def event(action: str, test: str | None = None, pkg: str = "example.com/m", **fields: object
          ) -> str:
    body: dict[str, object] = {"Action": action, "Package": pkg, **fields}
    if test:
        body["Test"] = test
    return json.dumps(body)


def section(*events: str, status: int | None = 0, pkg: str = "example.com/m",
            folder: str = ".", index: int = 1) -> list[str]:
    end = [] if status is None else [marker("end", Package=pkg, Status=status)]
    return [marker("package", Package=pkg, Dir=folder, Index=index), *events, *end]


CANARY = "TestRepogymCanary" + N[:16]
CANARY_FAILS = (event("run", CANARY), event("output", CANARY, Output="    repogym canary\n"),
                event("fail", CANARY, Elapsed=0))
DONE = [marker("done")]
PKG = "example.com/m/pkg"
STREAMS = {
    "pass_fail_skip": section(
        event("run", "TestA"), event("output", "TestA", Output="=== RUN   TestA\n"),
        event("output", "TestA", Output="    a_test.go:9: got 1, want 2\n"),
        event("fail", "TestA", Elapsed=0.5), event("run", "TestB"), event("run", "TestB/x"),
        event("pass", "TestB/x", Elapsed=0.25), event("skip", "TestB"), *CANARY_FAILS,
        event("output", None, Output="FAIL\n"), status=1) + DONE,
    "all_pass": section(event("run", "TestA"), event("pass", "TestA"), *CANARY_FAILS,
                        status=1) + DONE,
    "forged_pass_after_fail": section(event("run", "TestA"), event("fail", "TestA"),
                                      event("pass", "TestA"), *CANARY_FAILS, status=1) + DONE,
    "exit_0_with_failure": section(event("run", "TestA"), event("fail", "TestA"), status=0)
    + DONE,
    "exit_3_without_failure": section(event("run", "TestA"), event("pass", "TestA"), status=3)
    + DONE,
    "canary_passed": section(event("run", "TestA"), event("pass", "TestA"), event("run", CANARY),
                             event("pass", CANARY), status=1) + DONE,
    "canary_missing_exit_0": section(event("run", "TestA"), event("pass", "TestA"), status=0)
    + DONE,
    "wrong_nonce_done": section(event("run", "TestA"), event("pass", "TestA"), *CANARY_FAILS,
                                status=1) + [marker("done", nonce="cd" * 16)],
    "forged_end_marker": section(event("run", "TestA"), event("pass", "TestA"),
                                 marker("end", nonce="ef" * 16, Package="example.com/m",
                                        Status=0), *CANARY_FAILS, status=1) + DONE,
    "no_done": section(event("run", "TestA"), event("pass", "TestA"), *CANARY_FAILS, status=1),
    "never_ended": section(event("run", "TestA"), event("pass", "TestA"), status=None) + DONE,
    "died_timeout": section(event("run", "TestA"), event("pass", "TestA"), event("run", "TestB"),
                            event("output", None, Output="panic: test timed out after 10s\n"),
                            status=2) + DONE,
    "died_panic": section(event("run", "TestB"), event("run", "TestB/x"),
                          event("output", "TestB/x", Output="panic: boom\n"), status=2) + DONE,
    "died_exit_0": section(event("run", "TestA"), event("output", "TestA", Output="x\n"),
                           status=0) + DONE,
    "build_failed": [*section(status=None), marker("build", Package="example.com/m", Status=1),
                     *section(*(event(a, t, pkg=PKG) for a, t in (
                         ("run", "TestX"), ("pass", "TestX"), ("run", CANARY), ("fail", CANARY))),
                         status=1, pkg=PKG, folder="pkg", index=2), *DONE],
    "events_after_end": section(event("run", "TestA"), event("fail", "TestA"), *CANARY_FAILS,
                                status=1) + [event("pass", "TestA"), event("run", "TestZ"),
                                             event("pass", "TestZ")] + DONE,
    "events_of_no_package": section(event("run", "TestA"), event("pass", "TestA"),
                                    event("pass", "TestQ", pkg="other"), *CANARY_FAILS,
                                    status=1) + DONE,
    "garbage": ["not json", "{broken", "[1, 2]", "", *section(
        event("run", "TestA"), "{\"Action\": 3}", event("pass", "TestA", Elapsed="x"),
        *CANARY_FAILS, status=1), "   {\"Action\":\"repogym-done\"}", *DONE],
    "two_packages": [*section(event("run", "TestA"), event("pass", "TestA"), *CANARY_FAILS,
                              status=1),
                     *section(*(event(a, t, pkg=PKG) for a, t in (
                         ("run", "TestX"), ("run", "TestX/a"), ("fail", "TestX/a"),
                         ("fail", "TestX"), ("run", CANARY), ("fail", CANARY))),
                         status=1, pkg=PKG, folder="pkg", index=2), *DONE],
    "empty": [],
}
BUILD_LOGS = {"example.com/m": "./a_test.go:5:2: undefined: NewThing\nFAIL\n"}
EXPECTED = {".": ["a_test.go::TestA", "b_test.go::TestB"], "pkg": ["pkg/x_test.go::TestX"]}


def test_id(folder: str, name: str) -> str:
    declared = {(".", "TestA"): "a_test.go", (".", "TestB"): "b_test.go",
                ("pkg", "TestX"): "pkg/x_test.go"}
    return id_of(declared, folder, name)


test_id.__test__ = False  # type: ignore[attr-defined]


@pytest.mark.parametrize("canary", [CANARY, None], ids=["canary", "no-canary"])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_the_reader_reads_as_parse_events(name, canary):
    text = "\n".join(STREAMS[name])
    theirs = parse_events(text, nonce=N, test_id=test_id, build_logs=BUILD_LOGS,
                          exit_code=0, duration=1.0, timed_out=False, expected=EXPECTED,
                          canary=canary)
    ours = READER.read_events(text, nonce=N, test_id=test_id, build_logs=BUILD_LOGS,
                              expected=EXPECTED, canary=canary)
    assert ours["results"] == {t: {"outcome": r.outcome.value, "duration": r.duration,
                                   "message": r.message, "timed_out": r.timed_out}
                               for t, r in theirs.results.items()}
    assert (ours["finished"], ours["problems"], ours["died_in"]) == (
        theirs.finished, list(theirs.problems), theirs.died_in)
    assert tuple(ours["collection_errors"]) == theirs.collection_errors
    assert int(ours["failed"]) == theirs.exit_code
    failed = set(READER.failed_builds(text, N))
    assert failed == ({"example.com/m"} if name == "build_failed" else set())


def test_the_streams_exercise_every_rule():
    """The parity above is not between two empty readings."""
    seen = {name: READER.read_events("\n".join(lines), nonce=N, test_id=test_id,
                                     build_logs=BUILD_LOGS, expected=EXPECTED, canary=CANARY)
            for name, lines in STREAMS.items()}
    trusted = {n for n, r in seen.items() if r["finished"] and not r["problems"]}
    assert {"pass_fail_skip", "all_pass", "forged_pass_after_fail", "events_after_end",
            "two_packages", "build_failed"} <= trusted
    for name in ("died_timeout", "died_panic"):  # no problem, but a run to resume
        assert not seen[name]["problems"] and not seen[name]["finished"], name
        assert seen[name]["died_in"] == ("b_test.go::TestB/x" if name == "died_panic"
                                         else "b_test.go::TestB")
    for name in ("exit_0_with_failure", "exit_3_without_failure", "canary_passed",
                 "canary_missing_exit_0", "forged_end_marker", "never_ended", "died_exit_0"):
        assert seen[name]["problems"], name
    assert not seen["no_done"]["finished"] and not seen["wrong_nonce_done"]["finished"]
    assert seen["died_timeout"]["results"]["b_test.go::TestB"]["timed_out"]
    assert seen["build_failed"]["results"]["a_test.go::TestA"]["outcome"] == "error"
    assert seen["two_packages"]["results"]["pkg/x_test.go::TestX/a"]["outcome"] == "failed"
    assert READER.failed_builds("\n".join(STREAMS["build_failed"]), N) == {"example.com/m": 1}


# -- the spec, the files, the command line, the lines for SWE-bench ---------------------------

def test_a_go_spec_carries_the_toolchains_plan_and_nothing_of_the_others():
    row = _go_row()
    files = grading_files(row)
    assert sorted(files) == ["grader.py", GO_REPORT_FILE, SPEC_FILE]
    spec = json.loads(files[SPEC_FILE])
    assert spec["language"] == "go" and "javascript" not in spec and not PYTHON_FIELDS & set(spec)
    assert ContainerSpec.model_validate(spec).go == go_plan()
    assert grader_args(row, "$here") == ('--spec "$here/spec.json" '
                                         '--go-report "$here/repogym_go_report.py"')
    from tests.exports.conftest import make_judged

    python = json.loads(ContainerSpec.of(TaskRow.from_judged(make_judged(0))).to_json())
    assert "go" not in python and "javascript" not in python and "runner_config" in python


def test_a_plan_of_another_language_is_refused():
    js_plan = JsPlan.model_validate({
        "runner": "mocha", "build": None, "prefix": [], "fresh": [], "command": ["mocha"],
        "command_exitfirst": ["mocha"], "env": {}, "reporters": {}, "test_timeout_ms": 1,
        "canaries": {}, "protection": go_export.protection_rules()})
    with pytest.raises(InputError, match="does not grade it"):
        ContainerSpec.of(_go_row(), plan=js_plan)
    from tests.exports.conftest import make_judged

    with pytest.raises(InputError, match="does not grade it"):
        ContainerSpec.of(TaskRow.from_judged(make_judged(0)), plan=go_plan())


def test_load_spec_checks_the_go_plan(tmp_path):
    spec = _spec()
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    assert grader.load_spec(str(path))["go"]["canary"].startswith("TestRepogymCanary")
    for broken, words in (({**spec, "go": None}, "no Go grading plan"),
                          ({**spec, "go": {"script": "x"}}, "go.command"),
                          ({k: v for k, v in spec.items() if k != "go"}, "lacks go")):
        path.write_text(json.dumps(broken))
        with pytest.raises(ValueError, match=words):
            grader.load_spec(str(path))


def test_a_go_task_needs_the_reader(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**_spec(), "anchor": str(tmp_path / "no-anchor")}))
    out = tmp_path / "out"
    missing = ["--spec", str(spec), "--out", str(out), "--go-report", str(tmp_path / "x.py")]
    assert grader.main(missing) == grader.EXIT_USAGE
    assert "--go-report" in capsys.readouterr().out
    reader = tmp_path / GO_REPORT_FILE
    reader.write_bytes(plugin_source(GO_REPORT_FILE))
    given = ["--spec", str(spec), "--out", str(out), "--go-report", str(reader)]
    assert grader.main(given) == grader.EXIT_INFRA  # past the argument checks: no anchor here
    assert (out / "reward.txt").read_text() == "0\n"
    beside = tmp_path / "beside"  # the default: the reader beside the grader
    beside.mkdir()
    (beside / "grader.py").write_bytes(Path(grader.__file__).read_bytes())
    proc = subprocess.run([sys.executable, "-I", "-S", str(beside / "grader.py"),
                           "--spec", str(spec)], capture_output=True, text=True)
    assert proc.returncode == grader.EXIT_USAGE and "no file at" in proc.stdout
    (beside / GO_REPORT_FILE).write_bytes(plugin_source(GO_REPORT_FILE))
    proc = subprocess.run([sys.executable, "-I", "-S", str(beside / "grader.py"),
                           "--spec", str(spec)], capture_output=True, text=True)
    assert proc.returncode == grader.EXIT_INFRA, proc.stdout + proc.stderr


GOTEST_LINE = r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$"  # SWE-bench's parse_log_gotest


@pytest.mark.parametrize("trusted", [True, False])
def test_lines_for_swebench_are_go_tests(trusted, capsys):
    import re

    outcomes = {"a_test.go::TestA": "passed", "a_test.go::TestA/sub_(x)": "passed",
                "b_test.go::TestB": "failed", "b_test.go::TestC": "skipped",
                "pkg/x_test.go::TestX": None}
    grader.emit({"instance_id": "x", "reward": 0.0, "trusted": trusted, "discarded": [],
                 "problems": [], "resolved": False, "outcomes": outcomes}, None, "go")
    parsed = {m.group(2): m.group(1) for line in capsys.readouterr().out.splitlines()
              if (m := re.match(GOTEST_LINE, line.strip()))}
    passed = {"a_test.go::TestA", "a_test.go::TestA/sub_(x)"} if trusted else set()
    assert parsed == {t: "PASS" if t in passed else "FAIL" for t in outcomes}


# -- exports of Go rows without Docker --------------------------------------------------------

def test_harbor_and_swebench_export_go_rows_without_docker(tmp_path):
    rows = [_go_row(0), _go_row(1, kind=CandidateKind.mined)]
    export_rows("harbor", rows, tmp_path / "h")
    task = tmp_path / "h" / rows[0].instance_id
    assert sorted(p.name for p in (task / "tests").iterdir()) == [
        "grader.py", GO_REPORT_FILE, SPEC_FILE, "test.sh"]
    assert "--go-report" in (task / "tests/test.sh").read_text()
    assert "go test ./..." in (task / "instruction.md").read_text()
    assert '"go"' in (task / "task.toml").read_text()
    export_rows("swebench", rows, tmp_path / "s")
    insts = [json.loads(x) for x in (tmp_path / "s/instances.jsonl").read_text().splitlines()]
    assert {(i["language"], i["log_parser"]) for i in insts} == {("go", "parse_log_gotest")}
    assert all("--go-report" in i["eval_script"] for i in insts)
