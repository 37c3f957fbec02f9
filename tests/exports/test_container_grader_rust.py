"""The in-container grader's Rust rules agree with repogym's Rust toolchain, rule by rule
(no Docker; the real containers are in test_rust.py):

* protection (``RustToolchain.is_protected`` and ``verify``'s exact paths and span-guarded
  files), and the test code of a source file (the plan's program's ``test_lines`` against
  ``RustToolchain.test_spans``);
* the run: the script the grader writes is, byte for byte, the one
  ``repogym.toolchains.rust.plan`` makes for the same selection, exclusion, limits, budget,
  scratch folder and nonce (and so are its command, canary, report path and cleanup);
* reading a run: the shared reader ``repogym_rust_report`` (loaded by path, as the grader
  loads it) against the toolchain's ``parse_report``, on reports of every kind;
* the spec, the grading files and the command line, the SWE-bench lines, and the exports
  of Rust rows (no Docker: a Rust plan needs none).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from repogym.datasets.exports import container_grader as grader
from repogym.datasets.exports import export_rows
from repogym.datasets.exports.grading import (
    PYTHON_FIELDS,
    RUST_REPORT_FILE,
    SPEC_FILE,
    ContainerSpec,
    RustPlan,
    go_plan,
    grader_args,
    grading_files,
    plugin_source,
    rust_plan,
)
from repogym.datasets.verify import spec_of
from repogym.errors import InputError
from repogym.grading import protected_paths as verify_protected
from repogym.grading import span_guarded_paths
from repogym.patches import unified_diff
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Candidate, CandidateKind, Judged, TimeLimits, Verdict
from repogym.toolchains.plugins import repogym_rust_report
from repogym.toolchains.rust import RustToolchain, plan
from repogym.toolchains.rust import export as rust_export
from repogym.toolchains.rust.report import parse_report
from repogym.toolchains.rust.runner import command

TC = RustToolchain()
N = "0123456789abcdef" * 2
READER = grader.load_rust_report(str(Path(repogym_rust_report.__file__)))
PROGRAM = grader.rust_program(rust_plan().model_dump(mode="json"))
LIB = "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n" \
      "    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n"


def _rust_row(i: int = 0, *, limits: TimeLimits | None = None) -> TaskRow:
    """A judged Rust task shaped like the pipeline's: its failing test a unit test in the
    file the fix goes in, one passing test in an integration test file."""
    bug = unified_diff("src/lib.rs", LIB, LIB.replace("a + b", "a - b"))
    cand = Candidate(kind=CandidateKind.synthetic, repo="acme__calc", language="rust",
                     base_commit=(f"{i:x}" * 40)[:40], bug_patch=bug,
                     gold_patch=unified_diff("src/lib.rs", LIB.replace("a + b", "a - b"), LIB),
                     generator="procedural", mutator="rs_swap", files=("src/lib.rs",))
    verdict = Verdict(instance_id=cand.instance_id, status="accept",
                      fail_to_pass=("src/lib.rs::tests::adds",),
                      pass_to_pass=("tests/api.rs::works",), time_limits=limits,
                      evidence={}, seconds=1.0)
    return TaskRow.from_judged(Judged(candidate=cand, verdict=verdict,
                                      statement="add subtracts", image="repogym-env/calc:1"))


def _spec(row: TaskRow | None = None) -> dict[str, Any]:
    return json.loads(ContainerSpec.of(row or _rust_row()).to_json())


# -- the reader is stdlib only; the constants are the export's ----------------------------------

def test_the_reader_imports_only_the_stdlib():
    tree = ast.parse(Path(repogym_rust_report.__file__).read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


def test_constants_match_the_export():
    assert grader.RUST_REPORT_FILE == RUST_REPORT_FILE
    assert plugin_source(RUST_REPORT_FILE) == Path(repogym_rust_report.__file__).read_bytes()
    assert (grader.RS_SCRATCH, grader.RS_PAYLOAD, grader.RS_SCRIPT) == (
        rust_export.SCRATCH, rust_export.PAYLOAD, rust_export.SCRIPT)
    assert set(grader.RUST_PLAN_REQUIRED) == set(RustPlan.model_fields)
    assert RustPlan.model_validate(rust_export.grading_plan()) == rust_plan()


# -- protection -----------------------------------------------------------------------------

PATHS = [
    "src/lib.rs", "src/parser.rs", "tests/api.rs", "tests/common/mod.rs", "src/tests.rs",
    "src/parse_test.rs", "src/parse_tests.rs", "src/testing.rs", "src/tests/x.rs",
    "testdata/a.txt", "test_data/b", "benches/b.rs", "Cargo.toml", "sub/Cargo.toml",
    "Cargo.lock", "Cargo.toml.orig", "rust-toolchain", "rust-toolchain.toml", "build.rs",
    "sub/build.rs", "src/build.rs", "a/src/b/build.rs", "srcx/build.rs", "build.rs.bak",
    ".cargo/config", ".cargo/config.toml", "sub/.cargo/config.toml", ".cargo/other.toml",
    "cargo/config", "README.md", "examples/x.rs", "tests", "Cargo.toml\n", "a\nbuild.rs",
]


@pytest.mark.parametrize("added", [False, True], ids=["modified", "added"])
@pytest.mark.parametrize("path", PATHS)
def test_is_protected_matches_the_toolchain_and_verify(path, added):
    rules = rust_export.protection_rules()
    assert grader.protected_by_rules(path, rules) == TC.is_protected(path, added=added)
    row = _rust_row()
    expected = path in verify_protected(spec_of(row)) or TC.is_protected(path, added=added)
    assert grader.is_protected(path, _spec(row), added) == expected


def test_a_unit_tests_file_is_guarded_by_its_test_code_only():
    spec = _spec()
    assert spec["span_guarded"] == sorted(span_guarded_paths(spec_of(_rust_row())))
    assert spec["span_guarded"] == ["src/lib.rs"] and "src/lib.rs" not in spec["protected"]
    assert "tests/api.rs" in spec["protected"]


TEXTS = [LIB, "#![cfg(test)]\nfn a() {}\n", "fn a() {}\n", "// #[test]\nfn a() {}\n",
         "#[test]\nfn t() {\n    let s = \"}\";\n}\nfn b() {}\n",
         "mod a {\n    #[cfg(all(test, unix))]\n    mod t {\n    }\n}\n"]


@pytest.mark.parametrize("text", TEXTS)
def test_the_programs_test_lines_are_the_toolchains_test_spans(text):
    assert PROGRAM.test_lines(text) == TC.test_spans("src/lib.rs", text)


def test_test_code_changes_are_told_from_code_changes():
    fixed = LIB.replace("a + b", "b + a")
    edited = LIB.replace("#[test]", "#[test]\n    #[ignore]")
    assert grader._test_code(PROGRAM.test_lines, LIB) == grader._test_code(
        PROGRAM.test_lines, fixed)
    assert grader._test_code(PROGRAM.test_lines, LIB) != grader._test_code(
        PROGRAM.test_lines, edited)


# -- the run: the grader's script is the toolchain's ---------------------------------------------

SELECTIONS = [(["src/lib.rs::tests::adds"], []),
              (["src/lib.rs::tests::adds", "tests/api.rs::works", "tests/api.rs::works"],
               ["src/lib.rs::tests::other"]),
              (["tests/api.rs"], []), (["src/lib.rs::a b", "x.rs::\"q\""], ["y.rs::z"])]
LIMITS = [None, TimeLimits(tests={"src/lib.rs::tests::adds": 3.0}, default=2.0, run=100.0),
          TimeLimits(run=50.0), TimeLimits(default=1.0, run=1000.0)]


@pytest.mark.parametrize("limits", LIMITS, ids=["none", "per-test", "no-default", "capped"])
@pytest.mark.parametrize("select, exclude", SELECTIONS)
def test_the_filled_script_is_the_toolchains(select, exclude, limits):
    scratch, budget = "/var/tmp/rg-k2j_x9/run", 300.0
    theirs = plan(select, exclude, limits or TimeLimits(), nonce=N, scratch=scratch,
                  budget=budget, canary=True)
    data = rust_plan().model_dump(mode="json")
    canary = grader.fill(data["canary"], N, {})
    assert canary == theirs.canary_name
    spec_limits = json.loads((limits or TimeLimits()).model_dump_json())
    payload = grader.rust_payload(data, N, scratch, select, exclude, spec_limits, budget,
                                  canary)
    assert payload == theirs.payload()
    assert grader.rust_script(data, payload) == theirs.script()
    script = "/var/tmp/rg-1/run-2.py"
    assert grader.fill(data["command"], N, {grader.RS_SCRIPT: script}) == command(script)
    assert grader.fill(data["cleanup"], N, {grader.RS_SCRATCH: scratch}) == theirs.cleanup()
    assert payload["report"] == theirs.report


def test_the_script_takes_only_a_scratch_folder_the_shell_takes_as_it_is():
    data = rust_plan().model_dump(mode="json")
    for scratch in ("/var/tmp/a b", "/var/tmp/$(x)", "/var/tmp/x;y"):
        payload = grader.rust_payload(data, N, scratch, ["a.rs::t"], [],
                                      json.loads(TimeLimits().model_dump_json()), 10.0, "c")
        with pytest.raises(grader.GraderError):
            grader.rust_script(data, payload)


def test_the_template_refuses_a_script_that_does_not_hold_its_plan_once(monkeypatch):
    from repogym.toolchains import rust

    monkeypatch.setattr(rust.RustRun, "script", lambda self: "main(None)\n")
    with pytest.raises(ValueError, match="plan once"):
        rust_export.script_template()


# -- reading a run: the shared reader and the toolchain's parse_report --------------------------

def mark(action: str, nonce: str = N, **fields: object) -> str:
    return json.dumps({"repogym": action, "nonce": nonce, **fields})


def ev(event: str, name: str, **fields: object) -> str:
    return json.dumps({"type": "test", "event": event, "name": name, **fields})


LIB_KEY, API_KEY = "calc/lib/calc", "calc/test/api"
TARGETS = [mark("build", status=0, log=""),
           mark("target", key=LIB_KEY, root="src/lib.rs",
                mods={"": "src/lib.rs", "parser": "src/parser.rs"}, harness=True, canary=True,
                built=True, errors=""),
           mark("target", key=API_KEY, root="tests/api.rs", mods={"": "tests/api.rs"},
                harness=True, canary=True, built=True, errors="")]
CANARY = "zzzz_repogym_canary_" + N[:16]
CANARY_FAILS = (ev("started", CANARY), ev("failed", CANARY, stdout="repogym canary"))
DONE = [mark("done")]


def binary(key: str, *events: str, status: int | None = 101, killed: bool = False
           ) -> list[str]:
    end = [] if status is None else [mark("end", key=key, status=status, killed=killed)]
    return [mark("binary", key=key, timeout=10.0), *events, *end]


STREAMS = {
    "pass_fail_skip": TARGETS + binary(
        LIB_KEY, ev("started", "tests::adds"), ev("ok", "tests::adds", exec_time=0.01),
        ev("started", "parser::tests::bad"), ev("failed", "parser::tests::bad",
                                                stdout="assertion failed", exec_time=0.2),
        ev("ignored", "tests::slow"), *CANARY_FAILS) + binary(
        API_KEY, ev("started", "works"), ev("ok", "works"), *CANARY_FAILS) + DONE,
    "forged_pass_after_fail": TARGETS + binary(
        LIB_KEY, ev("started", "tests::adds"), ev("failed", "tests::adds"),
        ev("ok", "tests::adds"), *CANARY_FAILS) + DONE,
    "canary_passes": TARGETS + binary(
        LIB_KEY, ev("started", "tests::adds"), ev("ok", "tests::adds"),
        ev("started", CANARY), ev("ok", CANARY), status=0) + DONE,
    "canary_missing_exit_0": TARGETS + binary(
        LIB_KEY, ev("ok", "tests::adds"), status=0) + DONE,
    "foreign_marker": TARGETS + [mark("done", nonce="f" * 32)],
    "died_in_a_test": TARGETS + binary(
        LIB_KEY, ev("started", "tests::adds"), "thread panicked: stack overflow",
        status=134) + DONE,
    "killed_at_limit": TARGETS + binary(
        LIB_KEY, ev("started", "tests::adds"), status=137, killed=True) + DONE,
    "exit_0_mid_test": TARGETS + binary(LIB_KEY, ev("started", "tests::adds"), status=0) + DONE,
    "never_ended": TARGETS + binary(LIB_KEY, ev("started", "tests::adds"), status=None),
    "build_failed": [mark("build", status=101, log="error[E0308]: mismatched types"),
                     mark("target", key=LIB_KEY, root="src/lib.rs", mods={"": "src/lib.rs"},
                          harness=True, canary=True, built=False, errors="error: bad")] + DONE,
    "survey_failed": [mark("build", status=101, log="error: no Cargo.toml", survey=True)] + DONE,
    "harnessless": [mark("target", key="calc/test/h", root="tests/h.rs",
                         mods={"": "tests/h.rs"}, harness=False, canary=False, built=True)]
    + binary("calc/test/h", "some output", status=1) + DONE,
    "exit_1_no_failure": TARGETS + binary(LIB_KEY, ev("ok", "tests::adds"), status=1) + DONE,
}
EXPECTED = ("src/lib.rs::tests::adds", "tests/api.rs::works")


@pytest.mark.parametrize("canary", [CANARY, None], ids=["canary", "no-canary"])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_the_reader_reads_as_parse_report(name, canary):
    text = "\n".join(STREAMS[name]) + "\n"
    theirs = parse_report(text, nonce=N, exit_code=0, duration=1.0, timed_out=False,
                          expected=EXPECTED, canary=canary)
    ours = READER.read_report(text, nonce=N, file_of=PROGRAM.file_of, expected=EXPECTED,
                              canary=canary)
    assert {t: (r["outcome"], r["timed_out"], r["message"], r["duration"])
            for t, r in ours["results"].items()} == {
        t: (r.outcome.value, r.timed_out, r.message, r.duration)
        for t, r in theirs.results.items()}
    assert (ours["finished"], tuple(ours["problems"]), ours["died_in"]) == (
        theirs.finished, theirs.problems, theirs.died_in)
    assert tuple(ours["collection_errors"]) == theirs.collection_errors


def test_the_streams_exercise_every_rule():
    def read(name: str) -> Any:
        return READER.read_report("\n".join(STREAMS[name]), nonce=N, file_of=PROGRAM.file_of,
                                  expected=EXPECTED, canary=CANARY)

    assert read("pass_fail_skip")["results"]["src/parser.rs::parser::tests::bad"][
        "outcome"] == "failed"
    assert read("pass_fail_skip")["problems"] == []
    assert read("forged_pass_after_fail")["results"]["src/lib.rs::tests::adds"][
        "outcome"] == "failed"
    assert any("tampered" in p for p in read("canary_passes")["problems"])
    assert any("tampered" in p for p in read("canary_missing_exit_0")["problems"])
    assert not read("foreign_marker")["finished"]
    assert read("died_in_a_test")["died_in"] == "src/lib.rs::tests::adds"
    assert read("killed_at_limit")["results"]["src/lib.rs::tests::adds"]["timed_out"]
    assert any("exited 0" in p for p in read("exit_0_mid_test")["problems"])
    assert any("never ended" in p for p in read("never_ended")["problems"])
    assert read("build_failed")["results"]["src/lib.rs::tests::adds"]["outcome"] == "error"
    assert {r["outcome"] for r in read("survey_failed")["results"].values()} == {"error"}
    assert read("harnessless")["results"]["tests/h.rs::main"]["outcome"] == "failed"
    assert any("no failing test" in p for p in read("exit_1_no_failure")["problems"])


# -- the spec, the files, the command line, the lines for SWE-bench ---------------------------

def test_a_rust_spec_carries_the_toolchains_plan_and_nothing_of_the_others():
    row = _rust_row()
    files = grading_files(row)
    assert sorted(files) == ["grader.py", RUST_REPORT_FILE, SPEC_FILE]
    spec = json.loads(files[SPEC_FILE])
    assert spec["language"] == "rust" and "go" not in spec and "javascript" not in spec
    assert not PYTHON_FIELDS & set(spec)
    assert ContainerSpec.model_validate(spec).rust == rust_plan()
    assert grader_args(row, "$here") == ('--spec "$here/spec.json" '
                                         '--rust-report "$here/repogym_rust_report.py"')
    with pytest.raises(InputError, match="does not grade it"):
        ContainerSpec.of(row, plan=go_plan())


def test_load_spec_checks_the_rust_plan(tmp_path):
    spec = _spec()
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    assert grader.load_spec(str(path))["rust"]["canary"].startswith("zzzz_repogym_canary_")
    for broken, words in (({**spec, "rust": None}, "no Rust grading plan"),
                          ({**spec, "rust": {"script": "x"}}, "rust.payload"),
                          ({k: v for k, v in spec.items() if k != "rust"}, "lacks rust")):
        path.write_text(json.dumps(broken))
        with pytest.raises(ValueError, match=words):
            grader.load_spec(str(path))


def test_a_rust_task_needs_the_reader(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**_spec(), "anchor": str(tmp_path / "no-anchor")}))
    out = tmp_path / "out"
    missing = ["--spec", str(spec), "--out", str(out), "--rust-report", str(tmp_path / "x.py")]
    assert grader.main(missing) == grader.EXIT_USAGE
    assert "--rust-report" in capsys.readouterr().out
    reader = tmp_path / RUST_REPORT_FILE
    reader.write_bytes(plugin_source(RUST_REPORT_FILE))
    given = ["--spec", str(spec), "--out", str(out), "--rust-report", str(reader)]
    assert grader.main(given) == grader.EXIT_INFRA  # past the argument checks: no anchor here
    assert (out / "reward.txt").read_text() == "0\n"


CARGO_LINE = r"^test\s+(\S+)\s+\.\.\.\s+(\w+)$"  # SWE-bench's parse_log_cargo


@pytest.mark.parametrize("trusted", [True, False])
def test_lines_for_swebench_are_libtests(trusted, capsys):
    outcomes = {"src/lib.rs::tests::adds": "passed", "tests/api.rs::works": "passed",
                "src/lib.rs::tests::bad": "failed", "src/lib.rs::tests::slow": "skipped",
                "tests/api.rs::gone": None}
    grader.emit({"instance_id": "x", "reward": 0.0, "trusted": trusted, "discarded": [],
                 "problems": [], "resolved": False, "outcomes": outcomes}, None, "rust")
    parsed = {m.group(1): m.group(2) for line in capsys.readouterr().out.splitlines()
              if (m := re.match(CARGO_LINE, line.strip()))}
    passed = {"src/lib.rs::tests::adds", "tests/api.rs::works"} if trusted else set()
    assert parsed == {t: "ok" if t in passed else "FAILED" for t in outcomes}


def test_harbor_and_swebench_export_rust_rows_without_docker(tmp_path):
    rows = [_rust_row(0), _rust_row(1)]
    export_rows("harbor", rows, tmp_path / "h")
    task = tmp_path / "h" / rows[0].instance_id
    assert sorted(p.name for p in (task / "tests").iterdir()) == [
        "grader.py", RUST_REPORT_FILE, SPEC_FILE, "test.sh"]
    assert "--rust-report" in (task / "tests/test.sh").read_text()
    assert "cargo test" in (task / "instruction.md").read_text()
    export_rows("swebench", rows, tmp_path / "s")
    insts = [json.loads(x) for x in (tmp_path / "s/instances.jsonl").read_text().splitlines()]
    assert {(i["language"], i["log_parser"]) for i in insts} == {("rust", "parse_log_cargo")}
    assert all("--rust-report" in i["eval_script"] for i in insts)


# -- span-guarded files on a real git repository (no container needed) --------------------------

def _git(cwd: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


BROKEN = LIB.replace("a + b", "a - b")


@pytest.fixture
def prepared(tmp_path: Path) -> tuple[Path, dict[str, Any], Path]:
    """The broken state of a crate whose failing test sits in ``src/lib.rs``, with its
    read-only anchor, as PREPARE_SCRIPT leaves them."""
    import shutil
    import subprocess

    repo, anchor = tmp_path / "repo", tmp_path / "anchor"
    for rel, text in {"src/lib.rs": BROKEN, "src/other.rs": "pub fn x() {}\n",
                      "Cargo.toml": "[package]\nname = \"calc\"\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "task")
    anchor.mkdir()
    shutil.copytree(repo / ".git", anchor / "task.git")
    (anchor / "commit").write_text(subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo,
                                                  capture_output=True, text=True).stdout)
    spec = {**_spec(), "repo_dir": str(repo), "anchor": str(anchor)}
    (tmp_path / "scratch").mkdir()
    return repo, spec, tmp_path / "scratch"


def test_a_fix_next_to_the_tests_is_kept_and_a_test_edit_restores_the_file(prepared):
    repo, spec, scratch = prepared
    (repo / "src/lib.rs").write_text(LIB)  # the fix, in the file that holds the test
    assert grader.prepare_tree(spec, None, str(scratch), PROGRAM.test_lines) == (None, [])
    assert (repo / "src/lib.rs").read_text() == LIB
    (repo / "src/lib.rs").write_text(LIB.replace("#[test]", "#[test]\n    #[ignore]"))
    (repo / "Cargo.toml").write_text("[package]\nname = \"calc\"\n[lib]\ntest = false\n")
    problem, discarded = grader.prepare_tree(spec, None, str(scratch), PROGRAM.test_lines)
    assert problem is None and sorted(discarded) == ["Cargo.toml", "src/lib.rs"]
    assert (repo / "src/lib.rs").read_text() == BROKEN
    with pytest.raises(grader.GraderError, match="no reader"):
        grader.prepare_tree(spec, None, str(scratch))


def test_a_patch_that_breaks_the_test_patchs_context_scores_zero(prepared):
    """``grade_in``'s rule: a test patch that adds tests to a span-guarded file no longer
    applying after the candidate changed the lines next to them is the candidate's doing."""
    repo, spec, scratch = prepared
    grown = BROKEN.replace("    a - b\n}\n", "    a - b\n}\n#[cfg(test)]\nfn helper() {}\n")
    test_patch = unified_diff("src/lib.rs", BROKEN, grown)
    spec = {**spec, "test_patch": test_patch, "span_guarded": ["src/lib.rs"]}
    (repo / "src/lib.rs").write_text(BROKEN.replace("    a - b\n}\n", "    a + b\n} // ok\n"))
    problem, _ = grader.prepare_tree(spec, None, str(scratch), PROGRAM.test_lines)
    assert problem == "patch does not apply"
    (repo / "src/lib.rs").write_text(BROKEN)
    (repo / "src/other.rs").write_text("pub fn x() { }\n")  # elsewhere: the test patch applies
    assert grader.prepare_tree(spec, None, str(scratch), PROGRAM.test_lines) == (None, [])
    assert (repo / "src/lib.rs").read_text() == grown
