"""Reading the report plugin's JSONL stream (``plugins/repogym_report.py``) into a TestRun.

Rules, in the order they apply:

* A test's setup/call/teardown reports fold into one outcome (:class:`_Acc`): a failure in
  the call phase is ``failed``, elsewhere ``error``; skipped, xfail and xpass as pytest says.
* A test that passed although the plugin saw its body never run (``body: false``: its own
  code object was not entered in the call phase) is an ``error``: a runner that skips test
  bodies must not pass them.
* A test that ran past its time limit (``timeout`` event) is ``failed`` with
  ``timed_out``; when the run then died (hard limit), the test's own reports may be missing,
  and it still is.
* The run *died in* a test when the report has a ``begin`` for it and no teardown report and
  no ``finish``: the plugin streams events as they happen, so the test that was running
  when pytest was killed (OOM, a hard time limit, the sandbox stopped, ``os._exit``) is known.
  That test is an ``error`` (``failed`` if it timed out); the tests after it never ran.
* ``runner_changed`` events name runner functions, classes, methods and pytest plugins that
  differ from what was there before project code ran. Those in ``allowed`` (the
  environment's own: they differ at the clean state too) are recorded; any other makes the
  run untrusted ("tamper"). ``allowed=None`` records them all without judging (the baseline
  learns the environment's own changes that way).
* The report is complete only with a ``finish`` event carrying this run's nonce, and is
  cross-checked with the process's exit code.
"""

from __future__ import annotations

import json
from typing import Collection, Iterable

from repogym.schemas.records import Outcome, TestResult, TestRun

NO_BODY = "the test passed, but its body never ran"


class _Acc:
    """Folds the setup/call/teardown reports of one test into one outcome."""

    def __init__(self) -> None:
        self.outcome: Outcome | None = None
        self.duration = 0.0
        self.setup_duration = 0.0
        self.message = ""
        self.side_effects: tuple[str, ...] = ()
        self.timed_out = False
        self.no_body = False
        self.ended = False  # its teardown reported

    def add(self, ev: dict) -> None:
        seconds = float(ev.get("duration") or 0.0)
        when, out, xf = ev.get("when"), ev.get("outcome"), bool(ev.get("wasxfail"))
        if ev.get("subtest") and out != "failed":  # a subtest skipped or passed: the test's
            return  # own call report says how it ended (and how long it took)
        self.duration += seconds
        if when != "call":
            self.setup_duration += seconds
        self.ended = self.ended or when == "teardown"
        if out == "failed":
            self.message = self.message or ev.get("message", "")
            if when == "call":
                self.outcome = Outcome.failed
            elif self.outcome is not Outcome.failed:
                self.outcome = Outcome.error
        elif out == "skipped" and when in ("setup", "call") and self.outcome is None:
            self.outcome = Outcome.xfail if xf else Outcome.skipped
        elif out == "passed" and when == "call" and self.outcome is None:
            self.outcome = Outcome.xpass if xf else Outcome.passed
            self.no_body = ev.get("body") is False and not xf

    def died(self, why: str) -> None:
        """The run died while this test ran."""
        if self.timed_out:
            self.outcome, self.message = Outcome.failed, self.message or why
        else:
            self.outcome, self.message = Outcome.error, why

    def result(self, nodeid: str) -> TestResult:
        outcome = self.outcome or Outcome.error  # no call report: killed mid-test
        message = self.message
        if self.no_body and outcome is Outcome.passed:
            outcome, message = Outcome.error, NO_BODY
        if self.timed_out and outcome is Outcome.error:
            outcome = Outcome.failed
        return TestResult(nodeid=nodeid, outcome=outcome, duration=round(self.duration, 6),
                          message=message, side_effects=self.side_effects,
                          timed_out=self.timed_out,
                          setup_duration=round(self.setup_duration, 6))


def _events(raw: str) -> Iterable[dict]:
    for line in raw.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(ev, dict):
            yield ev


class _Report:
    """What the events of one report say, read in order."""

    def __init__(self, nonce: str) -> None:
        self.nonce = nonce
        self.accs: dict[str, _Acc] = {}
        self.errors: list[str] = []
        self.collected = 0
        self.finish: int | None = None
        self.problems: list[str] = []
        self.changes: list[str] = []
        self.current: str | None = None  # the last test begun
        self.plugin_files: list[str] = []
        self.stopped = False  # binary grading stopped the run at a test that did not pass

    def acc(self, ev: dict) -> _Acc:
        return self.accs.setdefault(str(ev.get("nodeid")), _Acc())

    def read(self, ev: dict) -> None:
        kind = ev.get("event")
        if kind == "begin":
            self.current = str(ev.get("nodeid"))
            self.acc(ev)
        elif kind == "test":
            self.acc(ev).add(ev)
        elif kind == "timeout":
            acc = self.acc(ev)
            acc.timed_out = True
            acc.message = (f"timed out: the test ran past its limit of "
                           f"{float(ev.get('limit') or 0):.1f}s")
        elif kind == "side_effects" and isinstance(ev.get("what"), list):
            self.acc(ev).side_effects = tuple(str(w)[:300] for w in ev["what"][:10])
        elif kind == "collect_error":
            self.errors.append(str(ev.get("nodeid")))
        elif kind == "runner_changed" and isinstance(ev.get("what"), list):
            self.changes += [str(w) for w in ev["what"] if str(w) not in self.changes]
        elif kind == "collected":
            self.collected = int(ev.get("count") or 0)
        elif kind == "plugins" and isinstance(ev.get("files"), list):
            self.plugin_files = [str(f) for f in ev["files"]]
        elif kind == "stopped" and ev.get("nonce") == self.nonce:
            self.stopped = True
        elif kind == "finish":
            self.read_finish(ev)

    def read_finish(self, ev: dict) -> None:
        if ev.get("nonce") != self.nonce:
            self.problems.append("report finish event carries a foreign nonce")
        elif self.finish is not None:
            self.problems.append("report has two finish events")
        else:
            self.finish = int(ev.get("exitstatus", -1))

    def died_in(self) -> str | None:
        """The test that was running when the run died (None: it finished, or died outside
        any test)."""
        if self.finish is not None or self.current is None:
            return None
        acc = self.accs[self.current]
        return None if acc.ended and not acc.timed_out else self.current


def parse_report(raw: str, *, nonce: str, exit_code: int, duration: float,
                 timed_out: bool = False, log_tail: str = "",
                 allowed_changes: Collection[str] | None = ()) -> TestRun:
    """Turn the plugin's JSONL report into a :class:`TestRun` (rules: module docstring).

    Args:
        allowed_changes: runner changes that are the environment's own (None: record
            every change, judge none).
    """
    rep = _Report(nonce)
    for ev in _events(raw):
        rep.read(ev)
    died_in = rep.died_in()
    if died_in is not None:
        rep.accs[died_in].died(f"the test run died while this test ran (exit code {exit_code})")
    results = {n: a.result(n) for n, a in rep.accs.items()}
    for nodeid in rep.errors:
        results.setdefault(nodeid, TestResult(nodeid=nodeid, outcome=Outcome.error,
                                              message="collection error"))
    tamper = [c for c in rep.changes if allowed_changes is not None and c not in allowed_changes]
    if tamper:
        rep.problems.append(f"the test runner was changed by code under test: {tamper[:10]}")
    no_body = {n for n, a in rep.accs.items() if a.no_body}
    rep.problems += _cross_check(results, rep.finish, exit_code, timed_out, no_body,
                                 rep.stopped)
    return TestRun(results=results, exit_code=exit_code, duration=duration, timed_out=timed_out,
                   collected=rep.collected, collection_errors=tuple(rep.errors),
                   finished=rep.finish is not None, problems=tuple(rep.problems),
                   log_tail=log_tail, died_in=died_in, runner_changes=tuple(rep.changes),
                   plugin_files=tuple(rep.plugin_files))


def _cross_check(results: dict[str, TestResult], finish: int | None, exit_code: int,
                 timed_out: bool, no_body: set[str], stopped: bool = False) -> list[str]:
    """Problems when the exit code and the report disagree (tests the plugin turned into
    errors for want of a body count as pytest saw them: passed; a run binary grading
    stopped at a skipped test exits 1 too)."""
    if timed_out or finish is None:
        return []  # already untrusted through `timed_out` / `finished`
    problems = []
    if finish != exit_code:
        problems.append(f"pytest exit code {exit_code} disagrees with the report's {finish}")
    bad = any(r.outcome in (Outcome.failed, Outcome.error) and n not in no_body
              for n, r in results.items())
    if exit_code == 0 and bad:
        problems.append("exit code 0 but the report has failures")
    if exit_code == 1 and not bad and not stopped:
        problems.append("exit code 1 but the report has no failure")
    return problems
