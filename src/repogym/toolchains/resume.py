"""Runs that get to the end although a test kills them.

A test can end its own run: it hangs past its limit and cannot be interrupted (the report
plugin then kills the run), it exhausts memory (the kernel kills pytest), it fills the disk
(the sandbox's guard stops the container), it calls ``os._exit``. The report is streamed,
so the run names the test it died in (``TestRun.died_in``). :func:`run_to_end` records that
test's outcome -- ``failed`` and timed out when it ran past a limit, else ``error`` -- and
runs the tests that had not run yet again, in the same state (after a reset and the
caller's ``restore`` when the sandbox was lost), until a run completes, ``max_culprits``
tests have been set aside, the time budget is spent, or ``stop`` says the outcome so far
is enough (a grade that is 0 already).

The merged run is trusted when its last part is: every part's report was checked on its
own (nonce, exit code), and problems of any part (tamper) stay. ``TestRun.culprits`` names
the tests runs died in, in order; each one's result says how it ended.
"""

from __future__ import annotations

import time
from typing import Callable, Collection, Sequence

from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import Outcome, TestResult, TestRun, TimeLimits
from repogym.toolchains.base import RunPlugin, TestRunner

MAX_CULPRITS = 5


def run_to_end(runner: TestRunner, sandbox: Sandbox, *, timeout: float,
               select: Sequence[str] | None = None, limits: TimeLimits | None = None,
               allowed_changes: Collection[str] | None = (), exclude: Sequence[str] = (),
               plugins: Sequence[RunPlugin] = (), check_runner: bool = True,
               exitfirst: bool = False, collect: Sequence[str] = (),
               restore: Callable[[], None] | None = None,
               stop: Callable[[TestResult], bool] | None = None,
               max_culprits: int = MAX_CULPRITS) -> TestRun:
    """Run ``select`` (None: the whole suite) to the end, setting aside the tests that kill
    the run (module docstring). ``timeout`` is the budget of all parts together.

    Raises:
        SandboxError: the sandbox broke and nothing of the run could be read.
    """
    deadline = time.monotonic() + timeout
    parts: list[TestRun] = []
    done: dict[str, TestResult] = {}
    while True:
        todo = None if select is None else [t for t in select if t not in done]
        run = runner.run_tests(sandbox, timeout=max(1.0, deadline - time.monotonic()),
                               select=todo, plugins=plugins, limits=limits,
                               exclude=sorted({*exclude, *done}),  # ``select`` may name files
                               allowed_changes=allowed_changes, check_runner=check_runner,
                               exitfirst=exitfirst, collect=collect)
        run = _blame_loss(_blame_overrun(run))
        parts.append(run)
        done.update(run.results)
        culprit = run.died_in
        if todo is not None and culprit is not None and not [t for t in todo if t not in done]:
            return _complete(merged(parts))  # the test it died in was the last one left
        if (culprit is None or run.finished or len(parts) > max_culprits
                or time.monotonic() >= deadline or (stop is not None and stop(done[culprit]))):
            return merged(parts)
        if run.sandbox_lost:
            sandbox.reset()
            if restore is not None:
                restore()


def _complete(run: TestRun) -> TestRun:
    """Every selected test has an outcome (the last one is the test the run died in, with
    the outcome that says so): the run is as complete as a finished one."""
    return run.model_copy(update={"finished": True, "timed_out": False, "died_in": None})


def _blame_overrun(run: TestRun) -> TestRun:
    """A run stopped at its own limit while a test ran: that test ran past the limit."""
    if not run.timed_out or run.died_in is None:
        return run
    res = run.results[run.died_in]
    res = res.model_copy(update={
        "outcome": Outcome.failed, "timed_out": True,
        "message": f"timed out: the run reached its limit of {run.duration:.0f}s in this test"})
    return run.model_copy(update={"results": {**run.results, run.died_in: res}})


def _blame_loss(run: TestRun) -> TestRun:
    """The sandbox was lost while a test ran (the guard stopped it at a limit): say so."""
    if not run.sandbox_lost or run.died_in is None or run.results[run.died_in].timed_out:
        return run
    res = run.results[run.died_in].model_copy(update={
        "message": f"the sandbox stopped while this test ran: {run.sandbox_lost}"[:2000]})
    return run.model_copy(update={"results": {**run.results, run.died_in: res}})


def merged(parts: Sequence[TestRun]) -> TestRun:
    """One run from consecutive parts (each ran the tests the ones before did not)."""
    culprits = tuple(p.died_in for p in parts if p.died_in is not None)
    if len(parts) == 1:
        return parts[0].model_copy(update={"culprits": culprits})
    last = parts[-1]
    results: dict[str, TestResult] = {}
    for part in parts:
        results.update(part.results)
    problems = list(dict.fromkeys(p for part in parts for p in part.problems))
    extras: dict[str, str] = {}
    for part in parts:
        extras.update({k: v for k, v in part.extras.items() if v})
    return last.model_copy(update={
        "results": results, "duration": round(sum(p.duration for p in parts), 3),
        "collected": max(p.collected for p in parts), "problems": tuple(problems),
        "collection_errors": tuple(dict.fromkeys(e for p in parts for e in p.collection_errors)),
        "runner_changes": tuple(dict.fromkeys(c for p in parts for c in p.runner_changes)),
        "culprits": culprits,
        "extras": extras})
