"""Java: Maven projects (single- or multi-module), tested with Surefire (JUnit 4, JUnit
Jupiter, JUnit 4 on the JUnit Platform).

Environment: the Java layer (:mod:`~repogym.toolchains.java.layer`: Debian's JDK 17,
Maven 3.9 from Maven Central, the host's CAs in Java's trust store) over the base image;
every dependency and plugin of a test run downloaded into the environment's local
repository, ``$VIRTUAL_ENV/m2`` (:mod:`~repogym.toolchains.java.project`). Runs never
reach the network (``mvn -o``).

A run is one ``mvn -o clean test`` over the reactor (:mod:`~repogym.toolchains.java.script`)
with repogym's Maven extension loaded (:mod:`~repogym.toolchains.java.maven`). Its plan,
script and reading are one standard-library module,
:mod:`repogym.toolchains.plugins.repogym_maven`, which an exported task's in-container
grader runs too (:mod:`~repogym.toolchains.java.export`). Design choices, and why:

* **Compile every run.** ``clean`` first, so what runs is what the work tree says: no class
  file a patch or an earlier run left in ``target/`` survives, and a change to main code
  always recompiles the tests against it. It costs a few seconds a run (commons-cli: main
  and test code compile in about 4 s of a 10 s run); incremental builds from a seeded
  ``target/`` would save them but rest on file times and the compiler plugin's staleness
  checks, which a patch can defeat.
* **Settings forced in memory, not on the command line.** The extension sets, in every
  module's Surefire configuration and over the POM's: the reports folder (outside the work
  tree, fresh per run), ``testFailureIgnore`` (a failing module does not stop the others;
  the exit status then speaks for the build alone), no reruns of failing tests, trimmed
  stack traces, the test filter, the forks' time limit, and a fork for the tests even
  where the POM says ``forkCount=0`` (never in Maven's own JVM, where the extension is).
* **Integrity.** Code under test runs in Surefire's forked JVM, and Surefire tells that JVM
  its reports folder and the classes to run (in the booter files of ``target/surefire``),
  so the reports cannot be hidden from it; what it cannot reach is the run's nonce (the
  plan holding it is removed before Maven builds anything, the script is read into memory
  and removed). The event log the extension writes from Maven's process carries the nonce
  and says what each module built, which reports Surefire wrote (with digests taken when
  Surefire ended) and how Maven exited (:mod:`~repogym.toolchains.java.report`); a canary,
  a test that must fail, is planted in each module's test sources and removed as soon as it
  is compiled, so a blanket forgery of passing reports is caught. Surefire writes a class's
  report from Maven's process when the class ends, while the fork lives on as the same
  user: the extension keeps the digest of each report's first whole version, taken while
  Surefire runs (``Spy.Watch``: every 10 ms, and each time Maven prints a line, which
  Surefire does right after it wrote a class's report and before it answers the fork's
  next event, ``Tap``), so a report the fork rewrites later (a shutdown hook that strips
  the failures) is tamper, however loaded the machine. Residual risk: a thread in the fork
  that watches the reports folder and rewrites a report in the moment between Surefire
  writing it and printing its summary, sparing the canary's; forgery through Surefire's event stream on the fork's
  standard output; a process the tests leave running that, after Maven exits, rewrites
  the event log (the fork can read the nonce there: it runs as the same user) before it
  is read back; code that runs inside Maven's JVM while the build compiles (an annotation
  processor a patch registers in ``META-INF/services`` of the main code, which javac then
  runs compiling the tests) and reads the nonce from the extension's memory.
* **Time limits.** JUnit Jupiter stops a test past its limit itself
  (``junit.jupiter.execution.timeout.default``); for the rest, the script's watchdog stops a
  forked JVM past its module's budget (the sum of its asked-for tests' limits), after a
  thread dump that names the test it hung in (``died_in``).

Test ids are ``<test file>::<Class>#<test>``: the repo-relative file of the top-level test
class (with the module folder, ``jimfs/src/test/java/com/google/common/jimfs/UrlTest.java``),
the class's name in its package (``FooTest$Inner`` for a nested class), and the test's name
as Surefire reports it (``testClone``, ``param(String)[2]``, ``fib[3]``). The file is what
protection, statements and exports need; a selection runs ``<package>.<Class>#<method>``
(every invocation of a parameterized method; the results keep what was asked).

Gradle builds are not supported (no ``pom.xml``: not detected).
"""

from __future__ import annotations

import secrets
from pathlib import Path, PurePosixPath
from typing import Collection, Mapping, Sequence

from repogym.errors import NoTestsError
from repogym.layout import SCRATCH
from repogym.sandboxes.base import Sandbox
from repogym.schemas.calls import FailureReading
from repogym.schemas.records import Checkout, EnvSpec, Outcome, TestRun, TimeLimits
from repogym.toolchains.base import TOOLCHAINS, RunPlugin, Toolchain
from repogym.toolchains.java import files
from repogym.toolchains.java.layer import java_layer
from repogym.toolchains.java.project import MavenProject, is_test_source
from repogym.toolchains.java.report import Namer, parse_run, read_log, split_id
from repogym.toolchains.java.script import MavenRun
from repogym.toolchains.plugins.repogym_maven import FORK_STARTUP, MIN_FORK_BUDGET, plan
from repogym.toolchains.runs import (
    drop_scratch,
    exec_or_lost,
    read_or_empty,
    salvaged,
    text_or_none,
)

RECIPE_VERSION = "java-maven-1"
COLLECT_TIMEOUT = 120.0  # seconds to gather the reports after a run


class JavaToolchain(Toolchain):
    """Maven projects, tested with Surefire."""

    language = "java"
    source_suffixes = files.SOURCE_SUFFIXES

    def detect(self, repo: Path) -> bool:
        return MavenProject.read(repo) is not None

    def evidence(self, repo: Path) -> int:
        project = MavenProject.read(repo)
        return len(project.test_files) if project else 0

    def is_test_file(self, path: str) -> bool:
        return files.is_test_file(path)

    def is_protected(self, path: str, *, added: bool = False) -> bool:
        return files.is_test_file(path) or files.is_runner_file(path)

    def is_runtime_source(self, path: str) -> bool:
        parts = PurePosixPath(path).parts[:-1]
        return super().is_runtime_source(path) and "jmh" not in parts

    def read_failure(self, message: str, test_id: str,
                     sources: Mapping[str, str]) -> FailureReading | None:
        """A Surefire failure read against the test's source
        (:func:`repogym.toolchains.java.failures.read_failure`)."""
        from repogym.toolchains.java.failures import read_failure

        return read_failure(message, test_id, sources)

    def qualified_name(self, path: str, function: str | None) -> str:
        """``Option.getKey`` for a method of ``.../Option.java`` (``Option`` for the
        file itself): how Java code and its stack traces name it."""
        cls = PurePosixPath(path).stem
        if not function:
            return cls
        return function if "." in function else f"{cls}.{function}"

    def env_spec(self, checkout: Checkout, base_image: str) -> EnvSpec:
        project = MavenProject.read(checkout.path)
        if project is None:
            raise NoTestsError(f"{checkout.name}: no pom.xml with Java tests under "
                               f"src/test/java is tracked")
        return EnvSpec(repo=checkout.name, commit=checkout.commit, base_image=base_image,
                       toolchain="java", install_steps=tuple(project.install_steps()),
                       recipe_version=RECIPE_VERSION, layer=java_layer())

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None,
        plugins: Sequence[RunPlugin] = (), limits: TimeLimits | None = None,
        exclude: Sequence[str] = (), allowed_changes: Collection[str] | None = (),
        check_runner: bool = True, exitfirst: bool = False, collect: Sequence[str] = (),
    ) -> TestRun:
        sources, poms = self._listing(sandbox)
        wanted = [*(select or ()), *collect, *exclude]
        packages = self._packages(sandbox, {split_id(t)[0] for t in wanted} | set(collect))
        run = plan(select, exclude, limits, nonce=secrets.token_hex(16),
                   scratch=f"{SCRATCH}/repogym-mvn-{secrets.token_hex(6)}", poms=poms,
                   packages=packages, failfast=exitfirst and not check_runner,
                   collect=collect, canary=check_runner)
        script_path = f"{SCRATCH}/repogym-mvn-run-{secrets.token_hex(8)}.sh"
        sandbox.write_file(script_path, run.script())
        result, lost = exec_or_lost(sandbox, run.command(script_path), timeout=timeout, env={})
        if not lost:
            sandbox.exec(run.collect_command(), timeout=COLLECT_TIMEOUT)
        events = salvaged(sandbox, run.events, lost)
        bundle = b"" if lost else read_or_empty(sandbox, run.bundle)
        dumps = {} if lost else self._dumps(sandbox, run, events)
        maven_log = "" if lost else salvaged(sandbox, f"{run.scratch}/maven.log", lost)
        expected = [t for t in select or () if t not in set(exclude)]
        parsed = parse_run(
            events, bundle, nonce=run.nonce, namer=Namer(sources), dumps=dumps,
            exit_code=result.exit_code, duration=result.duration, timed_out=result.timed_out,
            log_tail=(maven_log or result.stdout + result.stderr)[-4000:], expected=expected,
            module_of={f: files.module_of(f, poms) for f in {split_id(t)[0] for t in expected}})
        if not lost:
            drop_scratch(sandbox, run.scratch)
        if select is not None:
            wanted_set = set(select)
            parsed = parsed.model_copy(update={"results": {
                t: r for t, r in parsed.results.items()
                if t in wanted_set or r.outcome is not Outcome.skipped}})
        return parsed.model_copy(update={"sandbox_lost": lost})

    def _listing(self, sandbox: Sandbox) -> tuple[set[str], set[str]]:
        """The work tree's Java sources and POMs (tracked or not, not ignored)."""
        listed = sandbox.exec(["git", "ls-files", "-z", "-co", "--exclude-standard", "--",
                               "*.java", "*pom.xml"], timeout=60)
        paths = [p for p in listed.stdout.split("\0") if p]
        return ({p for p in paths if p.endswith(".java")},
                {p for p in paths if PurePosixPath(p).name == "pom.xml"})

    def _packages(self, sandbox: Sandbox, paths: set[str]) -> dict[str, str]:
        """The package of each test file (its folders, or its ``package`` line)."""
        out = {}
        for path in paths:
            found = files.package_of(path)
            if not found and not is_test_source(path):
                found = files.package_of(path, text_or_none(sandbox, path))
            out[path] = found
        return out

    def _dumps(self, sandbox: Sandbox, run: MavenRun, events: str) -> dict[str, str]:
        log = read_log(events, run.nonce)
        names = {dump for m in log.modules.values() for dump, _ in m.killed}
        return {n: read_or_empty(sandbox, f"{run.scratch}/{n}").decode("utf-8", "replace")
                for n in names}


TOOLCHAINS.register("java")(JavaToolchain)

__all__ = ["COLLECT_TIMEOUT", "FORK_STARTUP", "MIN_FORK_BUDGET", "JavaToolchain", "plan"]
