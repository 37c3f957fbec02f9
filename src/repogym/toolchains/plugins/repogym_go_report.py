"""Reading a Go test run: ``go tool test2json`` events per package, framed by markers that
carry the run's nonce. Standard library only: repogym's Go toolchain
(:mod:`repogym.toolchains.go.report`) reads its runs with it, and an exported task's
in-container grader (:mod:`repogym.datasets.exports.container_grader`) loads this file from
beside itself, so both read a run by the same rules.

The run script (:mod:`repogym.toolchains.go.script`) writes, for every package it tests,
a ``repogym-package`` marker, the package's test2json events, and a ``repogym-end`` marker
with the test binary's exit status (``repogym-build`` instead when the binary did not
build); a ``repogym-done`` marker closes the run. The events come from the test binary's
own output, so code under test can print forged ones; the markers it cannot forge (it
never sees the nonce), and a binary's exit status is checked against its events: a binary
that exits 0 ran no failing test, one that exits otherwise must show a failing test or a
build failure, or no test at all (a ``TestMain`` that exits first: the package's tests are
then errors, as when it does not build). When a binary dies (a panic, ``-test.timeout``),
the test it died in (:meth:`_Package.culprit`) fails and is the run's ``died_in``; the tests
running beside it (parallel ones) and those that never started have no outcome, and the run
is not ``finished``: the caller runs what is left again without the culprit
(:func:`repogym.toolchains.resume.run_to_end`), so a bug that panics in one test does not
make every test of its package fail. A canary planted in every package
(:attr:`repogym.toolchains.go.script.GoRun.canary_name`) must fail, in a binary that did
not exit 0.

:func:`read_events` returns plain data (:class:`Reading`)::

    {"results": {test id: {"outcome": "passed" | "failed" | "skipped" | "error",
                           "duration": seconds, "message": str, "timed_out": bool}},
     "collection_errors": [str], "finished": bool, "problems": [str],
     "died_in": test id | None, "failed": bool (a binary failed or did not build)}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence, TypedDict

MESSAGE_CHARS = 2000
OUTCOMES = {"pass": "passed", "fail": "failed", "skip": "skipped"}
CRASHES = ("panic: ", "fatal error: ")  # how a dying Go program starts its last words
PACKAGE, BUILD, END, DONE = ("repogym-package", "repogym-build", "repogym-end",
                             "repogym-done")


class Result(TypedDict):
    """One test's outcome in a run."""

    outcome: str  # passed, failed, skipped, error
    duration: float
    message: str
    timed_out: bool


class Reading(TypedDict):
    """A run as its events say (the module docstring)."""

    results: dict[str, Result]
    collection_errors: list[str]
    finished: bool
    problems: list[str]
    died_in: str | None
    failed: bool  # a test binary exited non-zero or did not build


@dataclass
class _Package:
    name: str
    dir: str
    index: int = 0  # the script's number for it (its build log is build-<index>.log)
    status: int | None = None  # the test binary's exit status (None: never ended)
    build_failed: bool = False
    outcomes: dict[str, str] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)  # output outside any test
    paused: set[str] = field(default_factory=set)  # at t.Parallel, waiting to go on

    def died(self) -> list[str]:
        """Tests that started and never ended."""
        return [t for t in self.started if t not in self.outcomes]

    def culprit(self, died: list[str]) -> str:
        """The test the binary died in: of those running (not paused at ``t.Parallel``),
        one whose own output shows the crash (``panic:``, a runtime ``fatal error:``),
        the innermost subtest first; else the first that started."""
        running = [t for t in died if t not in self.paused] or died
        crashed = [t for t in running
                   if any(line.startswith(CRASHES) for line in self.output.get(t, ()))]
        if crashed:
            return max(crashed, key=lambda t: t.count("/"))
        return running[0]

    def ended_before_tests(self) -> bool:
        """The binary exited non-zero before it started any test."""
        return bool(self.status) and not self.started and not self.outcomes

    def timed_out(self, test: str) -> bool:
        """Whether the binary died of its ``-test.timeout`` (the panic is printed in the
        running test's output or outside any test)."""
        return any("panic: test timed out after" in line
                   for line in (*self.tail, *self.output.get(test, ())))


class _Reading:
    """The events of one report, read in order."""

    def __init__(self, nonce: str) -> None:
        self.nonce = nonce
        self.packages: dict[str, _Package] = {}
        self.problems: list[str] = []
        self.done = False

    def read(self, text: str) -> None:
        for line in text.splitlines():
            event = _event(line)
            if event is None:
                continue
            action = str(event.get("Action", ""))
            if action.startswith("repogym-"):
                if event.get("Nonce") != self.nonce:
                    self.problems.append(f"a run marker without the run's nonce ({action})")
                    continue
                self.done = self._marker(action, event) or self.done
                continue
            pkg = self.packages.get(str(event.get("Package", "")))
            if pkg is None or pkg.status is not None:
                continue  # events outside their package's section: not this run's
            _apply(pkg, action, event)

    def _marker(self, action: str, event: dict[str, object]) -> bool:
        """Apply one of the run script's markers; True for the run's end."""
        name = str(event.get("Package", ""))
        pkg = self.packages.get(name)
        if action == PACKAGE:
            index = event.get("Index", 0)
            self.packages[name] = _Package(name, str(event.get("Dir", ".")),
                                           index if isinstance(index, int) else 0)
        elif action == BUILD and pkg is not None:
            pkg.build_failed = True
            pkg.status = int(str(event.get("Status", 1)))
        elif action == END and pkg is not None:
            pkg.status = int(str(event.get("Status", 1)))
        return action == DONE


def read_events(text: str, *, nonce: str, test_id: Callable[[str, str], str],
                build_logs: Mapping[str, str],
                expected: Mapping[str, Sequence[str]] | None = None,
                canary: str | None = None) -> Reading:
    """The run as its events say (the form of the module docstring). ``test_id(dir,
    name)`` names a test of the package in ``dir`` (``name``: ``TestX/sub``);
    ``build_logs``: a package's build output when its test binary did not build
    (:func:`failed_builds` says which); ``expected``: per folder, the tests the run was
    asked for (those of a package that did not build are errors, with its build output);
    ``canary``: the test planted in every package that must fail."""
    reading = _Reading(nonce)
    reading.read(text)
    problems = list(reading.problems)
    results: dict[str, Result] = {}
    died_in: str | None = None
    errors: list[str] = []
    for pkg in reading.packages.values():
        if pkg.build_failed:
            log = build_logs.get(pkg.name, "")
            errors.append(f"{pkg.dir}: {_first_lines(log)}")
            for tid in (expected or {}).get(pkg.dir, ()):
                results[tid] = _result("error", message=_message(log.splitlines(keepends=True)))
            continue
        if pkg.ended_before_tests():
            # TestMain (or an init) ended the binary before any test: the package's tests
            # did not run, as when it does not build (cespare/xxhash's TestMain exits when
            # it cannot build a plugin). Exit 0 stays tamper: the canary never failed
            errors.append(f"{pkg.dir}: the test binary exited {pkg.status} before any test "
                          f"ran: {_first_lines(''.join(pkg.tail))}")
            for tid in (expected or {}).get(pkg.dir, ()):
                results[tid] = _result("error", message=_message(pkg.tail))
            continue
        problems += _mismatch(pkg)
        if canary is not None:
            problems += _canary_problems(pkg, canary)
        for name, outcome in pkg.outcomes.items():
            results[test_id(pkg.dir, name)] = _result(
                outcome, pkg.durations.get(name, 0.0), _message(pkg.output.get(name, [])))
        died = pkg.died()
        if not died:
            continue
        culprit = pkg.culprit(died)
        died_in = died_in or test_id(pkg.dir, culprit)
        for name in died:
            if name == culprit or culprit.startswith(name + "/"):  # it, and its parents
                results[test_id(pkg.dir, name)] = _result(
                    "failed", message=_message(pkg.output.get(name, []) + pkg.tail),
                    timed_out=pkg.timed_out(name))
            # the others were only running beside it (parallel, or its parent's other
            # subtests): no outcome, so a caller that resumes runs them again without it
    dead = any(p.died() for p in reading.packages.values() if not p.build_failed)
    return {"results": results, "collection_errors": errors,
            "finished": reading.done and not dead,
            "problems": list(dict.fromkeys(problems)), "died_in": died_in,
            "failed": any(bool(p.status) or p.build_failed
                          for p in reading.packages.values())}


def failed_builds(text: str, nonce: str) -> dict[str, int]:
    """Package -> the script's number for it (its build log is ``build-<number>.log`` in
    the run's scratch folder), for every package whose test binary did not build."""
    reading = _Reading(nonce)
    reading.read(text)
    return {p.name: p.index for p in reading.packages.values() if p.build_failed}


def _result(outcome: str, duration: float = 0.0, message: str = "",
            timed_out: bool = False) -> Result:
    return {"outcome": outcome, "duration": duration, "message": message,
            "timed_out": timed_out}


def _event(line: str) -> dict[str, object] | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _apply(pkg: _Package, action: str, event: dict[str, object]) -> None:
    test = event.get("Test")
    output = event.get("Output")
    if not isinstance(test, str):
        if isinstance(output, str):
            pkg.tail.append(output)
        return
    if action == "run" and test not in pkg.started:
        pkg.started.append(test)
    elif action in OUTCOMES:
        # a test reported twice keeps its worst outcome (a forged pass never hides a fail)
        if pkg.outcomes.get(test) != "failed":
            pkg.outcomes[test] = OUTCOMES[action]
        elapsed = event.get("Elapsed")
        if isinstance(elapsed, (int, float)):
            pkg.durations[test] = float(elapsed)
    elif action == "output" and isinstance(output, str):
        pkg.output.setdefault(test, []).append(output)
    elif action == "pause":
        pkg.paused.add(test)
    elif action == "cont":
        pkg.paused.discard(test)


def _mismatch(pkg: _Package) -> list[str]:
    """What makes the package's events disagree with its binary's exit status."""
    if pkg.status is None:
        return [f"{pkg.dir}: the test binary's run never ended"]
    failed = any(o == "failed" for o in pkg.outcomes.values()) or bool(pkg.died())
    if pkg.status == 0 and failed:
        return [f"{pkg.dir}: failing tests reported by a test binary that exited 0"]
    if pkg.status != 0 and not failed:
        return [f"{pkg.dir}: the test binary exited {pkg.status} with no failing test"]
    return []


def _canary_problems(pkg: _Package, canary: str) -> list[str]:
    """The canary must have failed, in a binary that did not exit 0 (unless the binary died
    in a test before it); it is taken out of the results either way."""
    outcome = pkg.outcomes.pop(canary, None)
    if canary in pkg.started:
        pkg.started.remove(canary)
    if pkg.status is None or (pkg.died() and outcome is None):
        return []
    if outcome != "failed" or pkg.status == 0:
        return [f"{pkg.dir}: tampered: the test binary's own failing check "
                f"{'passed' if outcome else 'never reported'} (exit {pkg.status})"]
    return []


def _message(lines: list[str]) -> str:
    """The test's output, its last :data:`MESSAGE_CHARS` characters from a line's start
    (a line cut in the middle reads as another message: ``able/nest.toml":``).

    A test that crashed (``panic: ...``) keeps its crash's first line and first frames
    instead: the goroutine dump after it runs to thousands of characters, and its tail (the
    runtime's own frames) says nothing about what went wrong."""
    kept = [ln for ln in lines if not ln.lstrip().startswith(("=== ", "--- "))]
    text = "".join(kept).strip()
    if len(text) <= MESSAGE_CHARS:
        return text
    crash = min((i for i in (_line_start(text, c) for c in CRASHES) if i >= 0), default=-1)
    if crash >= 0:
        said = _tail(text[:crash].strip(), MESSAGE_CHARS // 4)
        head = text[crash:crash + MESSAGE_CHARS - len(said) - 1]
        if crash + len(head) < len(text) and "\n" in head:
            head = head[:head.rfind("\n")]  # whole lines only
        return f"{said}\n{head}" if said else head
    return _tail(text, MESSAGE_CHARS)


def _line_start(text: str, prefix: str) -> int:
    """Where the first line starting with ``prefix`` starts (-1: none)."""
    if text.startswith(prefix):
        return 0
    at = text.find("\n" + prefix)
    return at + 1 if at >= 0 else -1


def _tail(text: str, chars: int) -> str:
    """The last ``chars`` characters of ``text``, from a line's start."""
    if len(text) <= chars:
        return text
    tail = text[-chars:]
    cut = tail.find("\n")
    return tail[cut + 1:] if 0 <= cut < len(tail) - 1 else tail


def _first_lines(text: str, n: int = 6) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[:n])


__all__ = ["MESSAGE_CHARS", "Reading", "Result", "failed_builds", "read_events"]
