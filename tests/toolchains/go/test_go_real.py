"""The Go toolchain on real repositories of ../shared/repos, in Docker: the environment
(the Go layer, modules, a warm build cache), every test's outcome, selection, a bug that
fails tests, a test package that no longer builds, a test that hangs, and a repository
from before modules."""

from __future__ import annotations

import time

import pytest

from repogym.schemas.records import Outcome, TimeLimits
from repogym.toolchains import GoToolchain
from repogym.toolchains.resume import run_to_end
from tests.conftest import open_bundle_env

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def uuid(tmp_path_factory, base_image):
    tc, sandbox = open_bundle_env(tmp_path_factory.mktemp("go-uuid"), "google+uuid",
                                  GoToolchain)
    with sandbox:
        yield tc, sandbox


def test_every_test_of_the_module_with_subtests(uuid) -> None:
    tc, sandbox = uuid
    run = tc.run_tests(sandbox, timeout=300)
    assert run.trusted, (run.problems, run.log_tail)
    assert len(run.results) > 150
    assert run.outcome("uuid_test.go::TestNew") is Outcome.passed
    assert run.outcome("json_test.go::TestJSONUnmarshal/empty") is Outcome.passed
    assert run.outcome("seq_test.go::TestClockSeqRace") is Outcome.skipped
    assert run.outcome("uuid_test.go::ExampleNewString") in (Outcome.passed, None)


def test_a_bug_fails_the_tests_that_check_it_and_reset_restores(uuid) -> None:
    tc, sandbox = uuid
    text = sandbox.read_file("version4.go").decode()
    sandbox.write_file("version4.go", text.replace("uuid[6] = (uuid[6] & 0x0f) | 0x40",
                                                   "uuid[6] = (uuid[6] & 0x0f) | 0x50"))
    run = tc.run_tests(sandbox, timeout=300, select=["uuid_test.go::TestNew",
                                                     "uuid_test.go::TestConstants"])
    assert run.trusted, run.problems
    assert run.outcome("uuid_test.go::TestNew") is Outcome.failed
    assert run.outcome("uuid_test.go::TestConstants") is Outcome.passed
    assert "version" in run.results["uuid_test.go::TestNew"].message.lower()
    sandbox.reset()
    again = tc.run_tests(sandbox, timeout=300, select=["uuid_test.go::TestNew"])
    assert again.outcome("uuid_test.go::TestNew") is Outcome.passed


def test_a_test_package_that_does_not_build_errors_its_tests(uuid) -> None:
    tc, sandbox = uuid
    sandbox.write_file("extra_test.go", "package uuid\n\nimport \"testing\"\n\n"
                       "func TestThing(t *testing.T) { _ = NewThing() }\n")
    run = tc.run_tests(sandbox, timeout=300, select=["extra_test.go::TestThing",
                                                     "uuid_test.go::TestNew"])
    sandbox.reset()
    assert run.finished and run.collection_errors
    assert run.outcome("extra_test.go::TestThing") is Outcome.error
    assert run.outcome("uuid_test.go::TestNew") is Outcome.error
    assert "undefined: NewThing" in run.results["extra_test.go::TestThing"].message


def test_a_hanging_test_costs_its_limit_and_is_named(uuid) -> None:
    tc, sandbox = uuid
    sandbox.write_file("hang_test.go", "package uuid\n\nimport \"testing\"\n\n"
                       "func TestHang(t *testing.T) { select {} }\n"
                       "func TestZAfter(t *testing.T) {}\n")
    start = time.monotonic()
    run = tc.run_tests(sandbox, timeout=300, select=["hang_test.go::TestHang",
                                                     "hang_test.go::TestZAfter"],
                       limits=TimeLimits(default=1.0, run=120.0))
    took = time.monotonic() - start
    sandbox.reset()
    assert took < 60
    assert run.died_in == "hang_test.go::TestHang"
    assert run.results["hang_test.go::TestHang"].timed_out
    assert run.outcome("hang_test.go::TestZAfter") is None  # never ran


def test_a_panic_fails_its_test_and_the_tests_beside_it_run_again(uuid) -> None:
    """A panic kills the package's test binary while other parallel tests run: resumed
    without the test that panicked, they pass, and only it fails."""
    tc, sandbox = uuid
    sandbox.write_file("panic_test.go", (
        "package uuid\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n"
        "func TestPanics(t *testing.T) {\n\tt.Parallel()\n"
        "\ttime.Sleep(200 * time.Millisecond)\n\tvar m map[string]int\n\tm[\"x\"] = 1\n}\n\n"
        "func TestBeside(t *testing.T) {\n\tt.Parallel()\n\ttime.Sleep(2 * time.Second)\n}\n"))
    wanted = ["panic_test.go::TestPanics", "panic_test.go::TestBeside", "uuid_test.go::TestNew"]
    once = tc.run_tests(sandbox, timeout=300, select=wanted)
    assert once.died_in == "panic_test.go::TestPanics" and not once.finished
    assert once.outcome("panic_test.go::TestBeside") is None
    run = run_to_end(tc, sandbox, timeout=300, select=wanted)
    sandbox.reset()
    assert run.finished and run.culprits == ("panic_test.go::TestPanics",)
    assert run.outcome("panic_test.go::TestPanics") is Outcome.failed
    assert "assignment to entry in nil map" in run.results["panic_test.go::TestPanics"].message
    assert run.outcome("panic_test.go::TestBeside") is Outcome.passed
    assert run.outcome("uuid_test.go::TestNew") is Outcome.passed


def test_a_forged_report_line_does_not_pass_a_failing_test(uuid) -> None:
    tc, sandbox = uuid
    sandbox.write_file("forge_test.go", (
        "package uuid\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\n"
        "func TestForged(t *testing.T) {\n"
        "\tfmt.Println(\"\\x16--- PASS: TestForged (0.00s)\")\n"
        "\tfmt.Println(`{\"Action\":\"repogym-done\",\"Nonce\":\"00\"}`)\n"
        "\tt.Fatal(\"really broken\")\n}\n"))
    run = tc.run_tests(sandbox, timeout=300, select=["forge_test.go::TestForged"])
    sandbox.reset()
    assert run.outcome("forge_test.go::TestForged") is Outcome.failed


def test_a_repository_from_before_modules(tmp_path_factory, base_image) -> None:
    tc, sandbox = open_bundle_env(tmp_path_factory.mktemp("go-shellquote"),
                                  "kballard+go-shellquote", GoToolchain)
    with sandbox:
        run = tc.run_tests(sandbox, timeout=300)
        assert run.trusted, (run.problems, run.log_tail)
        assert run.outcome("quote_test.go::TestSimpleJoin") is Outcome.passed
        assert all(r.outcome is Outcome.passed for r in run.results.values())
        status = sandbox.exec(["git", "status", "--porcelain"], timeout=30).stdout
        assert "go.mod" not in status or status.startswith("??")


def test_forged_passes_and_a_clean_exit_from_init_are_caught(uuid) -> None:
    """Code under test that, when the test binary starts, prints a pass for every test of
    the package and exits 0: the canary never fails, so the run is not trusted."""
    tc, sandbox = uuid
    names = ["TestNew", "TestConstants"]
    forged = "".join(f'\tfmt.Println("\\x16=== RUN   {n}")\n'
                     f'\tfmt.Println("\\x16--- PASS: {n} (0.00s)")\n' for n in names)
    sandbox.write_file("zz_forge.go", "package uuid\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n"
                       f"func init() {{\n{forged}\tfmt.Println(\"\\x16PASS\")\n"
                       "\tos.Exit(0)\n}\n")
    run = tc.run_tests(sandbox, timeout=300, select=[f"uuid_test.go::{n}" for n in names])
    sandbox.reset()
    assert not run.trusted and any("tampered" in p for p in run.problems)


def test_per_test_coverage(uuid) -> None:
    tc, sandbox = uuid
    cov = tc.coverage(sandbox, timeout=600, select=["uuid_test.go::TestNew",
                                                    "json_test.go::TestJSONUnmarshal/empty"])
    assert cov is not None
    lines = cov.files["version4.go"]
    assert any("uuid_test.go::TestNew" in tests for tests in lines.values())
    assert "json_test.go::TestJSONUnmarshal/empty" in cov.tests_in_files(["marshal.go"])
    assert "version7.go" not in cov.files  # neither test makes a version 7 UUID
