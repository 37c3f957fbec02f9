"""Reading a Rust test run: libtest's JSON events per test binary, framed by markers that
carry the run's nonce. Standard library only: repogym's Rust toolchain
(:mod:`repogym.toolchains.rust.report`) reads its runs with it, and an exported task's
in-container grader (:mod:`repogym.datasets.exports.container_grader`) loads this file from
beside itself, so both read a run by the same rules.

The runner (:mod:`repogym.toolchains.rust.runner`) writes a ``build`` marker per cargo
invocation (its exit status and the end of its output), a ``target`` marker per target it
built (its root file, module tree and compile errors), then for every binary it runs a
``binary`` marker, the binary's own output and an ``end`` marker with its exit status;
``done`` closes the run.

The events come from the test binary's output, so code under test can print forged ones;
the markers it cannot forge (it never sees the nonce). A test reported twice keeps its
worst outcome. A binary's exit status is checked against its events: one that exits 0 ran
no failing test, one that exits otherwise must show a failing test or a test it died in.
A test that started and never ended (the binary was killed at its limit, aborted,
overflowed its stack) fails, and the first such test is the run's ``died_in``; the tests
after it in its binary never ran, so the run is not ``finished``: the caller runs what is
left again without it (:func:`repogym.toolchains.resume.run_to_end`). When the
run planted a canary (a test that must fail, compiled in and invisible to the code under
test until it runs), a binary that exits 0, or whose events lack the canary's failure, was
tampered with.

Test ids are ``<file>::<libtest name>``: the file holding the test's module (``file_of``
maps ``parser::tests::parses`` to ``src/parser.rs`` through the crate's module tree the
``target`` marker carries: :func:`repogym.toolchains.rust.scan.file_of`), then the name
libtest prints; a binary built with ``harness = false`` is one test, ``<root file>::main``.

:func:`read_report` returns plain data (:class:`Reading`)::

    {"results": {test id: {"outcome": "passed" | "failed" | "skipped" | "error",
                           "duration": seconds, "message": str, "timed_out": bool}},
     "collection_errors": [str], "finished": bool, "problems": [str],
     "died_in": test id | None, "failed": bool (a binary or a cargo invocation failed)}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypedDict

MESSAGE_CHARS = 2000
HARNESSLESS = "main"  # the test name of a binary without libtest
OUTCOMES = {"ok": "passed", "failed": "failed", "ignored": "skipped"}
FileOf = Callable[[dict[str, str], str], str]  # (module tree, libtest name) -> its file


class Result(TypedDict):
    """One test's outcome in a run."""

    outcome: str  # passed, failed, skipped, error
    duration: float
    message: str
    timed_out: bool


class Reading(TypedDict):
    """A run as its report says (the module docstring)."""

    results: dict[str, Result]
    collection_errors: list[str]
    finished: bool
    problems: list[str]
    died_in: str | None
    failed: bool  # a test binary exited non-zero, or a cargo invocation failed


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


@dataclass
class _Binary:
    target: _Target
    status: int | None = None  # its exit status (None: never ended)
    killed: bool = False  # at its time limit
    outcomes: dict[str, str] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)  # output outside libtest's events

    def died(self) -> list[str]:
        """Tests that started and never ended."""
        return [t for t in self.started if t not in self.outcomes]


@dataclass
class _Read:
    """Everything the report's lines say."""

    targets: dict[str, _Target] = field(default_factory=dict)
    binaries: list[_Binary] = field(default_factory=list)
    builds: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    done: bool = False


def read_report(text: str, *, nonce: str, file_of: FileOf, expected: Sequence[str] = (),
                canary: str | None = None) -> Reading:
    """The run as its report says (the form of the module docstring). ``file_of``: the
    file of a libtest name in a module tree; ``expected``: the tests the run was asked for
    (those of a target that did not build are errors, with its compile errors);
    ``canary``: the test planted in the binaries the ``target`` markers say."""
    read = _read(text, nonce)
    results: dict[str, Result] = {}
    errors: list[str] = []
    died_in: str | None = None
    _build_failures(read, expected, results, errors)
    for binary in read.binaries:
        if binary.target.harness:
            read.problems += _mismatch(binary)
            if canary is not None and binary.target.canary:
                read.problems += _canary_problems(binary, canary)
        first = _binary_results(binary, results, file_of)
        died_in = died_in or first
    failed = any(b.status for b in read.binaries) or any(b.get("status") for b in read.builds)
    dead = any(b.died() for b in read.binaries if b.target.harness)
    return {"results": results, "collection_errors": errors,
            "finished": read.done and not dead,
            "problems": list(dict.fromkeys(read.problems)), "died_in": died_in,
            "failed": bool(failed)}


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
    elif kind in OUTCOMES:
        # a test reported twice keeps its worst outcome (a forged pass never hides a fail)
        if binary.outcomes.get(name) != "failed":
            binary.outcomes[name] = OUTCOMES[str(kind)]
        if isinstance(event.get("exec_time"), (int, float)):
            binary.durations[name] = float(event["exec_time"])
        text = "".join(str(event.get(k) or "") for k in ("stdout", "message"))
        if text:
            binary.output.setdefault(name, []).append(text)


def _result(outcome: str, duration: float = 0.0, message: str = "",
            timed_out: bool = False) -> Result:
    return {"outcome": outcome, "duration": duration, "message": message,
            "timed_out": timed_out}


def _build_failures(read: _Read, expected: Sequence[str], results: dict[str, Result],
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
                results[test] = _result("error", message=why.strip()[-MESSAGE_CHARS:])
    survey = next((b for b in read.builds if b.get("survey")), None)
    if survey is not None:
        log = str(survey.get("log", ""))
        errors.append(f"cargo metadata: {_first_lines(log)}")
        for test in expected:
            if test not in placed:
                results[test] = _result("error", message=log.strip()[-MESSAGE_CHARS:])


def _build_log(read: _Read) -> str:
    return "\n".join(str(b.get("log", "")) for b in read.builds if b.get("status"))


def _test_id(target: _Target, name: str, file_of: FileOf) -> str:
    return f"{file_of(target.mods, name) or target.root}::{name}"


def _binary_results(binary: _Binary, results: dict[str, Result],
                    file_of: FileOf) -> str | None:
    """The binary's tests into ``results`` (a test of two binaries keeps its worst
    outcome); the first test it died in."""
    target = binary.target
    if not target.harness:
        tid = f"{target.root}::{HARNESSLESS}"
        ok = binary.status == 0
        _put(results, tid, _result("passed" if ok else "failed", timed_out=binary.killed,
                                   message="" if ok else _message(binary.tail)))
        return tid if binary.status is None or binary.killed else None
    for name, outcome in binary.outcomes.items():
        _put(results, _test_id(target, name, file_of), _result(
            outcome, binary.durations.get(name, 0.0),
            _message(binary.output.get(name, [])) if outcome == "failed" else ""))
    died = binary.died()
    for name in died:
        _put(results, _test_id(target, name, file_of), _result(
            "failed", timed_out=binary.killed,
            message=_message(binary.tail) or _how_it_ended(binary)))
    return _test_id(target, died[0], file_of) if died else None


def _put(results: dict[str, Result], tid: str, result: Result) -> None:
    old = results.get(tid)
    if old is None or old["outcome"] != "failed":
        results[tid] = result


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
    failed = any(o == "failed" for o in binary.outcomes.values()) or bool(binary.died())
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
    if outcome != "failed" or binary.status == 0:
        return [f"{binary.target.root}: tampered: the test binary's own failing check "
                f"{'passed' if outcome else 'never reported'} (exit {binary.status})"]
    return []


def _message(lines: list[str]) -> str:
    return "".join(lines).strip()[-MESSAGE_CHARS:]


def _first_lines(text: str, n: int = 6) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[:n])


__all__ = ["HARNESSLESS", "MESSAGE_CHARS", "Reading", "Result", "read_report"]
