"""The report every JavaScript runner writes through repogym's reporter, and how a run is
read from it.

Each runner gets a reporter of its own (``reporters/``) that appends JSON lines to a file
at an unguessable path, every line carrying the run's nonce:

==============  =========================================================================
``start``       the reporter is loaded: ``runner``, ``version``
``begin``       a test starts: ``id`` (the test that was running when a run died)
``test``        a test finished: ``id``, ``file``, ``titles``, ``outcome`` (passed, failed,
                skipped, todo), ``duration`` (s), ``message``, ``timed_out``
``file_error``  a test file could not be loaded or run: ``file``, ``message``
``finish``      the run reached its end: ``passed``, ``failed``, ``skipped``, ``errors``
==============  =========================================================================

A test's id is ``path/of/file.test.ts > describe > test``: the file relative to the
repository, then its titles. Two tests with the same id in one file get ``[2]``, ``[3]``
in run order.

The nonce is never written: the ``finish`` line carries ``mac``, the HMAC-SHA256 (keyed with
the nonce) of the hex SHA-256 of every byte before that line. Code under test that reads the
report learns nothing to sign with, and a line it adds, removes or rewrites breaks the MAC.

A run is trusted (:attr:`TestRun.trusted`) when the ``finish`` line came with a valid MAC,
nothing follows it, and the runner's exit code agrees with what the report says: zero
exactly when nothing failed and every file loaded.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field

from repogym.schemas.records import Outcome, TestResult, TestRun

SEPARATOR = " > "
MESSAGE_CHARS = 4000
_OUTCOMES = {"passed": Outcome.passed, "failed": Outcome.failed, "skipped": Outcome.skipped,
             "pending": Outcome.skipped, "todo": Outcome.skipped, "disabled": Outcome.skipped,
             "error": Outcome.error}


def test_id(file: str, titles: list[str] | tuple[str, ...]) -> str:
    """``file > title > ...`` (titles' own line breaks folded)."""
    return SEPARATOR.join([file, *(" ".join(str(t).split()) for t in titles)])


def split_id(test: str) -> tuple[str, list[str]]:
    """The file and the titles of a test id (the inverse of :func:`test_id`, without the
    ``[n]`` of a repeated name)."""
    file, *titles = test.split(SEPARATOR)
    if titles and titles[-1].endswith("]") and " [" in titles[-1]:
        head, _, count = titles[-1].rpartition(" [")
        if count[:-1].isdigit():
            titles[-1] = head
    return file, titles


@dataclass
class _Reading:
    nonce: str
    results: dict[str, TestResult] = field(default_factory=dict)
    file_errors: list[str] = field(default_factory=list)
    running: str | None = None
    finished: bool = False
    forged: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    exit_code_checked: bool = True  # False: the runner's exit code says nothing (uvu 0.3)
    _hash: "hashlib._Hash" = field(default_factory=hashlib.sha256)

    def line(self, raw: bytes) -> None:
        if self.finished:
            self.forged.append("report lines after its finish line")
            return
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        if isinstance(event, dict) and event.get("event") == "finish":
            self._finish(event)
            return
        self._hash.update(raw)
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if kind == "begin":
            self.running = str(event.get("id", ""))
        elif kind == "test":
            self._test(event)
        elif kind == "file_error":
            file = str(event.get("file", ""))
            self.file_errors.append(f"{file}: {str(event.get('message', ''))[:MESSAGE_CHARS]}")

    def _finish(self, event: dict) -> None:
        want = hmac.new(self.nonce.encode(), self._hash.hexdigest().encode(),
                        hashlib.sha256).hexdigest()
        if not hmac.compare_digest(str(event.get("mac", "")), want):
            self.forged.append("the report's finish line does not sign what came before it")
            return
        self.finished = True
        self.exit_code_checked = event.get("exit_code_checked") is not False
        self.totals = {k: int(v) for k, v in event.items()
                       if k in ("passed", "failed", "skipped", "errors")
                       and isinstance(v, (int, float))}

    def _test(self, event: dict) -> None:
        titles = [str(t) for t in event.get("titles") or []]
        base = test_id(str(event.get("file", "")), titles)
        nodeid, n = base, 1
        while nodeid in self.results:
            n += 1
            nodeid = f"{base} [{n}]"
        outcome = _OUTCOMES.get(str(event.get("outcome")), Outcome.error)
        timed_out = bool(event.get("timed_out"))
        self.results[nodeid] = TestResult(
            nodeid=nodeid, outcome=Outcome.failed if timed_out else outcome,
            duration=max(0.0, float(event.get("duration") or 0.0)),
            message=str(event.get("message") or "")[:MESSAGE_CHARS], timed_out=timed_out)
        if self.running in (base, nodeid):
            self.running = None


def parse_report(raw: str, *, nonce: str, exit_code: int, duration: float,
                 timed_out: bool = False, log_tail: str = "") -> TestRun:
    """A :class:`TestRun` from a reporter's JSON lines (see the module docstring)."""
    reading = _Reading(nonce)
    for line in raw.encode("utf-8", errors="surrogateescape").splitlines(keepends=True):
        if line.strip():
            reading.line(line)
    problems = _problems(reading, exit_code, timed_out)
    died_in = None if reading.finished else reading.running
    if died_in is not None and died_in not in reading.results:
        # the run ended in this test (killed, out of memory, past its limit, process.exit):
        # it has an outcome, as the test pytest's plugin saw start has one
        reading.results[died_in] = TestResult(
            nodeid=died_in, outcome=Outcome.error,
            message="the test run ended while this test was running")
    return TestRun(results=reading.results, exit_code=exit_code, duration=duration,
                   timed_out=timed_out, collected=len(reading.results),
                   collection_errors=tuple(reading.file_errors), finished=reading.finished,
                   problems=tuple(problems), log_tail=log_tail, died_in=died_in)


def _problems(reading: _Reading, exit_code: int, timed_out: bool) -> list[str]:
    """Reasons not to believe a finished report."""
    out = list(dict.fromkeys(reading.forged))
    if not reading.finished or timed_out:
        return out
    failing = [t for t, r in reading.results.items() if not r.outcome.ok
               and r.outcome is not Outcome.skipped]
    if exit_code == 0 and (failing or reading.file_errors) and reading.exit_code_checked:
        out.append(f"the runner exited 0 but {len(failing)} test(s) failed and "
                   f"{len(reading.file_errors)} file(s) did not load")
    if exit_code != 0 and not failing and not reading.file_errors:
        out.append(f"the runner exited {exit_code} but the report has no failure")
    counted = reading.totals.get("passed")
    passed = sum(1 for r in reading.results.values() if r.outcome is Outcome.passed)
    if counted is not None and counted != passed:
        out.append(f"the runner counted {counted} passing test(s), the report has {passed}")
    return out


__all__ = ["SEPARATOR", "parse_report", "split_id", "test_id"]
