"""Reading a Rust test run: libtest's JSON events per test binary, framed by markers that
carry the run's nonce.

The runner (:mod:`~repogym.toolchains.rust.runner`) writes a ``build`` marker per cargo
invocation (its exit status and the end of its output), a ``target`` marker per target it
built (its root file, module tree and compile errors), then for every binary it runs a
``binary`` marker, the binary's own output and an ``end`` marker with its exit status;
``done`` closes the run.

The events come from the test binary's output, so code under test can print forged ones;
the markers it cannot forge (it never sees the nonce). A test reported twice keeps its
worst outcome. A binary's exit status is checked against its events: one that exits 0 ran
no failing test, one that exits otherwise must show a failing test or a test it died in.
A test that started and never ended (the binary was killed at its limit, aborted,
overflowed its stack) fails, and the first such test is the run's ``died_in``. When the
run planted a canary (a test that must fail, compiled in and invisible to the code under
test until it runs), a binary that exits 0, or whose events lack the canary's failure, was
tampered with.

Test ids are ``<file>::<libtest name>``: the file holding the test's module (the crate's
module tree maps ``parser::tests::parses`` to ``src/parser.rs``), then the name libtest
prints; a binary built with ``harness = false`` is one test, ``<root file>::main``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from repogym.schemas.records import Outcome, TestResult, TestRun
from repogym.toolchains.rust.scan import file_of

MESSAGE_CHARS = 2000
HARNESSLESS = "main"  # the test name of a binary without libtest
_OUTCOMES = {"ok": Outcome.passed, "failed": Outcome.failed, "ignored": Outcome.skipped}


@dataclass
class _Target:
    key: str
    root: str
    mods: dict[str, str]
    harness: bool = True
    canary: bool = False
    built: bool = True
    errors: str = ""

    @property
    def files(self) -> set[str]:
        return set(self.mods.values()) | {self.root}

    def test_id(self, name: str) -> str:
        return f"{file_of(self.mods, name) or self.root}::{name}"


@dataclass
class _Binary:
    target: _Target
    status: int | None = None  # its exit status (None: never ended)
    killed: bool = False  # at its time limit
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)  # output outside libtest's events

    def died(self) -> list[str]:
        """Tests that started and never ended."""
        return [t for t in self.started if t not in self.outcomes]


@dataclass
class _Read:
    """Everything the report's lines say, before it becomes a :class:`TestRun`."""

    targets: dict[str, _Target] = field(default_factory=dict)
    binaries: list[_Binary] = field(default_factory=list)
    builds: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    done: bool = False


def parse_report(text: str, *, nonce: str, exit_code: int, duration: float,
                 timed_out: bool, log_tail: str = "", expected: Sequence[str] = (),
                 canary: str | None = None) -> TestRun:
    """The run as its report says. ``expected``: the tests the run was asked for (those
    of a target that did not build are errors, with its compile errors); ``canary``: the
    test planted in the binaries the ``target`` markers say (see the module doc)."""
    read = _read(text, nonce)
    results: dict[str, TestResult] = {}
    errors: list[str] = []
    died_in: str | None = None
    _build_failures(read, expected, results, errors)
    for binary in read.binaries:
        if binary.target.harness:
            read.problems += _mismatch(binary)
            if canary is not None and binary.target.canary:
                read.problems += _canary_problems(binary, canary)
        first = _binary_results(binary, results)
        died_in = died_in or first
    failed = any(b.status for b in read.binaries) or any(
        b.get("status") for b in read.builds)
    return TestRun(results=results, exit_code=exit_code if exit_code else int(failed),
                   duration=duration, timed_out=timed_out, collected=len(results),
                   collection_errors=tuple(errors), finished=read.done,
                   problems=tuple(dict.fromkeys(read.problems)), log_tail=log_tail,
                   died_in=died_in)


def _read(text: str, nonce: str) -> _Read:
    out = _Read()
    current: _Binary | None = None
    for line in text.splitlines():
        obj = _json(line)
        if obj is not None and "repogym" in obj:
            if obj.get("nonce") != nonce:
                out.problems.append(f"a run marker without the run's nonce ({obj['repogym']})")
                continue
            current = _marker(out, obj, current)
        elif current is not None and current.status is None:
            if obj is not None and obj.get("type") == "test":
                _apply(current, obj)
            elif obj is None or "type" not in obj:
                current.tail.append(line + "\n")
    return out


def _json(line: str) -> dict[str, Any] | None:
    """The JSON object a line holds (a marker or an event), even after stray output."""
    for start in (line.find('{"repogym"'), line.find('{ "type"'), line.find("{")):
        if start < 0:
            continue
        try:
            obj = json.loads(line[start:])
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _marker(out: _Read, obj: dict[str, Any], current: _Binary | None) -> _Binary | None:
    """Apply one of the runner's markers; the binary whose output follows."""
    action = obj["repogym"]
    if action == "build":
        out.builds.append(obj)
    elif action == "target":
        out.targets[str(obj["key"])] = _Target(
            key=str(obj["key"]), root=str(obj.get("root", "")),
            mods={str(k): str(v) for k, v in dict(obj.get("mods") or {}).items()},
            harness=bool(obj.get("harness", True)), canary=bool(obj.get("canary")),
            built=bool(obj.get("built")), errors=str(obj.get("errors", "")))
    elif action == "binary" and str(obj.get("key")) in out.targets:
        current = _Binary(out.targets[str(obj["key"])])
        out.binaries.append(current)
        return current
    elif action == "end" and current is not None and obj.get("key") == current.target.key:
        current.status = int(obj.get("status", 1))
        current.killed = bool(obj.get("killed"))
        return None
    elif action == "done":
        out.done = True
    return current


def _apply(binary: _Binary, event: dict[str, Any]) -> None:
    name, kind = event.get("name"), event.get("event")
    if not isinstance(name, str):
        return
    if kind == "started":
        if name not in binary.started:
            binary.started.append(name)
    elif kind in _OUTCOMES:
        # a test reported twice keeps its worst outcome (a forged pass never hides a fail)
        if binary.outcomes.get(name) is not Outcome.failed:
            binary.outcomes[name] = _OUTCOMES[str(kind)]
        if isinstance(event.get("exec_time"), (int, float)):
            binary.durations[name] = float(event["exec_time"])
        text = "".join(str(event.get(k) or "") for k in ("stdout", "message"))
        if text:
            binary.output.setdefault(name, []).append(text)


def _build_failures(read: _Read, expected: Sequence[str], results: dict[str, TestResult],
                    errors: list[str]) -> None:
    """The asked tests of targets that did not build are errors; so are all of them when
    the run could not even read the workspace."""
    placed: set[str] = set()
    for target in read.targets.values():
        if target.built:
            continue
        why = target.errors or _build_log(read)
        errors.append(f"{target.root}: {_first_lines(why)}")
        for test in expected:
            if test.partition("::")[0] in target.files:
                placed.add(test)
                results[test] = TestResult(nodeid=test, outcome=Outcome.error,
                                           message=why.strip()[-MESSAGE_CHARS:])
    survey = next((b for b in read.builds if b.get("survey")), None)
    if survey is not None:
        log = str(survey.get("log", ""))
        errors.append(f"cargo metadata: {_first_lines(log)}")
        for test in expected:
            if test not in placed:
                results[test] = TestResult(nodeid=test, outcome=Outcome.error,
                                           message=log.strip()[-MESSAGE_CHARS:])


def _build_log(read: _Read) -> str:
    return "\n".join(str(b.get("log", "")) for b in read.builds if b.get("status"))


def _binary_results(binary: _Binary, results: dict[str, TestResult]) -> str | None:
    """The binary's tests into ``results`` (a test of two binaries keeps its worst
    outcome); the first test it died in."""
    target = binary.target
    if not target.harness:
        tid = f"{target.root}::{HARNESSLESS}"
        outcome = Outcome.passed if binary.status == 0 else Outcome.failed
        _put(results, TestResult(nodeid=tid, outcome=outcome, timed_out=binary.killed,
                                 message="" if binary.status == 0 else _message(binary.tail)))
        return tid if binary.status is None or binary.killed else None
    for name, outcome in binary.outcomes.items():
        _put(results, TestResult(nodeid=target.test_id(name), outcome=outcome,
                                 duration=binary.durations.get(name, 0.0),
                                 message=_message(binary.output.get(name, []))
                                 if outcome is Outcome.failed else ""))
    died = binary.died()
    for name in died:
        _put(results, TestResult(nodeid=target.test_id(name), outcome=Outcome.failed,
                                 timed_out=binary.killed,
                                 message=_message(binary.tail) or _how_it_ended(binary)))
    return target.test_id(died[0]) if died else None


def _put(results: dict[str, TestResult], result: TestResult) -> None:
    old = results.get(result.nodeid)
    if old is None or old.outcome is not Outcome.failed:
        results[result.nodeid] = result


def _how_it_ended(binary: _Binary) -> str:
    if binary.killed:
        return "killed at its time limit"
    if binary.status is None:
        return "the run ended while it ran"
    return f"the test binary died (exit status {binary.status})"


def _mismatch(binary: _Binary) -> list[str]:
    """What makes a binary's events disagree with its exit status."""
    root = binary.target.root
    if binary.status is None:
        return [f"{root}: the test binary's run never ended"]
    failed = any(o is Outcome.failed for o in binary.outcomes.values()) or bool(binary.died())
    if binary.status == 0 and failed:
        return [f"{root}: failing tests reported by a test binary that exited 0"]
    if binary.status != 0 and not failed:
        return [f"{root}: the test binary exited {binary.status} with no failing test"]
    return []


def _canary_problems(binary: _Binary, canary: str) -> list[str]:
    """The canary must have failed, in a binary that did not exit 0 (unless the binary
    died in a test before it); it is taken out of the results either way."""
    outcome = binary.outcomes.pop(canary, None)
    binary.output.pop(canary, None)
    if canary in binary.started:
        binary.started.remove(canary)
    if binary.status is None or (binary.died() and outcome is None):
        return []
    if outcome is not Outcome.failed or binary.status == 0:
        return [f"{binary.target.root}: tampered: the test binary's own failing check "
                f"{'passed' if outcome else 'never reported'} (exit {binary.status})"]
    return []


def _message(lines: list[str]) -> str:
    return "".join(lines).strip()[-MESSAGE_CHARS:]


def _first_lines(text: str, n: int = 6) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[:n])


__all__ = ["HARNESSLESS", "parse_report"]
