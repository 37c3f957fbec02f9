"""ava's TAP output (ava has no reporter API): test points into a :class:`TestRun`.

``ava --tap`` prints a flat TAP 13 stream: ``ok N - [prefix › ]title [# SKIP|# TODO]``, a
YAML block after a failure, then ``1..N`` and ``# tests/pass/fail``. With several files each
title is prefixed with its file, transformed (``.test.``, ``.spec.``, ``test-`` and the
extension dropped, ``__tests__`` dropped, the files' common folder left out). A file that
crashes gives ``not ok N - <error>`` and ``not ok N - FILE exited with a non-zero exit code``.

TAP is not signed. Tests run with ``--no-worker-threads`` (child processes, whose output
ava relays to stderr, never into the TAP stream), and a run is believed only when its test
points are numbered 1, 2, 3... with nothing repeated, its plan line matches their count,
``# pass`` / ``# fail`` agree with them, and the exit code is 0 exactly when nothing failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from repogym.schemas.records import Outcome, TestResult, TestRun
from repogym.toolchains.javascript.report import MESSAGE_CHARS, test_id

SEP = " \u203a "
_POINT = re.compile(r"^(not ok|ok) (\d+) - (.*?)(?: # (SKIP|TODO)\b.*)?$")
_EXITED = re.compile(r"^(.*) exited with a non-zero exit code: (\d+)$")
_COUNT = re.compile(r"^# (pass|fail) (\d+)$")
# what ava says when a file crashes (no test): "Error [ERR_X]: ...", "Uncaught exception in"
_CRASH = re.compile(r"^(?:[A-Z]\w*)?(?:Error|Exception)(?: \[[A-Z_0-9]+\])?: |"
                    r"^(?:Uncaught exception|Unhandled rejection) in |^No tests found in ")


def ava_title_prefixes(files: list[str]) -> dict[str, str]:
    """ava's title prefix of each file -> the file (no prefix when one file runs)."""
    if len(files) <= 1:
        return {}
    common = files[0].split("/")[:-1]
    for f in files[1:]:
        d = f.split("/")[:-1]
        i = 0
        while i < min(len(common), len(d)) and common[i] == d[i]:
            i += 1
        common = common[:i]
    out = {}
    for f in files:
        parts = [p for p in f.split("/")[len(common):] if p != "__tests__"]
        name = parts.pop().replace(".spec.", ".", 1).replace(".test.", ".", 1)
        name = re.sub(r"^test-", "", name)
        name = re.sub(r"\.[cm]?[jt]sx?$", "", name)
        out[SEP.join([*parts, name])] = f
    return out


@dataclass
class _Tap:
    files: list[str]
    results: dict[str, TestResult] = field(default_factory=dict)
    file_errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    plan: int | None = None
    points: int = 0
    crashes: int = 0

    def read(self, text: str) -> None:
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if line.startswith("1..") and line[3:].isdigit():
                self.plan = int(line[3:])
            elif (m := _COUNT.match(line)) is not None:
                self.counts[m.group(1)] = int(m.group(2))
            elif (m := _POINT.match(line)) is not None:
                block, i = _yaml(lines, i)
                self.point(m, block)

    def point(self, m: re.Match[str], message: str) -> None:
        ok, number, title, directive = m.group(1) == "ok", int(m.group(2)), m.group(3), m.group(4)
        self.points += 1
        if number != self.points:
            self.problems.append(f"TAP test point {number} out of sequence (expected "
                                 f"{self.points})")
        if not ok and (e := _EXITED.match(title)) is not None:
            self.file_errors.append(f"{e.group(1)}: {title}")
            self.crashes += 1
            return
        if not ok and not directive and _CRASH.match(title):
            self.file_errors.append(f"{title}\n{message}"[:MESSAGE_CHARS])
            self.crashes += 1
            return
        file, name = self._split(title)
        if file is None:
            if not ok and not directive:  # a crash with no test: "SyntaxError: ..."
                self.file_errors.append(f"{title}\n{message}"[:MESSAGE_CHARS])
                self.crashes += 1
                return
            file = self.files[0] if self.files else ""
        outcome = {"SKIP": Outcome.skipped, "TODO": Outcome.skipped}.get(
            directive or "", Outcome.passed if ok else Outcome.failed)
        nodeid = test_id(file, [name])
        if nodeid in self.results:
            self.problems.append(f"TAP names the test {nodeid!r} twice")
        self.results[nodeid] = TestResult(
            nodeid=nodeid, outcome=outcome,
            message=message[:MESSAGE_CHARS] if outcome is Outcome.failed else "",
            timed_out="Timed out" in message or "timed out" in message)

    def _split(self, title: str) -> tuple[str | None, str]:
        prefixes = ava_title_prefixes(self.files)
        if not prefixes:
            return (self.files[0] if len(self.files) == 1 else None), title
        for prefix, file in sorted(prefixes.items(), key=lambda kv: -len(kv[0])):
            if title.startswith(prefix + SEP):
                return file, title[len(prefix) + len(SEP):]
        return None, title


def _yaml(lines: list[str], i: int) -> tuple[str, int]:
    """The YAML block (``  ---`` ... ``  ...``) at ``lines[i]``, if any, and where it ends."""
    if i >= len(lines) or lines[i] != "  ---":
        return "", i
    out = []
    i += 1
    while i < len(lines) and lines[i] != "  ...":
        out.append(lines[i][4:])
        i += 1
    return "\n".join(out).strip(), i + 1


def parse_tap(text: str, files: list[str], *, exit_code: int, duration: float,
              timed_out: bool = False, log_tail: str = "") -> TestRun:
    """A :class:`TestRun` from ``ava --tap`` output (see the module docstring); ``files``: the
    test files the run named (ava's title prefixes are undone with them)."""
    tap = _Tap(files)
    tap.read(text)
    finished = tap.plan is not None and not timed_out
    problems = list(tap.problems)
    if finished:
        tests = tap.points - tap.crashes
        failing = sum(1 for r in tap.results.values() if r.outcome is Outcome.failed)
        passing = sum(1 for r in tap.results.values() if r.outcome is Outcome.passed)
        if tap.plan != tests:
            problems.append(f"TAP plan 1..{tap.plan} but {tests} test point(s)")
        if "fail" in tap.counts and tap.counts["fail"] != failing + tap.crashes:
            problems.append(f"ava counted {tap.counts['fail']} failure(s), the points "
                            f"{failing + tap.crashes}")
        if (exit_code == 0) == bool(failing or tap.file_errors):
            problems.append(f"ava exited {exit_code} with {failing} failing test(s) and "
                            f"{len(tap.file_errors)} crashed file(s)")
        if "pass" in tap.counts and tap.counts["pass"] < passing:
            problems.append(f"ava counted {tap.counts['pass']} passing, the points {passing}")
    return TestRun(results=tap.results, exit_code=exit_code, duration=duration,
                   timed_out=timed_out, collected=len(tap.results),
                   collection_errors=tuple(tap.file_errors), finished=finished,
                   problems=tuple(problems), log_tail=log_tail)


__all__ = ["ava_title_prefixes", "parse_tap"]
