"""The Rust toolchain's pure parts: files and protection, test spans inside source files,
module trees that map libtest names to files, run plans, and reading libtest's JSON events
against the binaries' exit statuses."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from repogym.schemas.records import Outcome, TimeLimits
from repogym.toolchains import RustToolchain, detect_toolchain
from repogym.toolchains.rust import plan
from repogym.toolchains.rust.project import RustProject
from repogym.toolchains.rust.report import parse_report
from repogym.toolchains.rust.runner import Run, canary_source, command, kind_of
from repogym.toolchains.rust.scan import blank, file_of, module_map, scan
from tests.conftest import commit_files

N = "ab" * 16
CANARY = "zzzz_repogym_canary_" + N[:16]
LIB = {"": "src/lib.rs", "parser": "src/parser.rs", "parser::tests": "src/parser/tests.rs",
       "tests": "src/lib.rs"}


def marker(action: str, nonce: str = N, **fields: Any) -> str:
    return json.dumps({"repogym": action, "nonce": nonce, **fields})


def event(kind: str, name: str, **fields: Any) -> str:
    return json.dumps({"type": "test", "event": kind, "name": name, **fields})


def target(key: str = "m/lib/m", root: str = "src/lib.rs", **fields: Any) -> str:
    return marker("target", key=key, root=root, mods=fields.pop("mods", LIB),
                  harness=fields.pop("harness", True), canary=fields.pop("canary", False),
                  built=fields.pop("built", True), errors=fields.pop("errors", ""))


def section(*lines: str, key: str = "m/lib/m", status: int = 0, killed: bool = False) -> list[str]:
    return [marker("binary", key=key, timeout=10), *lines,
            marker("end", key=key, status=status, killed=killed, duration=0.1)]


def read(lines: list[str], **kw: Any):
    return parse_report("\n".join(lines), nonce=N, exit_code=0, duration=1.0,
                        timed_out=False, **kw)


def test_files_protection_and_runtime_sources() -> None:
    tc = RustToolchain()
    for path in ("tests/it.rs", "tests/common/mod.rs", "crates/a/tests/x.rs",
                 "src/parser/tests.rs", "src/lexer_tests.rs", "tests/data/in.txt"):
        assert tc.is_test_file(path), path
    assert not tc.is_test_file("src/lib.rs") and not tc.is_test_file("src/test.rs")
    assert tc.is_runtime_source("src/lib.rs") and tc.is_runtime_source("crates/a/src/x.rs")
    for path in ("build.rs", "benches/b.rs", "examples/e.rs", "fuzz/fuzz_targets/f.rs",
                 "tests/it.rs"):
        assert not tc.is_runtime_source(path), path
    for path in ("Cargo.toml", "crates/a/Cargo.toml", "Cargo.lock", "build.rs",
                 "crates/a/build.rs", ".cargo/config.toml", ".cargo/config", "rust-toolchain",
                 "rust-toolchain.toml", "benches/parse.rs", "tests/it.rs"):
        assert tc.is_protected(path), path
    assert not tc.is_protected("src/lib.rs") and not tc.is_protected("src/build.rs")


def test_qualified_names_are_rust_paths() -> None:
    tc = RustToolchain()
    assert tc.qualified_name("src/lib.rs", "parse") == "parse"
    assert tc.qualified_name("src/parser/mod.rs", "parse") == "parser::parse"
    assert tc.qualified_name("crates/a/src/de/read.rs", "Reader::next") == "de::read::Reader::next"
    assert tc.qualified_name("src/parser.rs", None) == "parser"


def test_blank_keeps_positions_and_hides_comments_and_literals() -> None:
    text = ('let s = "mod fake;"; // mod gone;\n/* mod x { /* nested */ } */ let c = \'{\';\n'
            "fn f<'a>(x: &'a str) {} let r = r#\"}\"#;\n")
    out = blank(text)
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    assert "mod" not in out and "{" not in out.split("fn f")[0] and "'a" in out
    assert out.count("{") == out.count("}") == 1


def test_test_spans_cover_cfg_test_items_and_test_functions() -> None:
    text = "\n".join([
        "pub fn add(a: i32) -> i32 { a + 1 }",    # 1
        "#[cfg(test)]",                            # 2
        "mod tests {",                             # 3
        "    use super::*;",                       # 4
        "    #[test] fn adds() { assert_eq!(add(1), 2); }",  # 5
        "}",                                       # 6
        "#[cfg(not(test))]",                       # 7
        "fn runtime() {}",                         # 8
        "#[test]",                                 # 9
        "fn loose() -> Result<(), [u8; 2]> {",     # 10
        "    Ok(())",                              # 11
        "}",                                       # 12
        "#[cfg(all(test, feature = \"x\"))]",      # 13
        "use std::fmt;",                           # 14
        "#[tokio::test] async fn t() {}",          # 15
    ])
    tc = RustToolchain()
    assert tc.test_spans("src/lib.rs", text) == ((2, 6), (9, 15))
    assert tc.test_spans("src/x.rs", "#![cfg(test)]\nfn a() {}\n") == ((1, 2),)
    assert tc.test_spans("tests/it.rs", "a\nb\n") == ((1, 3),)
    assert tc.test_spans("src/lib.rs", "fn main() {}\n") == ()


def test_module_trees_map_libtest_names_to_files() -> None:
    files = {
        "src/lib.rs": "pub mod parser;\n#[path = \"odd_place.rs\"]\nmod odd;\n"
                      "#[cfg(test)]\nmod tests { mod inner { #[test] fn deep() {} } }\n"
                      "fn f() { mod hidden; }\n",
        "src/parser.rs": "#[cfg(test)]\nmod tests;\n",
        "src/parser/tests.rs": "#[test] fn parses() {}\n",
        "src/odd_place.rs": "mod sub;\n",
        "src/sub.rs": "",
        "tests/it.rs": "mod common;\n",
        "tests/common/mod.rs": "",
    }
    mods = module_map("src/lib.rs", files.get)
    assert mods == {"": "src/lib.rs", "parser": "src/parser.rs",
                    "parser::tests": "src/parser/tests.rs", "odd": "src/odd_place.rs",
                    "odd::sub": "src/sub.rs", "tests": "src/lib.rs",
                    "tests::inner": "src/lib.rs"}
    assert file_of(mods, "parser::tests::parses") == "src/parser/tests.rs"
    assert file_of(mods, "tests::inner::deep") == "src/lib.rs"
    assert file_of(mods, "generated::by_macro::t") == "src/lib.rs"
    assert module_map("tests/it.rs", files.get)["common"] == "tests/common/mod.rs"
    assert scan("#![cfg(feature = \"x\")]\n").crate_cfg


def test_plan_selects_exact_names_with_limits_and_the_canary_runs_last() -> None:
    limits = TimeLimits(default=2.0, tests={"tests/it.rs::slow": 30.0}, run=100.0)
    run = plan(["tests/it.rs::slow", "src/lib.rs::tests::a", "tests/whole.rs"],
               ["src/lib.rs::tests::gone"], limits, nonce=N, scratch="/var/tmp/s",
               budget=50.0, canary=True)
    payload = run.payload()
    assert payload["collect"] == ["src/lib.rs", "tests/it.rs", "tests/whole.rs"]
    assert payload["limits"]["run"] == 50.0 and payload["canary_name"] == CANARY
    assert CANARY > "tests::zzz" and CANARY > "z_last"  # libtest runs tests by name
    script = run.script()
    assert N in script and N not in command("/var/tmp/run.py")
    compile(script, "run", "exec")
    assert kind_of(["rlib", "cdylib"]) == "lib" and kind_of(["test"]) == "test"
    assert "fn " + CANARY in canary_source(CANARY)


def _runner(select: list[str] | None, exclude: list[str] = (), **limits: Any) -> Run:
    """A runner whose survey found one lib and one integration test."""
    runner = Run.__new__(Run)
    runner.plan = {"select": select, "exclude": list(exclude), "collect": [],
                   "canary": True, "canary_name": CANARY,
                   "limits": {"tests": {}, "default": None, "grace": 1.0, "run": 100.0,
                              **limits}}
    runner.targets = {
        "m/lib/m": {"key": "m/lib/m", "files": set(LIB.values()), "harness": True,
                    "canary": True, "kind": "lib", "name": "m"},
        "m/test/it": {"key": "m/test/it", "files": {"tests/it.rs"}, "harness": True,
                      "canary": True, "kind": "test", "name": "it"}}
    return runner


def test_the_runner_picks_targets_by_file_and_passes_exact_names() -> None:
    runner = _runner(["src/parser/tests.rs::parser::tests::parses"],
                     exclude=["src/lib.rs::tests::slow"])
    (lib,) = runner.wanted()
    assert lib["key"] == "m/lib/m"
    assert runner.args(lib)[-5:] == ["--exact", "parser::tests::parses", CANARY, "--skip",
                                     "tests::slow"]
    everything = _runner(None)
    assert [t["key"] for t in everything.wanted()] == ["m/lib/m", "m/test/it"]
    assert "--exact" not in everything.args(everything.targets["m/lib/m"])
    timed = _runner(["tests/it.rs::a", "tests/it.rs::b"], default=2.0,
                    tests={"tests/it.rs::b": 30.0})
    (it,) = timed.wanted()
    assert timed.timeout(it, {}) == 33.0  # 2 + 30 + grace 1


def test_events_become_outcomes_with_files_and_messages() -> None:
    run = read([target(), *section(
        event("started", "tests::a"), event("ok", "tests::a", exec_time=0.5),
        event("started", "parser::tests::parses"),
        event("failed", "parser::tests::parses",
              stdout="thread 'parser::tests::parses' panicked at src/parser/tests.rs:1:1:\n"
                     "assertion failed\n"),
        event("started", "tests::skipped"), event("ignored", "tests::skipped"),
        "stray output from a child process", status=101), marker("done")])
    assert run.trusted, run.problems
    assert {t: r.outcome for t, r in run.results.items()} == {
        "src/lib.rs::tests::a": Outcome.passed,
        "src/parser/tests.rs::parser::tests::parses": Outcome.failed,
        "src/lib.rs::tests::skipped": Outcome.skipped}
    assert run.results["src/lib.rs::tests::a"].duration == 0.5
    assert "assertion failed" in run.results[
        "src/parser/tests.rs::parser::tests::parses"].message


def test_a_forged_pass_never_hides_a_failure_and_exit_statuses_are_checked() -> None:
    forged = read([target(), *section(event("started", "tests::a"), event("failed", "tests::a"),
                                      event("ok", "tests::a"), status=101), marker("done")])
    assert forged.outcome("src/lib.rs::tests::a") is Outcome.failed and forged.trusted
    exited_zero = read([target(), *section(event("failed", "tests::a"), status=0),
                        marker("done")])
    assert not exited_zero.trusted and "exited 0" in exited_zero.problems[0]
    silent = read([target(), *section(event("ok", "tests::a"), status=101), marker("done")])
    assert not silent.trusted and "exited 101" in silent.problems[0]
    wrong = read([target(), *section(event("ok", "tests::a")), marker("done", nonce="cd" * 16)])
    assert not wrong.finished and wrong.problems
    glued = read([target(), *section("partial line" + event("ok", "tests::a")), marker("done")])
    assert glued.outcome("src/lib.rs::tests::a") is Outcome.passed


def test_a_test_left_running_when_its_binary_was_killed_fails_and_is_named() -> None:
    run = read([target(), *section(event("started", "tests::a"), event("ok", "tests::a"),
                                   event("started", "tests::hang"), status=-9, killed=True),
                marker("done")])
    assert not run.problems and not run.finished  # the tests after it are still to run
    assert run.died_in == "src/lib.rs::tests::hang"
    hung = run.results["src/lib.rs::tests::hang"]
    assert hung.outcome is Outcome.failed and hung.timed_out
    overflow = read([target(), *section(event("started", "tests::deep"),
                                        "thread 'tests::deep' has overflowed its stack",
                                        status=-6), marker("done")])
    assert "overflowed" in overflow.results["src/lib.rs::tests::deep"].message


def test_a_target_that_does_not_build_errors_its_asked_tests() -> None:
    lines = [marker("build", status=101, log="error: could not compile", timed_out=False),
             target(), target("m/test/it", "tests/it.rs", mods={"": "tests/it.rs"},
                              built=False, errors="error[E0425]: cannot find `new_thing`"),
             *section(event("ok", "tests::a"), status=0), marker("done")]
    run = read(lines, expected=["tests/it.rs::thing", "src/lib.rs::tests::a"])
    assert run.outcome("tests/it.rs::thing") is Outcome.error
    assert "new_thing" in run.results["tests/it.rs::thing"].message
    assert run.outcome("src/lib.rs::tests::a") is Outcome.passed
    assert run.collection_errors and run.finished
    broken = read([marker("build", status=101, log="error: failed to parse manifest",
                          timed_out=False, survey=True), marker("done")],
                  expected=["src/lib.rs::tests::a"])
    assert broken.outcome("src/lib.rs::tests::a") is Outcome.error
    assert "manifest" in broken.results["src/lib.rs::tests::a"].message


def test_the_canary_must_fail_in_a_binary_that_does_not_exit_0() -> None:
    ok = read([target(canary=True), *section(event("ok", "tests::a"), event("started", CANARY),
                                             event("failed", CANARY), status=101),
               marker("done")], canary=CANARY)
    assert ok.trusted, ok.problems
    assert set(ok.results) == {"src/lib.rs::tests::a"}
    forged = read([target(canary=True), *section(event("ok", "tests::a"), status=0),
                   marker("done")], canary=CANARY)
    assert not forged.trusted and "tampered" in forged.problems[0]
    unplanted = read([target(canary=False), *section(event("ok", "tests::a"), status=0),
                      marker("done")], canary=CANARY)
    assert unplanted.trusted  # a crate an inner #![cfg] may configure out gets none


def test_a_binary_without_libtest_is_one_test() -> None:
    run = read([target("m/test/custom", "tests/custom.rs", mods={"": "tests/custom.rs"},
                       harness=False), *section("custom failure", key="m/test/custom",
                                                status=1), marker("done")])
    assert run.outcome("tests/custom.rs::main") is Outcome.failed
    assert run.results["tests/custom.rs::main"].message == "custom failure"


def test_detection_needs_a_manifest_and_tests(tmp_path) -> None:
    commit_files(tmp_path / "c", {"Cargo.toml": "[package]\nname = \"c\"\n",
                                  "src/lib.rs": "#[cfg(test)]\nmod tests {}\n"})
    assert isinstance(detect_toolchain(tmp_path / "c"), RustToolchain)
    project = RustProject.read(tmp_path / "c")
    assert project is not None and not project.locked
    steps = project.install_steps()
    assert any("generate-lockfile" in s for s in steps)
    assert any("cargo build --profile test --keep-going --workspace --tests" in s for s in steps)
    commit_files(tmp_path / "nolib", {"Cargo.toml": "[package]\nname = \"n\"\n",
                                      "src/lib.rs": "pub fn f() {}\n"})
    assert RustProject.read(tmp_path / "nolib") is None
    commit_files(tmp_path / "locked", {"Cargo.toml": "[package]\nname = \"l\"\n",
                                       "Cargo.lock": "", "tests/t.rs": "#[test] fn t() {}\n"})
    locked = RustProject.read(tmp_path / "locked")
    assert locked is not None and locked.locked
    assert any("cargo fetch --locked" in s for s in locked.install_steps())
    assert subprocess.run(["git", "-C", str(tmp_path / "c"), "status", "--short"],
                          capture_output=True, text=True).stdout == ""
