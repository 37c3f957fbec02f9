"""Reading a Rust test run into a :class:`~repogym.schemas.records.TestRun`.

The rules (libtest's JSON events per binary framed by markers carrying the run's nonce,
each binary's exit status checked against its events, the canary, ``died_in``, test ids
``<file>::<libtest name>``) live in one standard-library reader,
:mod:`repogym.toolchains.plugins.repogym_rust_report`, which an exported task's
in-container grader loads too: both read a run the same way. This module only types what
it returns, with :func:`repogym.toolchains.rust.scan.file_of` naming each test's file.
"""

from __future__ import annotations

from typing import Sequence

from repogym.schemas.records import Outcome, TestResult, TestRun
from repogym.toolchains.plugins.repogym_rust_report import HARNESSLESS, read_report
from repogym.toolchains.rust.scan import file_of


def parse_report(text: str, *, nonce: str, exit_code: int, duration: float,
                 timed_out: bool, log_tail: str = "", expected: Sequence[str] = (),
                 canary: str | None = None) -> TestRun:
    """The run as its report says (see :func:`~repogym.toolchains.plugins.
    repogym_rust_report.read_report` for ``expected`` and ``canary``); ``exit_code`` is
    the runner's, replaced by 1 when it exited 0 but a binary or a build failed."""
    read = read_report(text, nonce=nonce, file_of=file_of, expected=expected, canary=canary)
    results = {tid: TestResult(nodeid=tid, outcome=Outcome(r["outcome"]),
                               duration=r["duration"], message=r["message"],
                               timed_out=r["timed_out"])
               for tid, r in read["results"].items()}
    return TestRun(results=results, exit_code=exit_code or int(read["failed"]),
                   duration=duration, timed_out=timed_out, collected=len(results),
                   collection_errors=tuple(read["collection_errors"]),
                   finished=read["finished"], problems=tuple(read["problems"]),
                   log_tail=log_tail, died_in=read["died_in"])


__all__ = ["HARNESSLESS", "parse_report"]
