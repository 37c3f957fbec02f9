"""The Go toolchain's pure parts: test files and protection, module paths of module-less
repositories, run plans, and reading test2json events against the binaries' exit codes."""

from __future__ import annotations

import json
import subprocess

from repogym.schemas.records import Outcome, TimeLimits
from repogym.toolchains import GoToolchain, detect_toolchain
from repogym.toolchains.go import id_of, plan, split_id
from repogym.toolchains.go.project import GoProject
from repogym.toolchains.go.report import parse_events
from tests.conftest import commit_files

N = "ab" * 16


def marker(action: str, nonce: str = N, **fields: object) -> str:
    return json.dumps({"Action": f"repogym-{action}", "Nonce": nonce, **fields})


def event(action: str, test: str | None = None, pkg: str = "example.com/m",
          **fields: object) -> str:
    body: dict[str, object] = {"Action": action, "Package": pkg, **fields}
    if test:
        body["Test"] = test
    return json.dumps(body)


def read(lines: list[str], **kw: object):
    declared = {(".", "TestA"): "a_test.go", (".", "TestB"): "b_test.go"}
    return parse_events("\n".join(lines), nonce=N, build_logs=kw.pop("logs", {}),  # type: ignore[arg-type]
                        test_id=lambda folder, name: id_of(declared, folder, name),
                        exit_code=0, duration=1.0, timed_out=False, **kw)  # type: ignore[arg-type]


def section(*events: str, status: int = 0) -> list[str]:
    return [marker("package", Package="example.com/m", Dir=".", Index=1), *events,
            marker("end", Package="example.com/m", Status=status)]


def test_files_and_protection() -> None:
    tc = GoToolchain()
    assert tc.is_test_file("x_test.go") and tc.is_test_file("pkg/testdata/in.txt")
    assert not tc.is_test_file("x.go")
    assert tc.is_runtime_source("pkg/x.go") and not tc.is_runtime_source("x_test.go")
    assert not tc.is_runtime_source("vendor/a/b.go") and not tc.is_runtime_source("docs/x.go")
    # files built only for another system: a bug there no test in the environment sees
    assert not tc.is_runtime_source("sys_windows.go") and not tc.is_runtime_source("a_js_wasm.go")
    assert not tc.is_runtime_source("asm_arm64.go") and not tc.is_runtime_source("x_linux_386.go")
    assert tc.is_runtime_source("sys_linux.go") and tc.is_runtime_source("x_linux_amd64.go")
    assert tc.is_runtime_source("null_time.go") and tc.is_runtime_source("json_test_helper.go")
    for path in ("go.mod", "go.sum", "go.work", "sub/go.work.sum", "vendor/modules.txt",
                 "a_test.go"):
        assert tc.is_protected(path), path
    assert not tc.is_protected("a.go")


def test_ids_name_the_declaring_file_and_round_trip() -> None:
    declared = {("pkg", "TestX"): "pkg/x_test.go"}
    tid = id_of(declared, "pkg", "TestX/case_1")
    assert tid == "pkg/x_test.go::TestX/case_1"
    assert split_id(tid) == ("pkg", "TestX", "TestX/case_1")
    assert GoToolchain().test_file(tid) == "pkg/x_test.go"
    assert split_id("a_test.go::TestA") == (".", "TestA", "TestA")


def test_plan_selects_top_level_tests_per_folder_with_time_limits() -> None:
    limits = TimeLimits(default=2.0, tests={"pkg/x_test.go::TestSlow": 30.0}, run=100.0)
    run = plan(["a_test.go::TestA/sub", "pkg/x_test.go::TestSlow", "pkg/y_test.go::TestY"],
               ["pkg/x_test.go::TestGone"], limits, nonce=N, scratch="/var/tmp/s")
    assert run.dirs == (".", "pkg")
    assert run.run == {".": "^(TestA)$", "pkg": "^(TestSlow|TestY)$"}
    assert run.skip == {"pkg": "^(TestGone)$"}
    assert run.timeouts == {".": 10.0, "pkg": 33.0}  # floor 10 s; 30 + 2 + grace 1
    everything = plan(None, (), None, nonce=N, scratch="/var/tmp/s")
    assert everything.dirs is None and "./..." in everything.script()
    assert N in everything.script() and N not in everything.command("/var/tmp/run.sh")


def test_events_become_outcomes_with_messages() -> None:
    run = read(section(
        event("run", "TestA"), event("output", "TestA", Output="=== RUN   TestA\n"),
        event("output", "TestA", Output="    a_test.go:9: got 1, want 2\n"),
        event("fail", "TestA", Elapsed=0.5), event("run", "TestB"), event("run", "TestB/x"),
        event("pass", "TestB/x"), event("skip", "TestB"), status=1) + [marker("done")])
    assert run.trusted, run.problems
    assert {t: r.outcome for t, r in run.results.items()} == {
        "a_test.go::TestA": Outcome.failed, "b_test.go::TestB/x": Outcome.passed,
        "b_test.go::TestB": Outcome.skipped}
    assert run.results["a_test.go::TestA"].message == "a_test.go:9: got 1, want 2"
    assert run.results["a_test.go::TestA"].duration == 0.5


def test_a_forged_pass_never_hides_a_failure_and_exit_codes_are_checked() -> None:
    forged = read(section(event("run", "TestA"), event("fail", "TestA"),
                          event("pass", "TestA"), status=1) + [marker("done")])
    assert forged.outcome("a_test.go::TestA") is Outcome.failed and forged.trusted
    exited_zero = read(section(event("run", "TestA"), event("fail", "TestA"), status=0)
                       + [marker("done")])
    assert not exited_zero.trusted and "exited 0" in exited_zero.problems[0]
    silent = read(section(event("run", "TestA"), event("pass", "TestA"), status=3)
                  + [marker("done")])
    assert not silent.trusted and "exited 3" in silent.problems[0]
    wrong_nonce = read(section(event("run", "TestA"), event("pass", "TestA"))
                       + [marker("done", nonce="cd" * 16)])
    assert not wrong_nonce.finished and wrong_nonce.problems


def test_a_test_left_running_when_its_binary_died_fails_and_is_named() -> None:
    run = read(section(event("run", "TestA"), event("pass", "TestA"), event("run", "TestB"),
                       event("output", None, Output="panic: test timed out after 10s\n"),
                       status=2) + [marker("done")])
    assert run.died_in == "b_test.go::TestB"
    result = run.results["b_test.go::TestB"]
    assert result.outcome is Outcome.failed and result.timed_out
    assert "timed out" in result.message


def test_tests_beside_a_panic_have_no_outcome_so_they_run_again() -> None:
    """mitchellh/mapstructure's "Fix panic potential with #103": the bug panics in one
    parallel test, the binary dies, and the tests paused beside it (and its other
    subtests) never ended. Only the test that panicked fails; the others are left for the
    resumed run, and the run is not finished until then."""
    run = read(section(
        event("run", "TestA"), event("pause", "TestA"), event("run", "TestB"),
        event("run", "TestB/one"), event("pass", "TestB/one"), event("run", "TestB/two"),
        event("run", "TestB/three"), event("pause", "TestB/three"),
        event("cont", "TestA"), event("pause", "TestA"),
        event("output", "TestB/two", Output="panic: reflect: call of Index on map Value\n"),
        status=2) + [marker("done")])
    assert run.died_in == "b_test.go::TestB/two" and not run.finished
    assert {t: r.outcome for t, r in run.results.items()} == {
        "b_test.go::TestB/one": Outcome.passed, "b_test.go::TestB/two": Outcome.failed,
        "b_test.go::TestB": Outcome.failed}
    assert "panic: reflect" in run.results["b_test.go::TestB/two"].message
    assert not run.problems


def test_a_package_that_does_not_build_errors_its_asked_tests() -> None:
    lines = [marker("package", Package="example.com/m", Dir=".", Index=1),
             marker("build", Package="example.com/m", Status=1), marker("done")]
    run = read(lines, logs={"example.com/m": "./a_test.go:5:2: undefined: NewThing\n"},
               expected={".": ["a_test.go::TestA"]})
    assert run.outcome("a_test.go::TestA") is Outcome.error
    assert "undefined: NewThing" in run.results["a_test.go::TestA"].message
    assert run.collection_errors and run.finished


def test_a_binary_that_exits_before_any_test_errors_its_package() -> None:
    """cespare/xxhash's TestMain exits 1 when it cannot build a plugin: the package's tests
    are errors (a collection error), not the whole run tampered. Exiting 0 that way is."""
    canary = "TestRepogymCanary" + N[:16]
    exits = section(event("output", None, Output="go: cannot build plugin\n"),
                    event("output", None, Output="FAIL\texample.com/m\t0.01s\n"), status=1)
    run = read(exits + [marker("done")], canary=canary, expected={".": ["a_test.go::TestA"]})
    assert run.trusted and run.finished, run.problems
    assert run.outcome("a_test.go::TestA") is Outcome.error
    assert "cannot build plugin" in run.results["a_test.go::TestA"].message
    assert run.collection_errors == (
        ".: the test binary exited 1 before any test ran: go: cannot build plugin | "
        "FAIL\texample.com/m\t0.01s",)
    quiet = read(section(event("output", None, Output="ok\n"), status=0) + [marker("done")],
                 canary=canary)
    assert not quiet.trusted and "tampered" in quiet.problems[0]


def test_module_less_repositories_get_the_import_path_their_files_use(tmp_path) -> None:
    commit_files(tmp_path / "errors", {
        "errors.go": 'package errors // import "github.com/pkg/errors"\n',
        "errors_test.go": "package errors\n"})
    project = GoProject.read(tmp_path / "errors")
    assert project is not None and not project.declared
    assert project.module == "github.com/pkg/errors"
    assert any("go mod init github.com/pkg/errors" in s for s in project.install_steps())
    commit_files(tmp_path / "kballard_go-shellquote", {
        "quote.go": "package shellquote\n", "quote_test.go": "package shellquote\n",
        "README": 'PACKAGE\n\n    import "github.com/kballard/go-shellquote"\n'})
    assert GoProject.read(tmp_path / "kballard_go-shellquote").module == \
        "github.com/kballard/go-shellquote"  # type: ignore[union-attr]


def test_detection_prefers_the_language_with_the_tests(tmp_path) -> None:
    commit_files(tmp_path / "m", {"go.mod": "module example.com/m\n\ngo 1.22\n",
                                  "m.go": "package m\n", "m_test.go": "package m\n",
                                  "a_test.go": "package m\n"})
    assert isinstance(detect_toolchain(tmp_path / "m"), GoToolchain)
    commit_files(tmp_path / "lib", {"go.mod": "module example.com/lib\n", "lib.go": "package lib\n"})
    assert GoProject.read(tmp_path / "lib") is None
    assert subprocess.run(["git", "-C", str(tmp_path / "m"), "status", "--short"],
                          capture_output=True, text=True).stdout == ""




def test_the_canary_must_fail_in_a_binary_that_does_not_exit_0() -> None:
    canary = "TestRepogymCanary" + N[:16]
    ok = read(section(event("run", "TestA"), event("pass", "TestA"), event("run", canary),
                      event("fail", canary), status=1) + [marker("done")], canary=canary)
    assert ok.trusted, ok.problems
    assert set(ok.results) == {"a_test.go::TestA"}
    forged = read(section(event("run", "TestA"), event("pass", "TestA"), status=0)
                  + [marker("done")], canary=canary)
    assert not forged.trusted and "tampered" in forged.problems[0]
    run = plan(["a_test.go::TestA"], (), None, nonce=N, scratch="/var/tmp/s", canary=True)
    assert run.run == {".": f"^(TestA|{canary})$"} and canary in run.script()


def test_coverage_profiles_map_lines_to_each_test_and_its_subtests() -> None:
    from repogym.toolchains.go.coverage import HEADER, parse_cover

    declared = {(".", "TestA"): "a_test.go", ("sub", "TestS"): "sub/s_test.go"}
    text = "\n".join([
        f"{HEADER} module example.com/m",
        f"{HEADER} test . TestA",
        json.dumps({"Action": "run", "Test": "TestA"}),
        json.dumps({"Action": "run", "Test": "TestA/case"}),
        "example.com/m/a.go:3.20,5.2 2 1",
        "example.com/other/x.go:1.1,2.2 1 1",  # another module's code: not the project's
        f"{HEADER} test sub TestS",
        json.dumps({"Action": "run", "Test": "TestS"}),
        "example.com/m/a.go:5.1,5.9 1 1",
        "example.com/m/sub/s.go:10.1,10.9 1 0",  # not executed
    ])
    cov = parse_cover(text, lambda folder, name: id_of(declared, folder, name))
    assert cov is not None
    assert cov.files == {"a.go": {3: ("a_test.go::TestA", "a_test.go::TestA/case"),
                                  4: ("a_test.go::TestA", "a_test.go::TestA/case"),
                                  5: ("a_test.go::TestA", "a_test.go::TestA/case",
                                      "sub/s_test.go::TestS")}}
    assert parse_cover(f"{HEADER} module example.com/m\n", lambda f, n: n) is None


def test_a_bare_test_file_selects_its_tests_or_its_whole_folder() -> None:
    from repogym.toolchains.go import by_file

    declared = {(".", "TestA"): "a_test.go", (".", "TestB"): "a_test.go",
                (".", "TestC"): "c_test.go"}
    assert by_file(["a_test.go", "c_test.go::TestC"], declared) == [
        "a_test.go::TestA", "a_test.go::TestB", "c_test.go::TestC"]
    assert by_file(["pkg/new_test.go"], declared) == ["pkg/new_test.go"]
    run = plan(["pkg/new_test.go", "a_test.go::TestA"], (), None, nonce=N,
               scratch="/var/tmp/s")
    assert run.dirs == (".", "pkg") and run.run == {".": "^(TestA)$"}  # pkg runs whole


def test_package_level_lines_are_import_lines(tmp_path) -> None:
    """Initialisers of package-level variables run for every test and have no coverage
    block: the awk of the coverage script finds them (run here on a file)."""
    from repogym.toolchains.go.coverage import _PACKAGE_LEVEL, HEADER, parse_cover

    (tmp_path / "x.go").write_text(
        "package x\n\nvar (\n\tA = f()\n)\n\n// doc\nfunc f() int {\n\treturn 1\n}\n\n"
        "func g(\n\ta int,\n) int { return a }\n\nvar B = map[string]int{\n\t\"a\": 1,\n}\n")
    out = subprocess.run(["awk", _PACKAGE_LEVEL, "x.go"], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    text = f"{HEADER} module example.com/x\n{HEADER} test . TestA\n" + out
    cov = parse_cover(text, lambda folder, name: f"a_test.go::{name}")
    assert cov is not None
    assert cov.import_lines == {"x.go": (1, 3, 4, 5, 16, 17, 18)}
    assert cov.tests_for({"x.go": [4]}) is None  # every test


def test_failure_messages_read_the_go_way() -> None:
    from repogym.toolchains.go.failures import read_failure

    src = {"a_test.go": "package a\n\nfunc TestA(t *testing.T) {\n"
                        "\tif got := Double(2); got != 4 {\n"
                        "\t\tt.Errorf(\"bad: %v\", Double(2))\n\t}\n}\n"}
    r = read_failure("a_test.go:9: Parse(\"x\") = 5, want 7", "a_test.go", {})
    assert (r.call, r.actual, r.expected) == ('Parse("x")', "5", "7")
    r = read_failure("a_test.go:5: got 3, want 4", "a_test.go", src)
    assert (r.call, r.actual, r.expected) == ("Double(2)", "3", "4")
    r = read_failure("    a_test.go:5: expected 4, got 3", "a_test.go", src)
    assert (r.actual, r.expected) == ("3", "4")
    r = read_failure("Error Trace: a_test.go:5\nError: Not equal:\n"
                     "            \texpected: 4\n            \tactual  : 3", "a_test.go", src)
    assert (r.actual, r.expected) == ("3", "4")
    r = read_failure("panic: runtime error: index out of range [3] with length 2 "
                     "[recovered]\n\tpanic: ...", "a_test.go", src)
    assert r.raises == "panic: runtime error: index out of range [3] with length 2"
    assert read_failure("panic: test timed out after 10s", "a_test.go", src).hangs
    assert read_failure("a_test.go:5: something broke", "a_test.go", src).note == \
        "the test reports: something broke"


def test_a_failure_note_is_a_line_that_says_something() -> None:
    """BurntSushi/toml's statements said "The test reports: <nil>." and "got:." (a value on
    the next line), and a line cut in the middle by the message's length limit
    ("able/nest.toml\":")."""
    from repogym.toolchains.go.failures import read_failure
    from repogym.toolchains.plugins.repogym_go_report import MESSAGE_CHARS, _message

    def note(message: str) -> str | None:
        read = read_failure(message, "decode_test.go", {})
        return read.note if read else None

    assert note("decode_test.go:10: got:\nmap[a:1]\n") == "the test reports: got: map[a:1]"
    assert note("decode_test.go:10: <nil>\ndecode_test.go:11: err is nil\n") == \
        "the test reports: err is nil"
    assert note("decode_test.go:10: <nil>\n") is None
    long = ["x" * (MESSAGE_CHARS - 10) + "\n", 'in "valid/table/nest.toml":\n', "y" * 50 + "\n"]
    kept = _message(long)
    assert kept.startswith('in "valid/table/nest.toml":') and len(kept) <= MESSAGE_CHARS


def test_a_crash_keeps_its_panic_line_not_the_dump_s_tail() -> None:
    """A panic's goroutine dump is thousands of characters; its tail is runtime frames
    (``/opt/go/src/reflect/value.go:1424 +0x165``, once quoted as a statement's symptom)."""
    from repogym.toolchains.go.failures import read_failure
    from repogym.toolchains.plugins.repogym_go_report import MESSAGE_CHARS, _message

    frames = "".join(f"github.com/acme/m.(*Decoder).decode{i}(0x1af3385d20a8, {{0x5bd6d8}})\n"
                     f"\t/repo/m.go:{100 + i} +0x{i:x}\n" for i in range(60))
    lines = ["m_test.go:12: decoding the list\n",
             "panic: reflect: slice index out of range [recovered]\n",
             "\tpanic: reflect: slice index out of range\n", "\n",
             "goroutine 7 [running]:\n", frames,
             "testing.tRunner(0x1af338721208, 0x62c910)\n",
             "\t/opt/go/src/testing/testing.go:2036 +0xea\n"]
    kept = _message(lines)
    assert len("".join(lines)) > MESSAGE_CHARS >= len(kept)
    assert kept.startswith("m_test.go:12: decoding the list\npanic: reflect: slice index")
    assert "testing.go:2036" not in kept
    assert kept.splitlines()[-1] in "".join(lines).splitlines()  # whole lines only
    read = read_failure(kept, "m_test.go", {})
    assert read is not None and read.raises == "panic: reflect: slice index out of range"
