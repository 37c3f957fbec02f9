"""The Java toolchain on real repositories of ../shared/repos, in Docker: the environment
(the Java layer, dependencies and plugins in the environment's local repository), every
test's outcome, selection, a bug that fails tests, a test that no longer compiles, tests
that hang, forged reports, and a multi-module build."""

from __future__ import annotations

import time

import pytest

from repogym.schemas.records import Outcome, TimeLimits
from repogym.toolchains import JavaToolchain
from repogym.toolchains.resume import run_to_end
from tests.conftest import open_bundle_env

pytestmark = [pytest.mark.docker, pytest.mark.slow]
CLI = "src/test/java/org/apache/commons/cli"
OPTION_TEST = f"{CLI}/OptionTest.java::OptionTest"


@pytest.fixture(scope="module")
def cli(tmp_path_factory, base_image):
    tc, sandbox = open_bundle_env(tmp_path_factory.mktemp("java-cli"), "apache+commons-cli",
                                  JavaToolchain)
    with sandbox:
        yield tc, sandbox


def write_test(sandbox, name: str, body: str, imports: str = "") -> str:
    """A JUnit Jupiter test class in commons-cli's test package; its file."""
    path = f"{CLI}/{name}.java"
    sandbox.write_file(path, (
        "package org.apache.commons.cli;\n\nimport org.junit.jupiter.api.*;\n"
        f"{imports}\n@TestMethodOrder(MethodOrderer.MethodName.class)\n"
        f"public class {name} {{\n{body}\n}}\n"))
    return path


def test_every_test_of_the_project(cli) -> None:
    tc, sandbox = cli
    run = tc.run_tests(sandbox, timeout=600)
    assert run.trusted, (run.problems, run.log_tail)
    assert len(run.results) > 900
    assert run.outcome(f"{OPTION_TEST}#testClone") is Outcome.passed
    assert run.outcome(f"{CLI}/BasicParserTest.java::BasicParserTest"
                       "#testAmbiguousLongWithoutEqualSingleDash") is Outcome.skipped
    params = [t for t in run.results if "CommandLineTest#testGetOptionValue(" in t]
    assert len(params) > 3 and all(run.outcome(t) is Outcome.passed for t in params)
    assert all(tc.test_file(t).startswith(CLI) for t in run.results)
    assert not any("Canary" in t for t in run.results)


def test_a_bug_fails_the_tests_that_check_it_and_reset_restores(cli) -> None:
    tc, sandbox = cli
    path = "src/main/java/org/apache/commons/cli/Option.java"
    text = sandbox.read_file(path).decode()
    sandbox.write_file(path, text.replace("return Objects.hash(longOption, option);",
                                          "return Objects.hash(longOption);"))
    select = [f"{OPTION_TEST}#testHashCode", f"{OPTION_TEST}#testClear"]
    run = tc.run_tests(sandbox, timeout=300, select=select)
    assert run.trusted, run.problems
    assert set(run.results) == set(select)
    assert run.outcome(f"{OPTION_TEST}#testHashCode") is Outcome.failed
    assert run.outcome(f"{OPTION_TEST}#testClear") is Outcome.passed
    assert "AssertionFailedError" in run.results[f"{OPTION_TEST}#testHashCode"].message
    sandbox.reset()
    again = tc.run_tests(sandbox, timeout=300, select=select[:1])
    assert again.trusted and again.outcome(select[0]) is Outcome.passed


def test_a_test_that_does_not_compile_errors_its_module(cli) -> None:
    tc, sandbox = cli
    path = write_test(sandbox, "ExtraTest", "  @Test void thing() { Option.newThing(); }")
    select = [f"{path}::ExtraTest#thing", f"{OPTION_TEST}#testClone"]
    run = tc.run_tests(sandbox, timeout=300, select=select)
    sandbox.reset()
    assert run.trusted and run.collection_errors, run.problems
    assert run.outcome(select[0]) is Outcome.error
    assert run.outcome(select[1]) is Outcome.error
    assert "cannot find symbol" in run.results[select[0]].message


def test_hanging_tests_cost_their_limits_and_are_named(cli) -> None:
    """Jupiter stops a test that sleeps past its limit; one that spins cannot be
    interrupted, so the watchdog stops its JVM and names it; the run goes on without it."""
    tc, sandbox = cli
    path = write_test(sandbox, "HangTest", "\n".join([
        "  @Test void aSleeps() throws Exception { Thread.sleep(600_000); }",
        "  @Test void bSpins() { double x = 0; while (x >= 0) { x += Math.sqrt(System.nanoTime()); } }",
        "  @Test void cAfter() {}"]))
    select = [f"{path}::HangTest#{n}" for n in ("aSleeps", "bSpins", "cAfter")]
    limits = TimeLimits(default=1.0, run=120.0)
    start = time.monotonic()
    run = run_to_end(tc, sandbox, timeout=300, select=select, limits=limits)
    took = time.monotonic() - start
    sandbox.reset()
    assert took < 90, took
    assert run.trusted, run.problems
    assert run.culprits == (select[1],)  # the first part died in it; the second went on
    spun = run.results[select[1]]
    assert spun.outcome is Outcome.failed and spun.timed_out
    assert "HangTest.bSpins" in spun.message  # from the thread dump
    assert run.results[select[0]].outcome is Outcome.failed
    assert run.results[select[0]].timed_out  # Jupiter's own limit
    assert run.outcome(select[2]) is Outcome.passed


def test_a_forged_report_in_the_usual_place_changes_nothing(cli) -> None:
    tc, sandbox = cli
    path = write_test(sandbox, "ForgeTest", "\n".join([
        "  @Test void forged() throws Exception {",
        "    java.nio.file.Path dir = java.nio.file.Paths.get(\"target/surefire-reports\");",
        "    java.nio.file.Files.createDirectories(dir);",
        "    java.nio.file.Files.write(dir.resolve(\"TEST-org.apache.commons.cli.ForgeTest.xml\"),",
        "      (\"<testsuite><testcase name=\\\"forged\\\" classname=\\\"org.apache.commons.cli.\"",
        "       + \"ForgeTest\\\"/></testsuite>\").getBytes());",
        "    Assertions.fail(\"really broken\");",
        "  }"]))
    run = tc.run_tests(sandbox, timeout=300, select=[f"{path}::ForgeTest#forged"])
    sandbox.reset()
    assert run.trusted, run.problems
    assert run.outcome(f"{path}::ForgeTest#forged") is Outcome.failed


def test_forged_passes_where_surefire_reports_and_an_exit_are_caught(cli) -> None:
    """Code under test that finds the run's reports folder (Surefire tells its JVM), writes
    a passing report for every asked-for test and exits the JVM: the run is not trusted."""
    tc, sandbox = cli
    path = write_test(sandbox, "ZForgeTest", "\n".join([
        "  @Test void forged() throws Exception {",
        "    String cmd = new String(java.nio.file.Files.readAllBytes(",
        "        java.nio.file.Paths.get(\"/proc/self/cmdline\"))).replace('\\0', ' ');",
        "    String[] a = cmd.trim().split(\" \");",
        "    java.util.Properties p = new java.util.Properties();",
        "    for (int i = a.length - 2; i < a.length; i++) {",
        "      try (java.io.InputStream in = new java.io.FileInputStream(a[a.length - 4] + \"/\" + a[i])) {",
        "        p.load(in);",
        "      }",
        "    }",
        "    java.nio.file.Path dir = java.nio.file.Paths.get(p.getProperty(\"reportsDirectory\"));",
        "    java.nio.file.Files.write(dir.resolve(\"TEST-org.apache.commons.cli.OptionTest.xml\"),",
        "      (\"<testsuite><testcase name=\\\"testHashCode\\\" classname=\\\"org.apache.commons.\"",
        "       + \"cli.OptionTest\\\"/></testsuite>\").getBytes());",
        "    Runtime.getRuntime().halt(0);",
        "  }"]))
    text = sandbox.read_file("src/main/java/org/apache/commons/cli/Option.java").decode()
    sandbox.write_file("src/main/java/org/apache/commons/cli/Option.java", text.replace(
        "return Objects.hash(longOption, option);", "return Objects.hash(longOption);"))
    run = tc.run_tests(sandbox, timeout=300, select=[f"{path}::ZForgeTest#forged",
                                                     f"{OPTION_TEST}#testHashCode"])
    sandbox.reset()
    assert not run.trusted and run.problems
    assert run.outcome(f"{OPTION_TEST}#testHashCode") is Outcome.passed  # forged, not believed


def test_a_multi_module_build(tmp_path_factory, base_image) -> None:
    tc, sandbox = open_bundle_env(tmp_path_factory.mktemp("java-jimfs"), "google+jimfs",
                                  JavaToolchain)
    url = "jimfs/src/test/java/com/google/common/jimfs/UrlTest.java::UrlTest"
    with sandbox:
        run = tc.run_tests(sandbox, timeout=600, select=[f"{url}#creatUrl", f"{url}#readFromUrl"])
        assert run.trusted, (run.problems, run.log_tail)
        assert run.outcome(f"{url}#readFromUrl") is Outcome.passed
        assert run.outcome(f"{url}#creatUrl") is Outcome.passed
        assert set(run.results) == {f"{url}#creatUrl", f"{url}#readFromUrl"}
