"""node-tap 21 on a real repository (isaacs/minimatch of ../shared/repos), in Docker: every
subtest's outcome read by repogym's reporter in tap's own process, a selection, a bug
that fails tests (with what tap found and wanted), a test file that hangs or crashes, and
the canary that shows code under test exiting before the checks ran."""

from __future__ import annotations

import pytest

from repogym.schemas.records import Outcome, TimeLimits
from repogym.toolchains import JavaScriptToolchain
from tests.conftest import open_bundle_env

pytestmark = [pytest.mark.docker, pytest.mark.slow]
BASIC = "test/basic.js > basic tests"
ESCAPING = "test/escaping.js > escaping tests"


@pytest.fixture(scope="module")
def minimatch(tmp_path_factory, base_image):
    tc, sandbox = open_bundle_env(tmp_path_factory.mktemp("minimatch"), "isaacs+minimatch",
                                  JavaScriptToolchain)
    with sandbox:
        yield tc, sandbox


def test_every_subtest_of_the_suite(minimatch) -> None:
    tc, sandbox = minimatch
    run = tc.run_tests(sandbox, timeout=600)
    assert run.trusted, (run.problems, run.collection_errors, run.log_tail)
    assert len(run.results) > 50
    assert run.outcome(BASIC) is Outcome.passed
    assert run.outcome("test/basic.js > globstar re matches zero or more path portions"
                       " > path/**") is Outcome.passed
    assert all(r.outcome is not Outcome.failed for r in run.results.values())


def test_a_bug_fails_the_selected_tests_with_what_tap_found(minimatch) -> None:
    tc, sandbox = minimatch
    text = sandbox.read_file("src/index.ts").decode()
    call = "return new Minimatch(pattern, options).match(p)"
    assert call in text
    sandbox.write_file("src/index.ts", text.replace(call, f"return !({call[7:]})"))
    run = tc.run_tests(sandbox, timeout=600, select=[ESCAPING, BASIC])
    sandbox.reset()
    assert run.trusted, (run.problems, run.log_tail)
    assert set(run.results) == {ESCAPING, BASIC}  # the files' other subtests: dropped
    assert run.outcome(ESCAPING) is Outcome.failed
    message = run.results[ESCAPING].message
    assert "should match pattern" in message and "-true" in message and "+false" in message


def test_a_hanging_file_and_a_crashing_file(minimatch) -> None:
    tc, sandbox = minimatch
    sandbox.write_file("test/zz-hang.js", (
        "import t from 'tap'\n"
        "t.test('first', t => { t.pass('ok'); t.end() })\n"
        "t.test('spins', t => { while (true) {} })\n"))
    sandbox.write_file("test/zz-crash.js", "throw new Error('cannot load this file')\n")
    run = tc.run_tests(sandbox, timeout=600, select=[
        "test/zz-hang.js > first", "test/zz-hang.js > spins", "test/zz-crash.js",
        ESCAPING], limits=TimeLimits(default=1.0, run=300.0))
    sandbox.reset()
    assert run.outcome("test/zz-hang.js > first") is Outcome.passed
    assert run.outcome("test/zz-hang.js > spins") is None  # its process was killed mid-test
    assert any("zz-hang.js" in e and ("timeout" in e or "SIGKILL" in e)
               for e in run.collection_errors)
    assert any("zz-crash.js" in e for e in run.collection_errors)
    assert run.finished and not run.problems


def test_titles_are_the_tests_own_not_taps_escaped_ones(minimatch) -> None:
    """TAP escapes ``\\`` and ``#`` in names (minimatch's ``test/unc.ts`` has subtests named
    ``both \\``); ids carry the title as the test gave it, and select it."""
    tc, sandbox = minimatch
    sandbox.write_file("test/zz-names.js", (
        "import t from 'tap'\n"
        "t.test('both \\\\', t => { t.test('a # b', t => { t.pass('ok'); t.end() }); t.end() })\n"
        "t.test('other', t => { t.pass('ok'); t.end() })\n"))
    wanted = ["test/zz-names.js > both \\", "test/zz-names.js > both \\ > a # b"]
    run = tc.run_tests(sandbox, timeout=600, select=wanted)
    sandbox.reset()
    assert {t: r.outcome for t, r in run.results.items()} == {t: Outcome.passed for t in wanted}


def test_code_that_exits_when_loaded_is_caught_by_the_canary(minimatch) -> None:
    tc, sandbox = minimatch
    text = sandbox.read_file("src/index.ts").decode()
    sandbox.write_file("src/index.ts", text + "\nprocess.exit(0)\n")
    run = tc.run_tests(sandbox, timeout=600, select=[BASIC, ESCAPING])
    sandbox.reset()
    assert not run.trusted
