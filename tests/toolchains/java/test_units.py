"""The Java toolchain's pure parts: test files and protection, test ids, run plans, and
reading Surefire's XML reports against the extension's event log."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from repogym.schemas.records import Outcome, TimeLimits
from repogym.toolchains import JavaToolchain, detect_toolchain
from repogym.toolchains.java import plan
from repogym.toolchains.java.files import module_of, package_of
from repogym.toolchains.java.maven import build_step
from repogym.toolchains.java.project import MavenProject
from repogym.toolchains.java.report import (
    Namer,
    hung_test,
    method_of,
    parse_run,
    read_cases,
    split_bundle,
    split_id,
)
from repogym.toolchains.java.script import MavenRun
from tests.conftest import commit_files

N = "ab" * 16
CANARY = f"RepogymCanary{N[:16]}Test"
CLI = "src/test/java/org/x/FooTest.java"
SOURCES = {CLI, "src/test/java/org/x/BarTest.java", "core/src/test/java/org/y/BazTest.java"}

JUNIT5 = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="org.x.FooTest" tests="7" errors="2" skipped="1" failures="1">
  <properties><property name="java.version" value="17"/></properties>
  <testcase name="ok" classname="org.x.FooTest" time="0.004"/>
  <testcase name="fails" classname="org.x.FooTest" time="1,234.5">
    <failure message="one is not two ==&gt; expected: &lt;1&gt; but was: &lt;2&gt;"
      type="org.opentest4j.AssertionFailedError"><![CDATA[org.opentest4j.AssertionFailedError: one is not two ==> expected: <1> but was: <2>
\tat org.x.FooTest.fails(FooTest.java:9)
]]></failure>
  </testcase>
  <testcase name="errs" classname="org.x.FooTest" time="0.1">
    <error message="boom" type="java.lang.IllegalStateException"><![CDATA[java.lang.IllegalStateException: boom
\tat org.x.FooTest.errs(FooTest.java:8)
]]></error>
  </testcase>
  <testcase name="slow" classname="org.x.FooTest" time="3.0">
    <error message="slow() timed out after 3 seconds" type="java.util.concurrent.TimeoutException"/>
  </testcase>
  <testcase name="param(String)[2]" classname="org.x.FooTest" time="0.01"/>
  <testcase name="skipped" classname="org.x.FooTest" time="0"><skipped message="nope"/></testcase>
  <testcase name="deep" classname="org.x.FooTest$Inner$Deeper" time="0.003"/>
</testsuite>
"""


def junit4(classname: str, *cases: tuple[str, str]) -> bytes:
    """A JUnit 4 report: (name, "" | "failure" | "skipped") per test case."""
    body = []
    for name, kind in cases:
        child = {"failure": '<failure message="no" type="java.lang.AssertionError">'
                            "java.lang.AssertionError: no</failure>",
                 "skipped": "<skipped/>", "": ""}[kind]
        body.append(f'<testcase name="{name}" classname="{classname}" time="0.1">{child}'
                    "</testcase>")
    return (f'<?xml version="1.0"?><testsuite name="{classname}">{"".join(body)}'
            "</testsuite>").encode()


def event(kind: str, nonce: str = N, **fields: object) -> str:
    return json.dumps({"event": kind, "nonce": nonce, **fields})


def bundle(reports: dict[tuple[int, str], bytes]) -> bytes:
    return b"".join(f"### repogym-file {i}/{name} {len(data)}\n".encode() + data + b"\n"
                    for (i, name), data in reports.items())


def surefire(module: int, reports: dict[tuple[int, str], bytes], ok: bool = True,
             message: str = "") -> list[str]:
    """The events of a module's Surefire run that wrote ``reports``."""
    return [event("tests", module=module, roots="src/test/java\n"),
            event("mojo", module=module, mojo="maven-surefire-plugin:test", ok=ok,
                  message=message),
            *(event("report", module=module, file=name, sha256=hashlib.sha256(d).hexdigest())
              for (i, name), d in reports.items() if i == module)]


def read(events: list[str], reports: dict[tuple[int, str], bytes], *, status: int = 0,
         canary: str = CANARY, **kw: object):
    lines = [event("module", index=0, dir=".", surefire=True, canary=canary), *events,
             event("done"), event("exit", status=status)]
    return parse_run("\n".join(lines), bundle(reports), nonce=N, namer=Namer(SOURCES),
                     dumps=kw.pop("dumps", {}), exit_code=status, duration=1.0,  # type: ignore[arg-type]
                     timed_out=False, **kw)  # type: ignore[arg-type]


def with_canary(reports: dict[tuple[int, str], bytes], kind: str = "failure"):
    return {**reports, (0, f"TEST-{CANARY}.xml"): junit4(CANARY, ("canary", kind))}


def test_files_and_protection() -> None:
    tc = JavaToolchain()
    assert tc.is_test_file(CLI) and tc.is_test_file("core/src/test/resources/data.txt")
    assert tc.is_test_file("src/it/simple/pom.xml")
    assert not tc.is_test_file("src/main/java/org/x/Foo.java")
    assert tc.is_runtime_source("core/src/main/java/org/y/Baz.java")
    assert not tc.is_runtime_source(CLI) and not tc.is_runtime_source("src/jmh/java/B.java")
    for path in ("pom.xml", "core/pom.xml", ".mvn/maven.config", ".mvn/extensions.xml",
                 ".mvn/wrapper/maven-wrapper.properties", "mvnw", "mvnw.cmd", CLI):
        assert tc.is_protected(path), path
    assert not tc.is_protected("src/main/java/org/x/Foo.java")
    assert tc.qualified_name("src/main/java/org/x/Option.java", "getKey") == "Option.getKey"


def test_ids_name_the_file_of_the_top_level_class_and_round_trip() -> None:
    tid = "core/src/test/java/org/y/BazTest.java::BazTest$Inner#param(String)[2]"
    assert split_id(tid) == ("core/src/test/java/org/y/BazTest.java", "BazTest$Inner",
                             "param(String)[2]")
    assert JavaToolchain().test_file(tid) == "core/src/test/java/org/y/BazTest.java"
    assert method_of("param(String)[2]") == "param" and method_of("fib[3: x]") == "fib"
    assert package_of("core/src/test/java/org/y/BazTest.java") == "org.y"
    assert package_of("test/org/y/BazTest.java", "// x\npackage org.y;\n") == "org.y"
    poms = {"pom.xml", "core/pom.xml"}
    assert module_of("core/src/test/java/org/y/BazTest.java", poms) == "core"
    assert module_of(CLI, poms) == "."


def test_plan_selects_methods_per_class_with_fork_budgets() -> None:
    limits = TimeLimits(default=2.0, tests={f"{CLI}::FooTest#slow": 30.0}, run=100.0)
    run = plan([f"{CLI}::FooTest#ok", f"{CLI}::FooTest#param(String)[2]", f"{CLI}::FooTest#slow",
                f"{CLI}::FooTest$Inner#deep", "core/src/test/java/org/y/BazTest.java::BazTest#b"],
               [f"{CLI}::FooTest#ok"], limits, nonce=N, scratch="/var/tmp/s",
               poms={"pom.xml", "core/pom.xml"}, canary=True)
    assert run.test.split(",") == ["org.x.FooTest#param+slow", "org.x.FooTest$Inner#deep",
                                   "org.y.BazTest#b", CANARY]
    assert run.canary_modules == (".", "core")
    assert run.budgets == {".": 45.0, "core": 20.0}  # 10 s start + 2 + 30 + 2, grace 1; floor 20
    assert run.jupiter_timeout == 31.0  # the longest asked-for limit, and grace
    assert N in run.script() and N not in run.command("/var/tmp/run.sh")
    assert "canary.modules=.\\ncore" in run.plan()
    everything = plan(None, [f"{CLI}::FooTest#ok"], None, nonce=N, scratch="/var/tmp/s",
                      poms={"pom.xml"}, canary=True)
    assert everything.test == "!org.x.FooTest#ok" and everything.canary_modules is None
    nothing = plan([], (), None, nonce=N, scratch="/s", poms={"pom.xml"}, canary=True)
    assert not nothing.canary and nothing.test.startswith("RepogymNoTest")


def test_the_plan_file_escapes_what_properties_would_misread() -> None:
    text = MavenRun(scratch="/s", nonce=N, test="!a.B$C#d,é").plan()
    assert "test=\\!a.B$C#d,\\u00e9\n" in text


def test_surefire_reports_of_junit_5_and_4() -> None:
    cases = {(c.classname, c.name): c for c in read_cases(JUNIT5)}
    assert cases[("org.x.FooTest", "ok")].outcome is Outcome.passed
    fails = cases[("org.x.FooTest", "fails")]
    assert fails.outcome is Outcome.failed and fails.duration == 1234.5
    assert fails.message.startswith("org.opentest4j.AssertionFailedError: one is not two")
    assert cases[("org.x.FooTest", "errs")].outcome is Outcome.failed  # an exception: failed
    assert cases[("org.x.FooTest", "slow")].timed_out
    assert "timed out after 3 seconds" in cases[("org.x.FooTest", "slow")].message
    assert cases[("org.x.FooTest", "skipped")].outcome is Outcome.skipped
    assert ("org.x.FooTest$Inner$Deeper", "deep") in cases
    old = read_cases(junit4("org.x.BarTest", ("a", ""), ("b", "failure"), ("c", "skipped")))
    assert [c.outcome for c in old] == [Outcome.passed, Outcome.failed, Outcome.skipped]


def test_a_run_with_its_canary_is_trusted_and_names_files() -> None:
    reports = with_canary({(0, "TEST-org.x.FooTest.xml"): JUNIT5})
    run = read(surefire(0, reports), reports)
    assert run.trusted, run.problems
    assert run.outcome(f"{CLI}::FooTest#ok") is Outcome.passed
    assert run.outcome(f"{CLI}::FooTest$Inner$Deeper#deep") is Outcome.passed
    assert run.outcome(f"{CLI}::FooTest#param(String)[2]") is Outcome.passed
    assert not any("Canary" in t for t in run.results)
    assert len(run.results) == 7


def test_forged_or_late_reports_and_a_canary_that_passed_are_caught() -> None:
    genuine = with_canary({(0, "TEST-org.x.BarTest.xml"): junit4("org.x.BarTest", ("a", "failure"))})
    forged = {**genuine, (0, "TEST-org.x.BarTest.xml"): junit4("org.x.BarTest", ("a", ""))}
    changed = read(surefire(0, genuine), forged, status=0)
    assert not changed.trusted and "changed after Surefire wrote it" in changed.problems[0]
    extra = {**genuine, (0, "TEST-org.x.FooTest.xml"): JUNIT5}
    planted = read(surefire(0, genuine), extra)
    assert any("not written by Surefire" in p for p in planted.problems)
    all_pass = {(0, "TEST-org.x.BarTest.xml"): junit4("org.x.BarTest", ("a", ""))}
    no_canary = read(surefire(0, all_pass), all_pass)
    assert any("not the run's own failing test" in p for p in no_canary.problems)
    passed = with_canary(all_pass, kind="")
    assert any("failing test passed" in p for p in read(surefire(0, passed), passed).problems)
    twice = with_canary({(0, "TEST-org.x.BarTest.xml"): junit4(
        "org.x.BarTest", ("a", "failure"), ("a", ""))})
    assert read(surefire(0, twice), twice).outcome(
        "src/test/java/org/x/BarTest.java::BarTest#a") is Outcome.failed


def test_events_after_the_scripts_exit_line_are_not_believed() -> None:
    genuine = with_canary({(0, "TEST-org.x.BarTest.xml"): junit4("org.x.BarTest", ("a", "failure"))})
    forged = {**genuine, (0, "TEST-org.x.BarTest.xml"): junit4("org.x.BarTest", ("a", ""))}
    late = [event("report", module=0, file="TEST-org.x.BarTest.xml",
                  sha256=hashlib.sha256(forged[(0, "TEST-org.x.BarTest.xml")]).hexdigest())]
    lines = [event("module", index=0, dir=".", surefire=True, canary=CANARY),
             *surefire(0, genuine), event("done"), event("exit", status=0), *late]
    run = parse_run("\n".join(lines), bundle(forged), nonce=N, namer=Namer(SOURCES), dumps={},
                    exit_code=0, duration=1.0, timed_out=False)
    assert not run.trusted
    assert any("after Maven's exit" in p for p in run.problems)
    assert any("changed after Surefire wrote it" in p for p in run.problems)


def test_a_test_jvm_out_of_memory_is_a_crash_not_a_build_error() -> None:
    oom = ("There was an error in the forked process\nJava heap space\n"
           "org.apache.maven.surefire.booter.SurefireBooterForkException: There was an error")
    reports = with_canary({(0, "TEST-org.x.FooTest.xml"): JUNIT5})
    run = read(surefire(0, reports, ok=False, message=oom), reports, status=1,
               expected=["src/test/java/org/x/BarTest.java::BarTest#a"],
               module_of={"src/test/java/org/x/BarTest.java": "."})
    assert not run.trusted and any("died on its own" in p for p in run.problems)
    assert not run.collection_errors  # not blamed on the build: the other tests are missing


def test_events_without_the_nonce_and_exit_codes_that_disagree() -> None:
    reports = with_canary({(0, "TEST-org.x.FooTest.xml"): JUNIT5})
    forged = read([*surefire(0, reports), event("done", nonce="cd" * 16)], reports)
    assert any("without the run's nonce" in p for p in forged.problems)
    assert any("no failed build step" in p for p in read(surefire(0, reports), reports,
                                                         status=1).problems)
    failed = read(surefire(0, reports, ok=False, message="There are test failures"), reports)
    assert any("exited 0" in p for p in failed.problems)
    unfinished = parse_run(event("module", index=0, dir=".", canary=""), b"", nonce=N,
                           namer=Namer(SOURCES), dumps={}, exit_code=-9, duration=1.0,
                           timed_out=True)
    assert not unfinished.finished and not unfinished.trusted


def test_tests_of_a_module_that_did_not_compile_error() -> None:
    message = ("Compilation failure\nsrc/test/java/org/x/FooTest.java:[5,9] cannot find "
               "symbol\n  symbol: method newThing()")
    run = read([event("mojo", module=0, mojo="maven-compiler-plugin:testCompile", ok=False,
                      message=message)], {}, status=1,
               expected=[f"{CLI}::FooTest#ok"], module_of={CLI: "."})
    assert run.trusted, run.problems
    assert run.outcome(f"{CLI}::FooTest#ok") is Outcome.error
    assert "cannot find symbol" in run.results[f"{CLI}::FooTest#ok"].message
    assert run.collection_errors and "Compilation failure" in run.collection_errors[0]


DUMP = """2026-12-02 20:03:40
Full thread dump OpenJDK 64-Bit Server VM (17.0.19+10-Debian-1deb12u2 mixed mode, sharing):

"Reference Handler" #2 daemon prio=10 os_prio=0 cpu=0.21ms elapsed=15.27s tid=0x1 nid=0x2 waiting on condition
   java.lang.Thread.State: RUNNABLE
\tat java.lang.ref.Reference.waitForReferencePendingList(java.base@17.0.19/Native Method)

"main" #1 prio=5 os_prio=0 cpu=1093.48ms elapsed=15.31s tid=0x3 nid=0x4 waiting on condition
   java.lang.Thread.State: TIMED_WAITING (sleeping)
\tat java.lang.Thread.sleep(java.base@17.0.19/Native Method)
\tat org.x.Helper.spin(Helper.java:12)
\tat org.x.FooTest.hang(FooTest.java:5)
\tat jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(java.base@17.0.19/Native Method)
\tat jdk.internal.reflect.NativeMethodAccessorImpl.invoke(java.base@17.0.19/NativeMethodAccessorImpl.java:77)
\tat java.lang.reflect.Method.invoke(java.base@17.0.19/Method.java:569)
\tat org.junit.runners.model.FrameworkMethod$1.runReflectiveCall(FrameworkMethod.java:59)
"""


def test_a_test_whose_jvm_the_watchdog_stopped_fails_as_timed_out_and_is_named() -> None:
    assert hung_test(DUMP)[:2] == ("org.x.FooTest", "hang")  # type: ignore[index]
    earlier = {(0, "TEST-org.x.BarTest.xml"): junit4("org.x.BarTest", ("a", ""))}
    events = [*surefire(0, earlier, ok=False, message="There was a timeout in the fork"),
              event("killed", dir=".", dump="hung-1.txt", seconds=20)]
    expected = [f"{CLI}::FooTest#ok", f"{CLI}::FooTest#hang", f"{CLI}::FooTest#zAfter"]
    run = read(events, earlier, status=1, dumps={"hung-1.txt": DUMP}, expected=expected)
    assert not run.problems  # the canary never ran: the JVM was stopped first
    assert not run.finished  # to be resumed without the test it hung in
    assert run.died_in == f"{CLI}::FooTest#hang"
    result = run.results[f"{CLI}::FooTest#hang"]
    assert result.outcome is Outcome.failed and result.timed_out
    assert "org.x.Helper.spin" in result.message
    assert run.outcome(f"{CLI}::FooTest#zAfter") is None  # never ran


CRASH = ("The forked VM terminated without properly saying goodbye. VM crash or System.exit "
         "called?\nProcess Exit Code: 0\nCrashed tests:\norg.x.FooTest\n"
         "org.apache.maven.surefire.booter.SurefireBooterForkException: ...")


def test_a_crashed_jvm_names_its_test_and_cannot_excuse_forged_reports() -> None:
    expected = [f"{CLI}::FooTest#ok", f"{CLI}::FooTest#exits"]
    run = read(surefire(0, {}, ok=False, message=CRASH), {}, status=1, expected=expected)
    assert run.trusted, run.problems  # it reported nothing a forger could have written
    assert run.died_in == f"{CLI}::FooTest#ok"
    assert "System.exit" in run.results[f"{CLI}::FooTest#ok"].message
    forged = {(0, "TEST-org.x.FooTest.xml"): junit4("org.x.FooTest", ("ok", ""), ("exits", ""))}
    caught = read(surefire(0, forged, ok=False, message=CRASH), forged, status=1,
                  expected=expected)
    assert any("crashed before it finished" in p for p in caught.problems)
    elsewhere = with_canary({(0, "TEST-org.x.BarTest.xml"): junit4("org.x.BarTest", ("a", ""))})
    after_canary = read(surefire(0, elsewhere, ok=False, message=CRASH), elsewhere, status=1)
    assert any("died on its own" in p for p in after_canary.problems)


def test_the_report_bundle_frames_by_size() -> None:
    data = bundle({(0, "TEST-a.xml"): b"### repogym-file 9/x 1\n<x/>", (1, "TEST-b.xml"): b"<y/>"})
    files, clean = split_bundle(data)
    assert clean and files == {(0, "TEST-a.xml"): b"### repogym-file 9/x 1\n<x/>",
                               (1, "TEST-b.xml"): b"<y/>"}
    assert split_bundle(data[:-3])[1] is False or split_bundle(data + b"junk")[1] is False


def test_detection_needs_a_root_pom_and_test_sources(tmp_path) -> None:
    commit_files(tmp_path / "multi", {
        "pom.xml": "<project/>", "core/pom.xml": "<project/>",
        "core/src/main/java/org/y/Baz.java": "package org.y; class Baz {}",
        "core/src/test/java/org/y/BazTest.java": "package org.y; class BazTest {}",
        "core/src/test/java/org/y/QuxTest.java": "package org.y; class QuxTest {}"})
    tc = detect_toolchain(tmp_path / "multi")
    assert isinstance(tc, JavaToolchain) and tc.evidence(tmp_path / "multi") == 2
    project = MavenProject.read(tmp_path / "multi")
    assert project is not None and project.poms == ("core/pom.xml", "pom.xml")
    steps = project.install_steps()
    assert "javac" in steps[0] and "#repogymNoSuchMethod" in steps[1] and "-o clean" in steps[2]
    commit_files(tmp_path / "notests", {"pom.xml": "<project/>",
                                        "src/main/java/A.java": "class A {}"})
    assert MavenProject.read(tmp_path / "notests") is None
    commit_files(tmp_path / "nopom", {"core/pom.xml": "<project/>",
                                      "core/src/test/java/ATest.java": "class ATest {}"})
    assert MavenProject.read(tmp_path / "nopom") is None


def test_the_extension_step_carries_every_source() -> None:
    step = build_step()
    for cls in ("class Run", "class Adapt", "class Participant", "class Spy", "class Tap"):
        assert cls in step
    assert step.count("<<'REPOGYM_JAVA'") == 5


CHECK_TAP = """package repogym.maven;
public class CheckTap {
    public static void main(String[] a) throws Exception {
        org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger("check");
        log.info("before the tap");
        System.out.println("tapped=" + Tap.tapLogger());
        System.out.println("again=" + Tap.tapLogger());
        log.info("after the tap");
    }
}
"""


def test_the_tap_reaches_the_logger_of_the_maven_here(tmp_path) -> None:
    """Maven's logger keeps the stream it found at start (``cacheOutputStream``): the tap
    must replace the logger's own output choice, else Surefire's summaries never pass it
    and a report rewritten right after it was written is caught only by the poll. Compiled
    and run against the lib of the Maven on the ``PATH``, with Maven's logging settings."""
    from repogym.toolchains.java.maven import SOURCES, source

    mvn = shutil.which("mvn")
    assert mvn, "Maven is on every machine (README)"
    home = Path(os.path.realpath(mvn)).parent.parent
    src = tmp_path / "src/repogym/maven"
    src.mkdir(parents=True)
    for name in SOURCES:
        (src / name).write_text(source(name))
    (src / "CheckTap.java").write_text(CHECK_TAP)
    cp = f"{home}/lib/*"
    subprocess.run(["javac", "-nowarn", "-Xlint:-options", "--release", "8", "-cp", cp,
                    "-d", str(tmp_path / "classes"), *map(str, src.glob("*.java"))],
                   check=True, capture_output=True, timeout=120)
    out = subprocess.run(["java", f"-Dmaven.conf={home}/conf", "-cp",
                          f"{tmp_path / 'classes'}:{home}/conf/logging:{cp}",
                          "repogym.maven.CheckTap"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    assert "tapped=true" in out and "again=true" in out, out
    assert out.index("before the tap") < out.index("tapped=") < out.index("after the tap")
