"""Reading a Maven test run: the extension's event log, Surefire's XML reports, and the
thread dumps of forked JVMs the watchdog stopped.

The rules below live in one standard-library module,
:mod:`repogym.toolchains.plugins.repogym_maven`, which an exported task's in-container
grader loads too: both read a run the same way. This module types what it returns.

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

from dataclasses import dataclass
from typing import Mapping, Sequence

from repogym.schemas.records import Outcome, TestResult, TestRun
from repogym.toolchains.plugins import repogym_maven
from repogym.toolchains.plugins.repogym_maven import (
    CANARY,
    MESSAGE_CHARS,
    Log,
    Module,
    Namer,
    hung_test,
    method_of,
    read_log,
    split_bundle,
    split_id,
)


@dataclass
class Case:
    """One ``testcase`` of a report."""

    classname: str
    name: str
    outcome: Outcome
    duration: float = 0.0
    message: str = ""
    timed_out: bool = False


def read_cases(xml: bytes) -> list[Case]:
    """The ``testcase`` elements of one Surefire report.

    Raises:
        ValueError: the report is not XML.
    """
    return [Case(c.classname, c.name, Outcome(c.outcome), c.duration, c.message, c.timed_out)
            for c in repogym_maven.read_cases(xml)]


def parse_run(events: str, bundle: bytes, *, nonce: str, namer: Namer,
              dumps: Mapping[str, str], exit_code: int, duration: float, timed_out: bool,
              log_tail: str = "", expected: Sequence[str] = (),
              module_of: Mapping[str, str] | None = None) -> TestRun:
    """The run as its event log and reports say (see :func:`~repogym.toolchains.plugins.
    repogym_maven.parse_run` for ``dumps``, ``expected`` and ``module_of``); the exit code
    is Maven's as the script recorded it, else ``exit_code``."""
    read = repogym_maven.parse_run(events, bundle, nonce=nonce, namer=namer, dumps=dumps,
                                   exit_code=exit_code, expected=expected, module_of=module_of)
    results = {tid: TestResult(nodeid=tid, outcome=Outcome(r["outcome"]),
                               duration=r["duration"], message=r["message"],
                               timed_out=r["timed_out"])
               for tid, r in read["results"].items()}
    return TestRun(results=results, exit_code=read["status"], duration=duration,
                   timed_out=timed_out, collected=len(results),
                   collection_errors=tuple(read["collection_errors"]),
                   finished=read["finished"], problems=tuple(read["problems"]),
                   log_tail=log_tail, died_in=read["died_in"])


__all__ = ["CANARY", "MESSAGE_CHARS", "Case", "Log", "Module", "Namer", "hung_test",
           "method_of", "parse_run", "read_cases", "read_log", "split_bundle", "split_id"]
