"""Reading a Maven test run: the extension's event log, Surefire's XML reports, and the
thread dumps of forked JVMs the watchdog stopped.

The event log (``events.jsonl``) is written by repogym's extension in Maven's own process
and by the run script; every line carries the run's nonce, which code under test never
sees (it lives in the plan the extension removed before any test ran, and in the script
read into memory). It says which modules there were, where each one's test sources are,
which mojos failed and why (a compilation failure, a crashed fork), the digest of every
report Surefire wrote (taken when Surefire ended, after its forks exited), which forks the
watchdog stopped, and Maven's exit status.

The reports are Surefire's ``TEST-<class>.xml`` (JUnit 4, JUnit Jupiter and JUnit 4 run on
the JUnit Platform write the same format): a ``testcase`` per test, with a ``failure``,
``error`` or ``skipped`` child when it did not pass. Checked against the log:

* a report whose bytes differ from the digest recorded for it, or that Surefire never
  wrote, makes the run untrusted: the extension records each report as it was first
  written whole while Surefire ran, so one the test JVM rewrote after Surefire wrote it
  (from a shutdown hook, say) or wrote before it, or that something wrote after Surefire
  ended, does not match;
* nothing may follow the exit status the script writes last (a process the tests left
  behind, writing to the log);
* Maven's exit status must match the build: 0 with no failed mojo, non-zero with one (a
  failing test does not fail the build: Surefire runs with ``testFailureIgnore``, so every
  module's tests run even when another's fail);
* the canary planted in each module must have failed wherever the module reported tests
  (unless the watchdog stopped the module's JVM first): a forged all-pass report names it
  passed, or leaves it out;
* a test JVM that died on its own (``System.exit``, ``halt``, a crash) leaves reports
  nothing vouches for (code under test can write them, then exit): a module whose JVM
  crashed and that reported tests makes the run untrusted, as does a report of a class
  Surefire names as crashed. A JVM the watchdog stopped is not held against the run (its
  kill is the script's own record).

Outcomes: no child -> passed; ``failure`` or ``error`` (an assertion, or any exception the
test threw) -> failed; ``skipped`` -> skipped. Tests of a module whose main or test code did
not compile -> error, with the compiler's message. A test left running when the watchdog
stopped its JVM fails as timed out and is the run's ``died_in``; so is, with no time limit
involved, the first asked-for test of a class Surefire names as crashed (``System.exit``).
Surefire writes a class's report when the class ends, so the other tests of the class a
stopped JVM was running have no result, and a run with a stopped JVM is not ``finished``:
the caller runs what is left again without the test it hung in.
"""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Iterable, Mapping, Sequence

from repogym.layout import REPO_DIR
from repogym.schemas.records import Outcome, TestResult, TestRun
from repogym.toolchains.java.files import TEST_ROOT

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
    """One ``testcase`` of a report."""

    classname: str
    name: str
    outcome: Outcome
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
    case = Case(tc.get("classname", ""), tc.get("name", ""), Outcome.passed,
                duration=_seconds(tc.get("time", "0")))
    for child in tc:
        if child.tag in ("failure", "error", "flakyFailure", "flakyError", "rerunFailure",
                         "rerunError"):
            kind = child.get("type", "")
            case.outcome = Outcome.failed
            case.timed_out = case.timed_out or kind in _TIMEOUT_TYPES
            text = (child.text or "").strip() or f"{kind}: {child.get('message', '')}"
            case.message = case.message or text[:MESSAGE_CHARS]
        elif child.tag == "skipped" and case.outcome is Outcome.passed:
            case.outcome = Outcome.skipped
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
              dumps: Mapping[str, str], exit_code: int, duration: float, timed_out: bool,
              log_tail: str = "", expected: Sequence[str] = (),
              module_of: Mapping[str, str] | None = None) -> TestRun:
    """The run as its event log and reports say. ``dumps``: the thread dumps the watchdog
    took (by file name); ``expected``: the tests the run was asked for, and ``module_of``
    their files' modules (folders), so that tests of a module that did not build are
    errors and the test a crash or a kill stopped is named."""
    log = read_log(events, nonce)
    problems = list(dict.fromkeys(log.problems))
    files, clean = split_bundle(bundle)
    if not clean:
        problems.append("the reports could not be read back whole")
    results: dict[str, TestResult] = {}
    canaries: dict[int, Outcome | None] = {}
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
    return TestRun(results=results, exit_code=log.status if log.status is not None else exit_code,
                   duration=duration, timed_out=timed_out, collected=len(results),
                   collection_errors=tuple(errors), finished=_finished(log),
                   problems=tuple(dict.fromkeys(problems)), log_tail=log_tail, died_in=died_in)


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


def _merge(results: dict[str, TestResult], tid: str, case: Case) -> None:
    """A test reported twice keeps its worst outcome (a forged pass never hides a fail)."""
    old = results.get(tid)
    if old is not None and _rank(old.outcome) >= _rank(case.outcome):
        return
    results[tid] = TestResult(nodeid=tid, outcome=case.outcome, duration=case.duration,
                              message=case.message if case.outcome is not Outcome.passed else "",
                              timed_out=case.timed_out)


def _rank(outcome: Outcome | None) -> int:
    return {None: -1, Outcome.passed: 0, Outcome.skipped: 1}.get(outcome, 2)


def _worst(a: Outcome | None, b: Outcome) -> Outcome:
    return b if _rank(b) > _rank(a) else a  # type: ignore[return-value]


def _canary_problems(log: Log, results: Mapping[str, TestResult],
                     canaries: Mapping[int, Outcome | None], namer: Namer) -> list[str]:
    """Each module that reported tests ran its canary, which failed, and its test JVM
    did not die on its own (the watchdog may have stopped it)."""
    problems = []
    for module in log.modules.values():
        reported = any(_in_module(t, module, namer) for t in results)
        outcome = canaries.get(module.index)
        if outcome is not None and outcome is not Outcome.failed:
            problems.append(f"{module.dir}: tampered: the run's own failing test {outcome.value}")
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


def _build_errors(log: Log, results: dict[str, TestResult], expected: Sequence[str],
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
                results[tid] = TestResult(nodeid=tid, outcome=Outcome.error,
                                          message=message[:MESSAGE_CHARS])
    return errors


def _died(log: Log, results: dict[str, TestResult], expected: Sequence[str], namer: Namer,
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
                results[tid] = TestResult(
                    nodeid=tid, outcome=Outcome.failed, timed_out=True,
                    message=f"timed out: its JVM was stopped after {seconds}s in this test"
                            + (f"\n{found[2]}" if found else ""))
        elif "Crashed tests:" in module.crash:
            for cls in _crashed(module.crash):
                tid = _pick(module, cls, None, results, expected, namer)
                if tid is not None:
                    results[tid] = TestResult(nodeid=tid, outcome=Outcome.failed,
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


__all__ = ["Namer", "hung_test", "method_of", "parse_run", "read_cases", "split_id"]
