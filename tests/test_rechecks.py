"""The host re-checks' readers (tests/rust_recheck.py, tests/java_recheck.py): cargo's and
libtest's output, Surefire's reports."""

from __future__ import annotations

from pathlib import Path

from tests.java_recheck import java_test, parse_report
from tests.rust_recheck import key_of, parse

CARGO = """\
{"reason":"compiler-artifact","package_id":"glob"}
{"reason":"build-finished","success":true}
    Finished `test` profile [unoptimized + debuginfo] target(s) in 18.81s
     Running unittests src/lib.rs (target/debug/deps/glob-5b802d1c4a1493ca)

running 2 tests
test test::test_wildcard_errors ... ok
test test::test_star ... FAILED
test date::test::big_day - should panic ... ok

     Running tests/glob-std.rs (target/debug/deps/glob_std-9c71f3bea66e700a)

running 2 tests
test main ... ok
test slow ... ignored, needs a disk
"""


def test_libtest_lines_are_read_under_their_binary() -> None:
    run = parse(CARGO)
    assert run.built
    assert run.outcome("src/lib.rs::test::test_wildcard_errors") == "ok"
    assert run.outcome("src/lib.rs::test::test_star") == "FAILED"
    assert run.outcome("src/date.rs::date::test::big_day") == "ok"
    assert run.outcome("tests/glob-std.rs::main") == "ok"
    assert run.outcome("tests/glob-std.rs::slow") == "ignored"
    assert run.outcome("src/lib.rs::main") is None  # same name, another binary
    assert key_of("tests/it/helpers.rs::t") == ("it", "t")


def test_a_compile_error_is_a_build_that_did_not_finish() -> None:
    error = ('{"reason":"compiler-message","message":{"level":"error","message":"E0425"}}\n'
             '{"reason":"build-finished","success":false}\n')
    assert not parse(error).built


REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="org.apache.commons.cli.OptionTest" tests="3">
  <testcase name="testClone" classname="org.apache.commons.cli.OptionTest" time="0.01"/>
  <testcase name="param(String)[2]" classname="org.apache.commons.cli.OptionTest">
    <failure message="expected: 1 but was: 2" type="AssertionFailedError">...</failure>
  </testcase>
  <testcase name="later" classname="org.apache.commons.cli.OptionTest$Inner">
    <skipped/>
  </testcase>
</testsuite>
"""


def test_surefire_cases_and_ids(tmp_path: Path) -> None:
    assert parse_report(REPORT) == {
        ("org.apache.commons.cli.OptionTest", "testClone"): "passed",
        ("org.apache.commons.cli.OptionTest", "param(String)[2]"): "failed",
        ("org.apache.commons.cli.OptionTest$Inner", "later"): "skipped"}
    path = tmp_path / "src/test/java/org/apache/commons/cli/OptionTest.java"
    path.parent.mkdir(parents=True)
    path.write_text("/* licence */\npackage org.apache.commons.cli;\n\nclass OptionTest {}\n")
    test = java_test(tmp_path, "src/test/java/org/apache/commons/cli/OptionTest.java"
                             "::OptionTest$Inner#param(String)[2]")
    assert (test.classname, test.name) == ("org.apache.commons.cli.OptionTest$Inner",
                                           "param(String)[2]")
    assert test.filter == "org.apache.commons.cli.OptionTest#param"


def test_a_tests_module_under_src_is_the_librarys() -> None:
    """bitflags keeps unit tests in ``src/tests/*.rs`` (modules of the library): they run in
    the library's unit-test binary, not an integration target named after the file."""
    assert key_of("src/tests/fmt.rs::tests::fmt::cases") == ("unit", "tests::fmt::cases")
    assert key_of("tests/compile.rs::pass") == ("compile", "pass")
    assert key_of("crate/tests/a/main.rs::it") == ("a", "it")


def test_the_old_error_prone_compiler_is_taken_out_as_the_environment_does(tmp_path) -> None:
    from tests.java_recheck import _without_old_error_prone

    pom = tmp_path / "pom.xml"
    pom.write_text("""<project><build><plugins><plugin>
  <artifactId>maven-compiler-plugin</artifactId>
  <configuration>
    <compilerId>javac-with-errorprone</compilerId>
    <forceJavacCompilerUse>true</forceJavacCompilerUse>
    <source>8</source>
  </configuration>
  <dependencies>
    <dependency>
      <groupId>org.codehaus.plexus</groupId>
      <artifactId>plexus-compiler-javac-errorprone</artifactId>
    </dependency>
    <dependency>
      <groupId>com.google.errorprone</groupId>
      <artifactId>error_prone_core</artifactId>
    </dependency>
  </dependencies>
</plugin></plugins></build>
<dependencies><dependency><groupId>junit</groupId><artifactId>junit</artifactId></dependency>
</dependencies></project>""")
    _without_old_error_prone(tmp_path)
    text = pom.read_text()
    assert "errorprone" not in text and "forceJavacCompilerUse" not in text
    assert "<source>8</source>" in text and "<artifactId>junit</artifactId>" in text
