"""Reading a Go test run into a :class:`~repogym.schemas.records.TestRun`.

The rules (test2json events framed by markers carrying the run's nonce, each binary's exit
status checked against its events, the canary, ``died_in``) live in one standard-library
reader, :mod:`repogym.toolchains.plugins.repogym_go_report`, which an exported task's
in-container grader loads too: both read a run the same way. This module only types what
it returns.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from repogym.schemas.records import Outcome, TestResult, TestRun
from repogym.toolchains.plugins.repogym_go_report import MESSAGE_CHARS, read_events


def parse_events(text: str, *, nonce: str, test_id: Callable[[str, str], str],
                 build_logs: Mapping[str, str], exit_code: int, duration: float,
                 timed_out: bool, log_tail: str = "",
                 expected: Mapping[str, Sequence[str]] | None = None,
                 canary: str | None = None) -> TestRun:
    """The run as its events say (see :func:`~repogym.toolchains.plugins.
    repogym_go_report.read_events` for ``test_id``, ``build_logs``, ``expected`` and
    ``canary``); ``exit_code`` is the script's, replaced by 1 when it exited 0 but a test
    binary failed or did not build."""
    read = read_events(text, nonce=nonce, test_id=test_id, build_logs=build_logs,
                       expected=expected, canary=canary)
    results = {tid: TestResult(nodeid=tid, outcome=Outcome(r["outcome"]),
                               duration=r["duration"], message=r["message"],
                               timed_out=r["timed_out"])
               for tid, r in read["results"].items()}
    return TestRun(results=results, exit_code=exit_code or int(read["failed"]),
                   duration=duration, timed_out=timed_out, collected=len(results),
                   collection_errors=tuple(read["collection_errors"]),
                   finished=read["finished"], problems=tuple(read["problems"]),
                   log_tail=log_tail, died_in=read["died_in"])


__all__ = ["MESSAGE_CHARS", "parse_events"]
