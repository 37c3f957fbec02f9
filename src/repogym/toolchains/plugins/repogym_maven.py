"""A Maven test run as repogym runs it and reads it: the run's plan and shell script, and
the reading of its event log and Surefire's reports. Standard library only: repogym's Java
toolchain (:mod:`repogym.toolchains.java`, whose ``script``, ``report`` and ``files``
modules wrap this one) plans, runs and reads its runs with it, and an exported task's
in-container grader (:mod:`repogym.datasets.exports.container_grader`) loads this file
from beside itself and runs the same plan, script and checks.

**The run** (:class:`MavenRun`, :func:`plan`): one ``mvn -o clean test`` over the whole
reactor, with repogym's extension (:mod:`repogym.toolchains.java.maven`) loaded and the
run's *plan* (its nonce, reports folder, test filter, fork time limits, canary) in a
properties file the extension reads and removes before any of the project's code runs.
``clean`` first: every run compiles the main and test code from the work tree as it is, so
nothing a patch or an earlier run left in ``target/`` (a stale or forged class file) is
ever run. A watchdog in the script stops a forked test JVM that outlives its module's time
limit: it takes a thread dump first (``jstack``, to name the test it hung in) and records
the kill in the run's event log. The script reaches the sandbox as a file it reads into
memory and removes before anything else runs, so neither the command line nor the work tree
shows the nonce; Maven's command line names only the plan's path, and the plan is gone
before a test starts.

**The reading** (:func:`parse_run`): the event log (``events.jsonl``) is written by
repogym's extension in Maven's own process and by the run script; every line carries the
run's nonce, which code under test never sees. It says which modules there were, where each
one's test sources are, which mojos failed and why (a compilation failure, a crashed fork),
the digest of every report Surefire wrote (taken when Surefire ended, after its forks
exited), which forks the watchdog stopped, and Maven's exit status. The reports are
Surefire's ``TEST-<class>.xml``: a ``testcase`` per test, with a ``failure``, ``error`` or
``skipped`` child when it did not pass. Checked against the log:

* a report whose bytes differ from the digest recorded for it, or that Surefire never
  wrote, makes the run untrusted (one the test JVM rewrote after Surefire wrote it, from a
  shutdown hook, say, does not match);
* nothing may follow the exit status the script writes last;
* Maven's exit status must match the build: 0 with no failed mojo, non-zero with one (a
  failing test does not fail the build: Surefire runs with ``testFailureIgnore``);
* the canary planted in each module must have failed wherever the module reported tests
  (unless the watchdog stopped the module's JVM first);
* a test JVM that died on its own (``System.exit``, ``halt``, a crash) leaves reports
  nothing vouches for: a module whose JVM crashed and that reported tests makes the run
  untrusted, as does a report of a class Surefire names as crashed.

Outcomes: no child -> passed; ``failure`` or ``error`` -> failed; ``skipped`` -> skipped.
Tests of a module whose main or test code did not compile -> error, with the compiler's
message. A test left running when the watchdog stopped its JVM fails as timed out and is
the run's ``died_in``; so is the first asked-for test of a class Surefire names as crashed.
A run with a stopped JVM is not ``finished``: the caller runs what is left again without the
test it hung in.

:func:`parse_run` returns plain data (:class:`Reading`)::

    {"results": {test id: {"outcome": "passed" | "failed" | "skipped" | "error",
                           "duration": seconds, "message": str, "timed_out": bool}},
     "collection_errors": [str], "finished": bool, "problems": [str],
     "died_in": test id | None, "status": Maven's exit status (else the caller's)}

Test ids are ``<test file>::<Class>#<test>`` (see :mod:`repogym.toolchains.java`).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Collection, Iterable, Mapping, Protocol, Sequence, TypedDict

REPO_DIR = "/repo"  # repogym.layout.REPO_DIR: where the repository is in a sandbox
TEST_ROOT = "src/test/java"  # Maven's default test source folder, under each module
EXT_DIR = "$VIRTUAL_ENV/repogym-maven"  # repogym's Maven extension (java.maven)
EXT_JAR = f"{EXT_DIR}/repogym-maven.jar"
MIN_FORK_BUDGET = 20.0  # a fork's time limit is never below this (JVM start, class loading)
FORK_STARTUP = 10.0
M2 = "$VIRTUAL_ENV/m2"  # the environment's local repository (read-only once installed)
# checks and reports bound to the lifecycle that do not decide any test's outcome
SKIPS = ("-Denforcer.skip", "-Drat.skip", "-Djacoco.skip", "-Danimal.sniffer.skip",
         "-Dcheckstyle.skip", "-Dspotbugs.skip", "-Dpmd.skip", "-Dcpd.skip", "-Djapicmp.skip",
         "-Drevapi.skip", "-Dmaven.javadoc.skip", "-Dmaven.source.skip", "-Dgpg.skip",
         "-Dbuildnumber.skip", "-Dremoteresources.skip", "-Dcyclonedx.skip",
         "-Dspotless.check.skip", "-Dspotless.apply.skip", "-Dlicense.skip",
         "-Dformatter.skip", "-Dimpsort.skip", "-Dsortpom.skip", "-Dbnd.baseline.skip",
         "-Dmaven.build.cache.enabled=false")
MAVEN = ("mvn", "-B", "-ntp", f'-Dmaven.repo.local="{M2}"', f'-Dmaven.ext.class.path="{EXT_JAR}"',
         *SKIPS)
MAVEN_OPTS = "-XX:TieredStopAtLevel=1"  # Maven and javac live seconds: C1 is enough
CANARY_GLOB = "RepogymCanary????????????????Test.java"
WATCH_INTERVAL = 0.5
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)


class Limits(Protocol):
    """The time limits a run takes (:class:`repogym.schemas.records.TimeLimits`' fields)."""

    @property
    def tests(self) -> Mapping[str, float]: ...

    @property
    def default(self) -> float | None: ...

    @property
    def grace(self) -> float: ...

    @property
    def run(self) -> float: ...


# -- the run -------------------------------------------------------------------------------

@dataclass(frozen=True)
class MavenRun:
    """What one run does: the Surefire test filter (``""``: every test), the modules whose
    forks may run how long (seconds, by module folder; others get ``default_budget``),
    JUnit Jupiter's per-test limit, fail-fast, and whether to plant the canary."""

    scratch: str
    nonce: str
    test: str = ""
    budgets: dict[str, float] = field(default_factory=dict)
    default_budget: float = 600.0
    jupiter_timeout: float | None = None
    failfast: bool = False
    canary: bool = False
    canary_modules: tuple[str, ...] | None = None  # None: every module

    @property
    def canary_name(self) -> str:
        """The canary's class (default package) when ``canary``: a test that must fail,
        planted in each module's test sources until Surefire starts (its class stays)."""
        return f"RepogymCanary{self.nonce[:16]}Test"

    @property
    def events(self) -> str:
        return f"{self.scratch}/events.jsonl"

    @property
    def bundle(self) -> str:
        return f"{self.scratch}/bundle"

    def plan(self) -> str:
        """The properties file the extension reads (see ``Run.java``)."""
        props: dict[str, str] = {"nonce": self.nonce, "out": self.scratch,
                                 "timeout": f"{self.default_budget + 60:.0f}"}
        if self.test:
            props["test"] = self.test
        if self.failfast:
            props["skipAfterFailureCount"] = "1"
        if self.canary:
            props["canary"] = self.canary_name
            if self.canary_modules is not None:
                props["canary.modules"] = "\n".join(self.canary_modules)
        for folder, seconds in self.budgets.items():
            props[f"timeout.{folder}"] = f"{seconds + 60:.0f}"  # Surefire's own backstop
        return "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in sorted(props.items()))

    def maven_command(self) -> str:
        args = [*MAVEN, "-o", "-fae", '-Drepogym.plan="$S/plan"']
        if self.jupiter_timeout is not None:
            args.append(f"-Djunit.jupiter.execution.timeout.default={self.jupiter_timeout:.0f}s")
        return " ".join([*args, "clean", "test"])

    def script(self) -> str:
        budgets = " ".join(f"[{shlex.quote(k)}]={v:.0f}" for k, v in sorted(self.budgets.items()))
        return "\n".join([
            "set -u",
            f"S={shlex.quote(self.scratch)}; N={shlex.quote(self.nonce)}",
            'mkdir -p "$S/reports" && : > "$S/events.jsonl"',
            _uproot(),
            "cat > \"$S/plan\" <<'REPOGYM_PLAN'",
            self.plan().rstrip("\n"),
            "REPOGYM_PLAN",
            f"declare -A BUDGET=({budgets}); DEFAULT={self.default_budget:.0f}",
            f'MAVEN_OPTS="{MAVEN_OPTS}" {self.maven_command()} > "$S/maven.log" 2>&1 '
            "</dev/null &",
            "m=$!",
            *self._watchdog(),
            'wait "$m"; st=$?',
            "printf '{\"event\":\"exit\",\"nonce\":\"%s\",\"status\":%d}\\n' \"$N\" \"$st\" "
            '>> "$S/events.jsonl"',
            'exit "$st"',
        ]) + "\n"

    def _watchdog(self) -> list[str]:
        """Every forked test JVM (a ``java`` running Surefire's booter) gets its module's
        budget from when the watchdog first sees it; past it, a thread dump, then a kill."""
        return [
            "declare -A SEEN=(); k=0",
            'while kill -0 "$m" 2>/dev/null; do',
            '  for p in $(pgrep -u "$(id -u)" -x java); do',
            '    grep -qa surefirebooter "/proc/$p/cmdline" 2>/dev/null || continue',
            '    [ -n "${SEEN[$p]:-}" ] || SEEN[$p]=$SECONDS',
            '    d=$(readlink "/proc/$p/cwd"); rel=${d#"$PWD"}; rel=${rel#/}; '
            '[ -n "$rel" ] || rel=.',
            '    b=${BUDGET[$rel]:-$DEFAULT}',
            '    if (( SECONDS - SEEN[$p] > b )); then',
            '      k=$((k+1)); timeout 30 jstack "$p" > "$S/hung-$k.txt" 2>&1',
            '      kill -9 "$p" 2>/dev/null',
            "      printf '{\"event\":\"killed\",\"nonce\":\"%s\",\"dir\":\"%s\",\"dump\":"
            "\"hung-%d.txt\",\"seconds\":%d}\\n' \"$N\" \"$rel\" \"$k\" \"$b\" "
            '>> "$S/events.jsonl"',
            '      unset "SEEN[$p]"',
            "    fi",
            "  done",
            f"  sleep {WATCH_INTERVAL}",
            "done",
        ]

    def collect_command(self) -> str:
        """After the run: every report Surefire wrote into one file (each under a header
        with its module, name and size), and no canary left in the work tree."""
        s = shlex.quote(self.scratch)
        return "\n".join([
            f"S={s}; : > \"$S/bundle\"",
            'for f in "$S"/reports/*/TEST-*.xml; do',
            '  [ -f "$f" ] || continue',
            "  printf '### repogym-file %s %d\\n' \"${f#\"$S/reports/\"}\" "
            '"$(stat -c %s "$f")" >> "$S/bundle"',
            '  cat "$f" >> "$S/bundle"; printf \'\\n\' >> "$S/bundle"',
            "done",
            _uproot(),
        ]) + "\n"

    def command(self, script_path: str) -> str:
        """The exec's command: the script read into memory and removed, then run."""
        q = shlex.quote(script_path)
        return f"bash -c 's=$(cat {q}); rm -f {q}; eval \"$s\"'"


def _uproot() -> str:
    """Remove canaries a run that was stopped left in the work tree."""
    return (f"find . -name .git -prune -o -type f -name '{CANARY_GLOB}' "
            "-exec rm -f {} + 2>/dev/null")


def _escape(value: str) -> str:
    """A value as ``java.util.Properties`` reads it (ISO-8859-1, backslash escapes)."""
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            units = ch.encode("utf-16-be")
            out += [f"\\u{units[i] << 8 | units[i + 1]:04x}" for i in range(0, len(units), 2)]
        else:
            out.append(ch)
    text = "".join(out)
    return "\\" + text if text[:1] in (" ", "#", "!") else text


def plan(select: Sequence[str] | None, exclude: Sequence[str], limits: Limits | None,
         *, nonce: str, scratch: str, poms: Collection[str],
         packages: Mapping[str, str] | None = None, failfast: bool = False,
         collect: Sequence[str] = (), canary: bool = False) -> MavenRun:
    """The run for ``select`` (None: every test Surefire's configuration picks, less
    ``exclude``): its Surefire filter, the canary's modules, each module's fork budget and
    JUnit Jupiter's per-test limit."""
    pkgs = dict(packages or {})
    poms = set(poms)
    default = limits.run if limits else 600.0
    jupiter = None
    if limits is not None and limits.default is not None:
        pool = [limits.tests.get(t, limits.default) for t in select] if select else \
            [limits.default, *limits.tests.values()]
        jupiter = max(pool) + limits.grace
    if select is None:
        test = ",".join(sorted({f"!{_pattern(t, pkgs)}" for t in exclude}))
        return MavenRun(scratch=scratch, nonce=nonce, test=test, default_budget=default,
                        jupiter_timeout=jupiter, failfast=failfast, canary=canary)
    skip = set(exclude)
    wanted = [t for t in select if t not in skip]
    methods: dict[str, set[str]] = {}
    for test in wanted:
        fqcn, _, method = _pattern(test, pkgs).partition("#")
        methods.setdefault(fqcn, set()).add(method)
    for path in collect:  # whole classes
        methods[_fqcn(path, PurePosixPath(path).stem, pkgs)] = set()
    patterns = [f"{c}#{'+'.join(sorted(m))}" if m else c for c, m in sorted(methods.items())]
    modules = sorted({module_of(split_id(t)[0], poms) for t in wanted}
                     | {module_of(p, poms) for p in collect})
    canary = canary and bool(modules)
    if canary:
        patterns.append(MavenRun(scratch=scratch, nonce=nonce).canary_name)
    budgets: dict[str, float] = {}
    if limits is not None and limits.default is not None:
        for test in wanted:
            folder = module_of(split_id(test)[0], poms)
            budgets[folder] = budgets.get(folder, FORK_STARTUP) + limits.tests.get(
                test, limits.default)
        budgets = {k: min(default, max(MIN_FORK_BUDGET, v + limits.grace))
                   for k, v in budgets.items()}
    return MavenRun(scratch=scratch, nonce=nonce,
                    test=",".join(patterns) or f"RepogymNoTest{nonce[:8]}", budgets=budgets,
                    default_budget=default, jupiter_timeout=jupiter, failfast=failfast,
                    canary=canary, canary_modules=tuple(modules))


def _pattern(test: str, packages: Mapping[str, str]) -> str:
    """Surefire's ``<package>.<Class>#<method>`` for a test id."""
    path, cls, name = split_id(test)
    return f"{_fqcn(path, cls, packages)}#{method_of(name)}"


def _fqcn(path: str, cls: str, packages: Mapping[str, str]) -> str:
    package = packages.get(path, package_of(path))
    return f"{package}.{cls}" if package else cls


def package_of(path: str, text: str | None = None) -> str:
    """The Java package of the repo-relative source ``path``: its folders under
    ``src/test/java`` (or ``src/main/java``), else the file's ``package`` declaration
    (``text``), else none (the default package)."""
    p = PurePosixPath(path)
    parts = p.parts[:-1]
    for i in range(len(parts) - 2):
        if parts[i] == "src" and parts[i + 2] == "java" and parts[i + 1] in ("test", "main"):
            return ".".join(parts[i + 3:])
    found = _PACKAGE.search(text or "")
    return found.group(1) if found else ""


def module_of(path: str, poms: set[str]) -> str:
    """The Maven module (its folder, ``.`` for the root) holding the repo-relative
    ``path``: the nearest folder above it with a ``pom.xml`` among ``poms``."""
    folder = PurePosixPath(path).parent
    while True:
        key = str(folder)
        if (f"{key}/pom.xml" if key != "." else "pom.xml") in poms or key == ".":
            return key
        folder = folder.parent


# -- the reading ---------------------------------------------------------------------------

class Result(TypedDict):
    """One test's outcome in a run."""

    outcome: str  # passed, failed, skipped, error
    duration: float
    message: str
    timed_out: bool


class Reading(TypedDict):
    """A run as its event log and reports say (the module docstring)."""

    results: dict[str, Result]
    collection_errors: list[str]
    finished: bool
    problems: list[str]
    died_in: str | None
    status: int  # Maven's exit status as the script recorded it, else the caller's


MESSAGE_CHARS = 2000
CANARY = re.compile(r"^RepogymCanary[0-9a-f]{16}Test$")
_TIMEOUT_TYPES = ("java.util.concurrent.TimeoutException",
                  "org.junit.runners.model.TestTimedOutException")
# a forked JVM that died (exited, crashed, ran out of memory) or was stopped, as Surefire says
_CRASH = re.compile(r"forked VM terminated|Crashed tests:|timeout in the fork|"
                    r"There was an error in the forked process\s+(?:Java heap space|"
                    r"GC overhead limit exceeded|Metaspace|unable to create native thread)")
_HEADER = re.compile(rb"### repogym-file (\d+)/(\S+) (\d+)\n")
_REFLECTION = ("jdk.internal.reflect.", "sun.reflect.", "java.lang.reflect.Method.invoke",
               "java.lang.invoke.")


@dataclass
class Module:
    index: int
    dir: str
    canary: str = ""
    roots: tuple[str, ...] = ()
    surefire_ended: bool = False
    failures: list[str] = field(default_factory=list)  # failed mojos' messages
    crash: str = ""  # Surefire's message when its forked JVM died (crashed, stopped)
    skipped: bool = False
    digests: dict[str, str] = field(default_factory=dict)
    killed: list[tuple[str, int]] = field(default_factory=list)  # (dump file, seconds)


@dataclass
class Case:
    """One ``testcase`` of a report (``outcome``: passed, failed or skipped)."""

    classname: str
    name: str
    outcome: str
    duration: float = 0.0
    message: str = ""
    timed_out: bool = False


@dataclass
class Log:
    """The event log as the run's nonce vouches for it."""

    modules: dict[int, Module] = field(default_factory=dict)
    done: bool = False
    status: int | None = None
    adapted: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def by_dir(self, folder: str) -> Module | None:
        return next((m for m in self.modules.values() if m.dir == folder), None)


def read_log(text: str, nonce: str) -> Log:
    """The events of ``text`` that carry ``nonce`` (others are a problem)."""
    log = Log()
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("nonce") != nonce:
            log.problems.append(f"a run event without the run's nonce ({event.get('event')})")
            continue
        if log.status is not None:  # the script's own last line: nothing may follow it
            log.problems.append(f"a run event after Maven's exit ({event.get('event')})")
            continue
        _apply(log, event)
    return log


def _apply(log: Log, event: dict[str, object]) -> None:
    kind = event.get("event")
    index = event.get("module")
    module = log.modules.get(index) if isinstance(index, int) else None
    if kind == "module" and isinstance(event.get("index"), int):
        i = int(str(event["index"]))
        log.modules[i] = Module(i, str(event.get("dir", ".")), str(event.get("canary", "")))
    elif kind == "adapted":
        log.adapted.append(str(event.get("change", "")))
    elif kind == "tests" and module is not None:
        module.roots = tuple(r for r in str(event.get("roots", "")).splitlines() if r)
    elif kind == "mojo" and module is not None:
        surefire = str(event.get("mojo", "")).startswith("maven-surefire-plugin:")
        module.surefire_ended = module.surefire_ended or surefire
        if event.get("ok") is not True:
            message = str(event.get("message", "")).replace(f"{REPO_DIR}/", "")
            if surefire and _CRASH.search(message):
                module.crash = message
            else:
                module.failures.append(message)
    elif kind == "report" and module is not None:
        module.digests[str(event.get("file", ""))] = str(event.get("sha256", ""))
    elif kind == "skipped" and module is not None:
        module.skipped = True
    elif kind == "killed":
        target = log.by_dir(str(event.get("dir", ".")))
        if target is not None:
            target.killed.append((str(event.get("dump", "")), int(str(event.get("seconds", 0)))))
    elif kind == "exit":
        log.status = int(str(event.get("status", 1)))
    elif kind == "done":
        log.done = True


def split_bundle(data: bytes) -> tuple[dict[tuple[int, str], bytes], bool]:
    """(module index, report name) -> its bytes, and whether the bundle read cleanly."""
    files: dict[tuple[int, str], bytes] = {}
    pos = 0
    while pos < len(data):
        header = _HEADER.match(data, pos)
        if header is None:
            return files, False
        start = header.end()
        end = start + int(header.group(3))
        files[(int(header.group(1)), header.group(2).decode("utf-8", "replace"))] = \
            data[start:end]
        pos = end + 1
    return files, True


def read_cases(xml: bytes) -> list[Case]:
    """The ``testcase`` elements of one Surefire report.

    Raises:
        ValueError: the report is not XML.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(str(exc)) from exc
    return [_case(tc) for tc in root.iter("testcase")]


def _case(tc: ET.Element) -> Case:
    case = Case(tc.get("classname", ""), tc.get("name", ""), "passed",
                duration=_seconds(tc.get("time", "0")))
    for child in tc:
        if child.tag in ("failure", "error", "flakyFailure", "flakyError", "rerunFailure",
                         "rerunError"):
            kind = child.get("type", "")
            case.outcome = "failed"
            case.timed_out = case.timed_out or kind in _TIMEOUT_TYPES
            text = (child.text or "").strip() or f"{kind}: {child.get('message', '')}"
            case.message = case.message or text[:MESSAGE_CHARS]
        elif child.tag == "skipped" and case.outcome == "passed":
            case.outcome = "skipped"
            case.message = child.get("message", "") or ""
    return case


def _seconds(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


class Namer:
    """Test ids of the reports' test cases: ``<file>::<Class>#<name>``, the file the
    top-level class lives in (in one of its module's test source folders, among
    ``sources``, else the first folder's), then the class's name in its package
    (``Outer$Inner`` for a nested class) and the test's name as Surefire reports it
    (``test(String)[2]`` for a parameterized one)."""

    def __init__(self, sources: Iterable[str]) -> None:
        self.sources = set(sources)

    def id(self, module: Module, classname: str, name: str) -> str:
        return f"{self.file(module, classname)}::{classname.rsplit('.', 1)[-1]}#{name}"

    def file(self, module: Module, classname: str) -> str:
        top = classname.split("$", 1)[0]
        rel = top.replace(".", "/") + ".java"
        roots = module.roots or ((f"{module.dir}/{TEST_ROOT}" if module.dir != "."
                                  else TEST_ROOT),)
        for root in roots:
            path = str(PurePosixPath(root) / rel)
            if path in self.sources:
                return path
        return str(PurePosixPath(roots[0]) / rel)


def split_id(test: str) -> tuple[str, str, str]:
    """(file, class in its package, test name) of a test id."""
    path, _, rest = test.partition("::")
    cls, _, name = rest.partition("#")
    return path, cls, name


def method_of(name: str) -> str:
    """The Java method a reported test name runs (``test(String)[2]`` -> ``test``)."""
    return re.split(r"[(\[]", name, maxsplit=1)[0]


def parse_run(events: str, bundle: bytes, *, nonce: str, namer: Namer,
              dumps: Mapping[str, str], exit_code: int, expected: Sequence[str] = (),
              module_of: Mapping[str, str] | None = None) -> Reading:
    """The run as its event log and reports say. ``dumps``: the thread dumps the watchdog
    took (by file name); ``expected``: the tests the run was asked for, and ``module_of``
    their files' modules (folders), so that tests of a module that did not build are
    errors and the test a crash or a kill stopped is named."""
    log = read_log(events, nonce)
    problems = list(dict.fromkeys(log.problems))
    files, clean = split_bundle(bundle)
    if not clean:
        problems.append("the reports could not be read back whole")
    results: dict[str, Result] = {}
    canaries: dict[int, str | None] = {}
    for (index, name), data in sorted(files.items()):
        module = log.modules.get(index)
        if module is None:
            problems.append(f"a report of a module the build did not have ({name})")
            continue
        problems += _digest_problems(module, name, data)
        try:
            cases = read_cases(data)
        except ValueError as exc:
            problems.append(f"{module.dir}: report {name} is not XML ({exc})")
            continue
        crashed = set(_crashed(module.crash)) if "Crashed tests:" in module.crash else set()
        for case in cases:
            if case.classname.split("$", 1)[0] in crashed:
                problems.append(f"{module.dir}: tampered: a report of {case.classname}, "
                                "whose test JVM crashed before it finished")
            if CANARY.match(case.classname):
                if case.classname == module.canary:
                    canaries[index] = _worst(canaries.get(index), case.outcome)
                continue
            _merge(results, namer.id(module, case.classname, case.name), case)
    problems += _canary_problems(log, results, canaries, namer)
    errors = _build_errors(log, results, expected, module_of or {})
    died_in = _died(log, results, expected, namer, dumps)
    problems += _exit_problems(log, exit_code)
    return {"results": results, "collection_errors": errors, "finished": _finished(log),
            "problems": list(dict.fromkeys(problems)), "died_in": died_in,
            "status": log.status if log.status is not None else exit_code}


def _finished(log: Log) -> bool:
    """Maven reached its end and said so, and no test JVM was stopped on the way (the
    tests after the one it hung in, and those of its class, never reported: the run is
    to be resumed without it, :func:`repogym.toolchains.resume.run_to_end`)."""
    return log.done and log.status is not None and not any(
        m.killed for m in log.modules.values())


def _digest_problems(module: Module, name: str, data: bytes) -> list[str]:
    if not module.surefire_ended:
        return []  # Surefire never ended (the run was cut short): nothing to compare
    want = module.digests.get(name)
    if want is None:
        return [f"{module.dir}: tampered: report {name} was not written by Surefire"]
    if hashlib.sha256(data).hexdigest() != want:
        return [f"{module.dir}: tampered: report {name} changed after Surefire wrote it"]
    return []


def _result(outcome: str, duration: float = 0.0, message: str = "",
            timed_out: bool = False) -> Result:
    return {"outcome": outcome, "duration": duration, "message": message,
            "timed_out": timed_out}


def _merge(results: dict[str, Result], tid: str, case: Case) -> None:
    """A test reported twice keeps its worst outcome (a forged pass never hides a fail)."""
    old = results.get(tid)
    if old is not None and _rank(old["outcome"]) >= _rank(case.outcome):
        return
    results[tid] = _result(case.outcome, case.duration,
                           case.message if case.outcome != "passed" else "", case.timed_out)


def _rank(outcome: str | None) -> int:
    return {None: -1, "passed": 0, "skipped": 1}.get(outcome, 2)


def _worst(a: str | None, b: str) -> str:
    return b if a is None or _rank(b) > _rank(a) else a


def _canary_problems(log: Log, results: Mapping[str, Result],
                     canaries: Mapping[int, str | None], namer: Namer) -> list[str]:
    """Each module that reported tests ran its canary, which failed, and its test JVM
    did not die on its own (the watchdog may have stopped it)."""
    problems = []
    for module in log.modules.values():
        reported = any(_in_module(t, module, namer) for t in results)
        outcome = canaries.get(module.index)
        if outcome is not None and outcome != "failed":
            problems.append(f"{module.dir}: tampered: the run's own failing test {outcome}")
        elif module.crash and not module.killed and reported:
            problems.append(f"{module.dir}: the test JVM died on its own (System.exit, a "
                            "crash): the reports it left cannot be trusted")
        elif module.canary and outcome is None and not module.killed and reported:
            problems.append(f"{module.dir}: tampered: tests reported, but not the run's own "
                            "failing test")
    return problems


def _in_module(test: str, module: Module, namer: Namer) -> bool:
    path = split_id(test)[0]
    roots = module.roots or ((f"{module.dir}/" if module.dir != "." else ""),)
    return any(path.startswith(r.rstrip("/") + "/") or r == "" for r in roots)


def _build_errors(log: Log, results: dict[str, Result], expected: Sequence[str],
                  module_of: Mapping[str, str]) -> list[str]:
    """Modules that did not build (or were skipped as a dependency failed): their asked-for
    tests error with the build's message."""
    errors = []
    for module in log.modules.values():
        message = next((m for m in module.failures if m != module.crash), "")
        if not message and not module.skipped:
            continue
        if not message:
            message = "not built: a module it depends on failed"
        errors.append(f"{module.dir}: {_first_lines(message)}")
        for tid in expected:
            if module_of.get(split_id(tid)[0]) == module.dir and tid not in results:
                results[tid] = _result("error", message=message[:MESSAGE_CHARS])
    return errors


def _died(log: Log, results: dict[str, Result], expected: Sequence[str], namer: Namer,
          dumps: Mapping[str, str]) -> str | None:
    """The test a stopped or crashed fork was running (recorded as failed), or None."""
    died_in = None
    for module in log.modules.values():
        tid: str | None = None
        if module.killed:
            dump, seconds = module.killed[0]
            found = hung_test(dumps.get(dump, ""))
            if found is not None:
                tid = _pick(module, found[0], found[1], results, expected, namer)
            if tid is not None:
                results[tid] = _result(
                    "failed", timed_out=True,
                    message=f"timed out: its JVM was stopped after {seconds}s in this test"
                            + (f"\n{found[2]}" if found else ""))
        elif "Crashed tests:" in module.crash:
            for cls in _crashed(module.crash):
                tid = _pick(module, cls, None, results, expected, namer)
                if tid is not None:
                    results[tid] = _result("failed",
                                           message=_first_lines(module.crash, 12))
                    break
        died_in = died_in or tid
    return died_in


def _pick(module: Module, classname: str, method: str | None, results: Mapping[str, object],
          expected: Sequence[str], namer: Namer) -> str | None:
    """The asked-for test of ``classname`` (``method``) that has no result yet; without
    asked-for tests, the id of the method itself."""
    file = namer.file(module, classname)
    cls = classname.rsplit(".", 1)[-1]
    candidates = [t for t in expected if t not in results and split_id(t)[:2] == (file, cls)]
    if method is not None:
        exact = [t for t in candidates if method_of(split_id(t)[2]) == method]
        candidates = exact or candidates
    if candidates:
        return candidates[0]
    if method is not None and not expected:
        return namer.id(module, classname, method)
    return None


def hung_test(dump: str) -> tuple[str, str, str] | None:
    """(class, method, top frames) of the test a thread dump shows running: the frame a
    test framework called by reflection, on the ``main`` thread first."""
    threads = re.split(r"\n(?=\")", dump)
    threads.sort(key=lambda t: not t.startswith('"main"'))
    for thread in threads:
        frames = re.findall(r"^\s+at (?:[\w.]+/)?([\w.$]+)\.([\w$<>]+)\(", thread, re.M)
        lines = re.findall(r"^\s+at .*$", thread, re.M)
        for i, (cls, method) in enumerate(frames[:-1]):
            if any(f"{frames[i + 1][0]}.{frames[i + 1][1]}".startswith(r) for r in _REFLECTION) \
                    and not cls.startswith(("jdk.internal.", "java.", "sun.")):
                return cls, method, "\n".join(ln.strip() for ln in lines[:i + 1][-12:])
    return None


def _crashed(message: str) -> list[str]:
    """The classes Surefire names after ``Crashed tests:``."""
    tail = message.split("Crashed tests:", 1)[1]
    out = []
    for line in tail.splitlines()[1:]:
        line = line.strip()
        if not re.fullmatch(r"[\w.$]+", line):
            break
        out.append(line)
    return out


def _exit_problems(log: Log, exit_code: int) -> list[str]:
    status = log.status if log.status is not None else exit_code
    failed = any(m.failures or m.crash for m in log.modules.values())
    if status == 0 and failed:
        return ["Maven exited 0 although a build step failed"]
    if status != 0 and log.status is not None and not failed and not any(
            m.killed for m in log.modules.values()):
        return [f"Maven exited {status} with no failed build step"]
    return []


def _first_lines(text: str, n: int = 6) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[:n] if ln.strip())


__all__ = ["CANARY", "EXT_DIR", "EXT_JAR", "FORK_STARTUP", "M2", "MAVEN", "MESSAGE_CHARS",
           "MIN_FORK_BUDGET", "REPO_DIR", "TEST_ROOT", "Case", "Limits", "Log", "MavenRun",
           "Module", "Namer", "Reading", "Result", "hung_test", "method_of", "module_of",
           "package_of", "parse_run", "plan", "read_cases", "read_log", "split_bundle",
           "split_id"]
