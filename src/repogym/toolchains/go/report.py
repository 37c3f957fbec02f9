"""Reading a Go test run: ``go tool test2json`` events per package, framed by markers that
carry the run's nonce.

The run script (:mod:`~repogym.toolchains.go.script`) writes, for every package it tests,
a ``repogym-package`` marker, the package's test2json events, and a ``repogym-end`` marker
with the test binary's exit status; a ``repogym-done`` marker closes the run. The events
come from the test binary's own output, so code under test can print forged ones; the
markers it cannot forge (it never sees the nonce), and a binary's exit status is checked
against its events: a binary that exits 0 ran no failing test, one that exits otherwise
must show a failing test or a build failure. A test left running when its binary died
(a panic, ``-test.timeout``) fails, and the first such test is the run's ``died_in``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from repogym.schemas.records import Outcome, TestResult, TestRun

MESSAGE_CHARS = 2000
_OUTCOMES = {"pass": Outcome.passed, "fail": Outcome.failed, "skip": Outcome.skipped}


@dataclass
class _Package:
    name: str
    dir: str
    status: int | None = None  # the test binary's exit status (None: never ended)
    build_failed: bool = False
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)  # output outside any test

    def died(self) -> list[str]:
        """Tests that started and never ended."""
        return [t for t in self.started if t not in self.outcomes]

    def timed_out(self, test: str) -> bool:
        """Whether the binary died of its ``-test.timeout`` (the panic is printed in the
        running test's output or outside any test)."""
        return any("panic: test timed out after" in line
                   for line in (*self.tail, *self.output.get(test, ())))


def parse_events(text: str, *, nonce: str, test_id: Callable[[str, str], str],
                 build_logs: dict[str, str], exit_code: int, duration: float,
                 timed_out: bool, log_tail: str = "",
                 expected: Mapping[str, Sequence[str]] | None = None,
                 canary: str | None = None) -> TestRun:
    """The run as its events say. ``test_id(dir, name)`` names a test of the package in
    ``dir`` (``name``: ``TestX/sub``); ``build_logs``: a package's build output when its
    test binary did not build; ``expected``: per folder, the tests the run was asked for
    (those of a package that did not build are errors, with its build output);
    ``canary``: the test planted in every package that must fail (see
    :attr:`~repogym.toolchains.go.script.GoRun.canary_name`)."""
    packages: dict[str, _Package] = {}
    problems: list[str] = []
    done = False
    for line in text.splitlines():
        event = _event(line)
        if event is None:
            continue
        action = str(event.get("Action", ""))
        if action.startswith("repogym-"):
            if event.get("Nonce") != nonce:
                problems.append(f"a run marker without the run's nonce ({action})")
                continue
            done = _marker(action, event, packages) or done
            continue
        pkg = packages.get(str(event.get("Package", "")))
        if pkg is None or pkg.status is not None:
            continue  # events outside their package's section: not this run's
        _apply(pkg, action, event)
    results: dict[str, TestResult] = {}
    died_in: str | None = None
    errors: list[str] = []
    for pkg in packages.values():
        if pkg.build_failed:
            log = build_logs.get(pkg.name, "")
            errors.append(f"{pkg.dir}: {_first_lines(log)}")
            for tid in (expected or {}).get(pkg.dir, ()):
                results[tid] = TestResult(nodeid=tid, outcome=Outcome.error,
                                          message=_message(log.splitlines(keepends=True)))
            continue
        problems += _mismatch(pkg)
        if canary is not None:
            problems += _canary_problems(pkg, canary)
        for name, outcome in pkg.outcomes.items():
            tid = test_id(pkg.dir, name)
            results[tid] = TestResult(nodeid=tid, outcome=outcome,
                                      duration=pkg.durations.get(name, 0.0),
                                      message=_message(pkg.output.get(name, [])))
        for name in pkg.died():
            tid = test_id(pkg.dir, name)
            died_in = died_in or tid
            lines = pkg.output.get(name, []) + pkg.tail
            results[tid] = TestResult(nodeid=tid, outcome=Outcome.failed,
                                      message=_message(lines), timed_out=pkg.timed_out(name))
    return TestRun(results=results, exit_code=exit_code if exit_code else int(
        any(p.status or p.build_failed for p in packages.values())), duration=duration,
        timed_out=timed_out, collected=len(results), collection_errors=tuple(errors),
        finished=done, problems=tuple(dict.fromkeys(problems)), log_tail=log_tail,
        died_in=died_in)


def _event(line: str) -> dict[str, object] | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _marker(action: str, event: dict[str, object], packages: dict[str, _Package]) -> bool:
    """Apply one of the run script's markers; True for the run's end."""
    name = str(event.get("Package", ""))
    if action == "repogym-package":
        packages[name] = _Package(name, str(event.get("Dir", ".")))
    elif action == "repogym-build" and name in packages:
        packages[name].build_failed = True
        packages[name].status = int(str(event.get("Status", 1)))
    elif action == "repogym-end" and name in packages:
        packages[name].status = int(str(event.get("Status", 1)))
    return action == "repogym-done"


def _apply(pkg: _Package, action: str, event: dict[str, object]) -> None:
    test = event.get("Test")
    output = event.get("Output")
    if not isinstance(test, str):
        if isinstance(output, str):
            pkg.tail.append(output)
        return
    if action == "run" and test not in pkg.started:
        pkg.started.append(test)
    elif action in _OUTCOMES:
        # a test reported twice keeps its worst outcome (a forged pass never hides a fail)
        if pkg.outcomes.get(test) is not Outcome.failed:
            pkg.outcomes[test] = _OUTCOMES[action]
        elapsed = event.get("Elapsed")
        if isinstance(elapsed, (int, float)):
            pkg.durations[test] = float(elapsed)
    elif action == "output" and isinstance(output, str):
        pkg.output.setdefault(test, []).append(output)


def _mismatch(pkg: _Package) -> list[str]:
    """What makes the package's events disagree with its binary's exit status."""
    if pkg.status is None:
        return [f"{pkg.dir}: the test binary's run never ended"]
    failed = any(o is Outcome.failed for o in pkg.outcomes.values()) or bool(pkg.died())
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
    if outcome is not Outcome.failed or pkg.status == 0:
        return [f"{pkg.dir}: tampered: the test binary's own failing check "
                f"{'passed' if outcome else 'never reported'} (exit {pkg.status})"]
    return []


def _message(lines: list[str]) -> str:
    kept = [ln for ln in lines if not ln.lstrip().startswith(("=== ", "--- "))]
    return "".join(kept).strip()[-MESSAGE_CHARS:]


def _first_lines(text: str, n: int = 6) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[:n])


__all__ = ["parse_events"]
