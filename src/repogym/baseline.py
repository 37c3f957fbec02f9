"""Baseline: the whole suite K times at the pinned commit.

Records the passing set (passed in every run), the flaky set (any disagreement between
runs, including a test missing from one run, and tests that pass in the full suite but not
when only the passing tests run, as the judge runs them), the misbehaving set (tests with
side effects in any run: network beyond loopback, writes outside the work tree, processes
left running; they pass only as far as the sandbox lets them, so no task lists them), each
test's first outcome and mean duration.
A run the report cannot vouch for (timed out, died, inconsistent) is an infrastructure
failure, and a repository that collects no test at all is bad input.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections import defaultdict
from importlib import resources
from pathlib import Path

from repogym.errors import NoTestsError, TestRunError
from repogym.limits import TimePolicy
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import Baseline, Outcome, TestRun
from repogym.toolchains.base import Toolchain
from repogym.toolchains.resume import run_to_end


@functools.cache
def baseline_format() -> str:
    """A digest of what a recorded baseline means besides its inputs: these folding rules,
    the report plugin's per-test account and how it is read, the launcher, time limits and
    runs that go to the end. A cached baseline (or coverage) under another digest is stale."""
    from repogym.toolchains.python import RUN_ENV  # the runs' environment (hash seed...)

    h = hashlib.sha256(Path(__file__).read_bytes())
    for package, name in FORMAT_SOURCES:
        h.update(resources.files(package).joinpath(name).read_bytes())
    h.update(repr(sorted(RUN_ENV.items())).encode())
    return h.hexdigest()[:16]


FORMAT_SOURCES = (("repogym.toolchains.plugins", "repogym_report.py"),
                  ("repogym.toolchains.plugins", "repogym_launch.py"),
                  ("repogym.toolchains", "pytest_report.py"), ("repogym.toolchains", "resume.py"),
                  ("repogym", "limits.py"))


def record_baseline(sandbox: Sandbox, toolchain: Toolchain, *, repo: str, commit: str,
                    image: str, runs: int = 3, timeout: float = 600.0,
                    policy: TimePolicy | None = None) -> Baseline:
    """Run the suite ``runs`` times from a clean sandbox and fold the runs into a Baseline.

    Every run goes to the end (:func:`~repogym.toolchains.resume.run_to_end`): a test that
    kills its run (past its time limit, out of memory, filling the disk) is set aside
    (``misbehaving``, with why) and the rest run again; later runs leave such tests out, and
    give each test a limit from the first run's times (``policy``).

    Raises:
        NoTestsError: no test was collected.
        TestRunError: a run timed out, or left a report that cannot be believed, even so.
    """
    start = time.monotonic()
    policy = policy or TimePolicy(ceiling=min(60.0, timeout), run_ceiling=timeout)
    results: list[TestRun] = []
    aside: dict[str, str] = {}
    for i in range(runs):
        sandbox.reset()
        limits = policy.limits(results[0].durations(), None) if results else policy.unknown()
        run = run_to_end(toolchain, sandbox, timeout=timeout, limits=limits,
                         exclude=sorted(aside), allowed_changes=None)
        _check_run(run, repo, i)
        aside.update(set_aside(run))
        results.append(run)
    base = fold_runs(results, repo=repo, commit=commit, image=image, seconds=0.0)
    base = base.model_copy(update={  # left out of later runs: not flaky, set aside
        "misbehaving": {**base.misbehaving, **aside},
        "flaky": tuple(t for t in base.flaky if t not in aside)})
    base = drop_selection_sensitive(base, sandbox, toolchain, timeout=timeout, policy=policy)
    return base.model_copy(update={"seconds": round(time.monotonic() - start, 3)})


def set_aside(run: TestRun) -> dict[str, str]:
    """Tests to keep out of every task, with why: those a run died in, and those that ran
    past their time limit (each costs its limit in every run it is in)."""
    return {nodeid: (res.message.splitlines()[0] if res.message else "it ended the run")[:300]
            for nodeid, res in run.results.items() if nodeid in run.culprits or res.timed_out}


def drop_selection_sensitive(base: Baseline, sandbox: Sandbox, toolchain: Toolchain, *,
                             timeout: float, policy: TimePolicy | None = None) -> Baseline:
    """Run only the stable passing tests, as the judge will; any that fail that way depend on
    tests left out (order or state), so they are moved to the flaky set."""
    stable = base.stable_passing()
    if not stable or stable == set(base.outcomes):
        return base
    sandbox.reset()
    limits = (policy or TimePolicy()).for_baseline(base, sorted(stable))
    run = run_to_end(toolchain, sandbox, timeout=timeout, select=sorted(stable), limits=limits,
                     allowed_changes=None)
    _check_run(run, base.repo, base.runs)
    sensitive = {t for t in stable if (o := run.outcome(t)) is None or not o.ok}
    misbehaving = {**run.misbehaving(), **base.misbehaving}
    changes = tuple(dict.fromkeys([*base.runner_changes, *run.runner_changes]))
    if not sensitive and misbehaving == base.misbehaving and changes == base.runner_changes:
        return base
    return base.model_copy(update={
        "passing": tuple(t for t in base.passing if t not in sensitive | set(misbehaving)),
        "flaky": tuple(sorted(set(base.flaky) | sensitive)),
        "misbehaving": misbehaving, "runner_changes": changes})


def _check_run(run: TestRun, repo: str, index: int) -> None:
    if run.timed_out:
        raise TestRunError(f"{repo}: baseline run {index + 1} timed out after {run.duration:.0f}s")
    if not run.results and run.finished:
        raise NoTestsError(f"{repo}: the test run collected no tests")
    if not run.trusted:
        why = "; ".join(run.problems) or "the test run ended without a complete report"
        if run.culprits:
            why += f" (after setting aside {', '.join(run.culprits)})"
        raise TestRunError(f"{repo}: baseline run {index + 1}: {why}\n{run.log_tail[-1500:]}")


def fold_runs(runs: list[TestRun], *, repo: str, commit: str, image: str,
              seconds: float) -> Baseline:
    """Fold K runs: passing in all -> passing; outcomes that disagree -> flaky."""
    seen: dict[str, list[Outcome | None]] = defaultdict(list)
    durations: dict[str, list[float]] = defaultdict(list)
    ids = set().union(*(r.results for r in runs))
    for run in runs:
        for nodeid in ids:
            res = run.results.get(nodeid)
            seen[nodeid].append(res.outcome if res else None)
            if res:
                durations[nodeid].append(res.duration)
    misbehaving: dict[str, str] = {}
    for run in reversed(runs):  # the first run's account wins
        misbehaving.update(run.misbehaving())
    flaky = sorted(n for n, outs in seen.items() if len(set(outs)) > 1)
    passing = sorted(n for n, outs in seen.items()
                     if all(o is Outcome.passed for o in outs) and n not in misbehaving)
    first = {n: (outs[0] or Outcome.error) for n, outs in seen.items()}
    mean = {n: sum(d) / len(d) for n, d in durations.items() if d}
    return Baseline(repo=repo, commit=commit, image=image, runs=len(runs),
                    passing=tuple(passing), flaky=tuple(flaky), outcomes=first,
                    durations=mean, seconds=round(seconds, 3),
                    misbehaving=dict(sorted(misbehaving.items())),
                    setup_max=round(max((r.setup_duration for run in runs
                                         for r in run.results.values()), default=0.0), 3),
                    startup=round(max((run.startup() for run in runs), default=0.0), 3),
                    runner_changes=tuple(dict.fromkeys(c for run in runs
                                                       for c in run.runner_changes)),
                    plugin_files=tuple(sorted({f for run in runs for f in run.plugin_files})))
