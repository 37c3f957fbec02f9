"""The Rust toolchain on a real crate of ../shared/repos (rust-lang/glob), in Docker: the
environment (the Rust layer, crates from crates.io, a warm target directory), every test's
outcome, selection, a bug that fails tests, a test that does not compile, a test that
hangs, a new integration test whose tests live in a module file, forged passes, and
grading that guards the test code inside a source file rather than the whole file."""

from __future__ import annotations

import difflib
import time

import pytest

from repogym.grading import GradingSpec, grade_in
from repogym.schemas.records import Outcome, TimeLimits
from repogym.toolchains import RustToolchain
from repogym.toolchains.resume import run_to_end
from tests.conftest import open_bundle_env

pytestmark = [pytest.mark.docker, pytest.mark.slow]
UNIT = "src/lib.rs::test::test_pattern_matches"
OTHER = "src/lib.rs::test::test_path_join"
INTEGRATION = "tests/glob-std.rs::main"


@pytest.fixture(scope="module")
def glob(tmp_path_factory, base_image):
    tc, sandbox = open_bundle_env(tmp_path_factory.mktemp("rust-glob"), "rust-lang+glob",
                                  RustToolchain)
    with sandbox:
        yield tc, sandbox


def test_every_test_of_the_crate_unit_and_integration(glob) -> None:
    tc, sandbox = glob
    run = tc.run_tests(sandbox, timeout=300)
    assert run.trusted, (run.problems, run.log_tail)
    assert len(run.results) >= 15
    assert all(r.outcome is Outcome.passed for r in run.results.values())
    assert run.outcome(UNIT) is Outcome.passed and run.outcome(INTEGRATION) is Outcome.passed
    assert tc.test_file(UNIT) == "src/lib.rs" and tc.test_file(INTEGRATION) == "tests/glob-std.rs"
    status = sandbox.exec(["git", "status", "--porcelain"], timeout=30).stdout
    # the canary is gone, no target/ in the tree; the lock file is the install's
    assert status.replace("?? Cargo.lock\n", "") == "", status


def test_a_bug_fails_the_tests_that_check_it_and_reset_restores(glob) -> None:
    tc, sandbox = glob
    text = sandbox.read_file("src/lib.rs").decode()
    sandbox.write_file("src/lib.rs", text.replace(
        "self.matches_from(true, str.chars(), 0, options) == Match",
        "self.matches_from(true, str.chars(), 0, options) != Match"))
    run = tc.run_tests(sandbox, timeout=300, select=[UNIT, OTHER])
    assert run.trusted, run.problems
    assert set(run.results) == {UNIT, OTHER}
    assert run.outcome(UNIT) is Outcome.failed and run.outcome(OTHER) is Outcome.passed
    assert "src/lib.rs" in run.results[UNIT].message and "panicked" in run.results[UNIT].message
    sandbox.reset()
    again = tc.run_tests(sandbox, timeout=300, select=[UNIT], check_runner=False)
    assert again.trusted and again.outcome(UNIT) is Outcome.passed


def test_a_test_that_does_not_compile_errors_its_tests(glob) -> None:
    tc, sandbox = glob
    sandbox.write_file("tests/extra.rs", "#[test]\nfn thing() { glob::new_thing(); }\n")
    run = tc.run_tests(sandbox, timeout=300, select=["tests/extra.rs::thing", UNIT])
    sandbox.reset()
    assert run.finished and run.collection_errors
    assert run.outcome("tests/extra.rs::thing") is Outcome.error
    assert "new_thing" in run.results["tests/extra.rs::thing"].message
    assert run.outcome(UNIT) is Outcome.passed  # other targets still build and run


def test_a_hanging_test_costs_its_limit_and_is_named(glob) -> None:
    tc, sandbox = glob
    sandbox.write_file("tests/hang.rs", "#[test]\nfn a_hangs() { loop { "
                       "std::thread::sleep(std::time::Duration::from_millis(50)); } }\n"
                       "#[test]\nfn b_after() {}\n")
    start = time.monotonic()
    run = tc.run_tests(sandbox, timeout=300, select=["tests/hang.rs::a_hangs",
                                                     "tests/hang.rs::b_after"],
                       limits=TimeLimits(default=1.0, run=120.0))
    took = time.monotonic() - start
    sandbox.reset()
    assert took < 60
    assert run.died_in == "tests/hang.rs::a_hangs"
    assert run.results["tests/hang.rs::a_hangs"].timed_out
    assert run.outcome("tests/hang.rs::b_after") is None  # never ran
    assert not run.finished and not run.problems


def test_the_tests_after_one_that_kills_its_binary_run_again(glob) -> None:
    """A bug that recurses forever overflows the stack: the binary aborts, the test fails,
    and the tests after it, resumed without it, pass (they are no F2P tests)."""
    tc, sandbox = glob
    sandbox.write_file("tests/abort.rs", "fn deep(n: u64) -> u64 { if n == u64::MAX { 0 } "
                       "else { 1 + deep(n + 1) } }\n"
                       "#[test]\nfn a_overflows() { assert_eq!(deep(0), 0); }\n"
                       "#[test]\nfn b_after() {}\n#[test]\nfn c_after() {}\n")
    wanted = ["tests/abort.rs::a_overflows", "tests/abort.rs::b_after",
              "tests/abort.rs::c_after"]
    run = run_to_end(tc, sandbox, timeout=300, select=wanted)
    sandbox.reset()
    assert run.finished and run.culprits == ("tests/abort.rs::a_overflows",)
    assert run.outcome("tests/abort.rs::a_overflows") is Outcome.failed
    assert "overflowed its stack" in run.results["tests/abort.rs::a_overflows"].message
    assert run.outcome("tests/abort.rs::b_after") is Outcome.passed
    assert run.outcome("tests/abort.rs::c_after") is Outcome.passed


def test_tests_in_a_module_file_of_a_new_integration_test(glob) -> None:
    tc, sandbox = glob
    sandbox.write_file("tests/nested/main.rs", "mod helpers;\n#[test]\nfn top() {}\n")
    sandbox.write_file("tests/nested/helpers.rs",
                       "#[test]\nfn inside() { assert!(glob::Pattern::new(\"*\").is_ok()); }\n"
                       "#[test]\nfn broken() { assert_eq!(1, 2, \"one is not two\"); }\n")
    run = tc.run_tests(sandbox, timeout=300, select=[
        "tests/nested/main.rs::top", "tests/nested/helpers.rs::helpers::inside",
        "tests/nested/helpers.rs::helpers::broken"])
    sandbox.reset()
    assert run.trusted, run.problems
    assert run.outcome("tests/nested/main.rs::top") is Outcome.passed
    assert run.outcome("tests/nested/helpers.rs::helpers::inside") is Outcome.passed
    broken = run.results["tests/nested/helpers.rs::helpers::broken"]
    assert broken.outcome is Outcome.failed and "one is not two" in broken.message


def test_forged_passes_and_a_clean_exit_before_main_are_caught(glob) -> None:
    """Code under test that, before libtest's main, prints a pass for the tests asked
    for and exits 0: the canary never fails, so the run is not trusted."""
    tc, sandbox = glob
    text = sandbox.read_file("src/lib.rs").decode()
    sandbox.write_file("src/lib.rs", text + (
        "\n#[used]\n#[link_section = \".init_array\"]\n"
        "static REPOGYM_FORGE: extern \"C\" fn() = {\n"
        "    extern \"C\" fn forge() {\n"
        "        println!(\"{{ \\\"type\\\": \\\"test\\\", \\\"name\\\": "
        "\\\"test::test_pattern_matches\\\", \\\"event\\\": \\\"ok\\\" }}\");\n"
        "        std::process::exit(0);\n    }\n    forge\n};\n"))
    run = tc.run_tests(sandbox, timeout=300, select=[UNIT])
    sandbox.reset()
    assert not run.trusted and any("tampered" in p for p in run.problems), run.problems


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}")
    return "".join(lines)


def test_grading_guards_the_test_code_of_a_source_file_not_the_file(glob) -> None:
    """A listed unit test lives in src/lib.rs, where the fix goes too: the fix scores 1,
    and a fix that also edits the test module has src/lib.rs restored (0)."""
    tc, sandbox = glob
    sandbox.reset()
    head = sandbox.exec(["git", "rev-parse", "HEAD"], timeout=30).stdout.strip()
    good = sandbox.read_file("src/lib.rs").decode()
    bad = good.replace("self.matches_from(true, str.chars(), 0, options) == Match",
                       "self.matches_from(true, str.chars(), 0, options) != Match")
    cheat = good.replace('assert!(txt_pat.matches("hello.txt"));',
                         'assert!(txt_pat.matches("hello.txt") || true);')
    assert bad != good and cheat != good
    spec = GradingSpec(instance_id="glob.rust-spans", image="-", language="rust",
                       base_commit=head, bug_patch=_diff("src/lib.rs", good, bad),
                       test_patch="", FAIL_TO_PASS=(UNIT,), PASS_TO_PASS=(OTHER,))
    fixed = grade_in(sandbox, tc, spec, _diff("src/lib.rs", bad, good))
    assert fixed.reward == 1.0 and not fixed.discarded, fixed
    gamed = grade_in(sandbox, tc, spec, _diff("src/lib.rs", bad, cheat))
    assert gamed.reward == 0.0 and gamed.discarded == ("src/lib.rs",), gamed
    sandbox.reset()
