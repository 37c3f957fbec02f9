"""Time limits for test runs, derived from how long the tests took in the baseline.

A test run in the judge or in grading has two limits (:class:`~repogym.schemas.records.TimeLimits`):

* **per test** (setup to teardown), enforced inside pytest by the report plugin: the test
  is interrupted, fails as timed out, and the other tests still run; one that does not
  stop is killed with its run, and the run goes on without it (see
  :func:`repogym.toolchains.resume.run_to_end`). A test's limit is a multiple of its
  baseline time plus a constant plus the longest setup any test needed (a selection may put
  a test first that did not pay for a shared fixture in the baseline), between a floor and
  a ceiling -- as mutation testers bound each run by the baseline (mutmut: a multiple of
  the baseline plus a constant). A test with no baseline time gets the ceiling.
* **per run**, enforced by the sandbox: the sum of the selected tests' baseline times
  times a multiple, plus twice the longest start-up (interpreter, imports, collection) a
  baseline run had, plus twice the largest per-test limit, plus a constant; at most the
  run ceiling (``Settings.test_timeout``).

A test that runs past its limit under a candidate's bug while it passes at the clean state
is a failing test of the task (recorded as timed out), never infrastructure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from repogym.schemas.records import Baseline, TimeLimits


@dataclass(frozen=True)
class TimePolicy:
    """The rule above; ``ceiling`` and ``run_ceiling`` come from the settings."""

    multiple: float = 5.0
    constant: float = 2.0
    floor: float = 2.0
    ceiling: float = 60.0  # per test, and for tests without a baseline time
    run_multiple: float = 3.0
    run_constant: float = 30.0
    run_ceiling: float = 600.0
    grace: float = 1.0

    def test_limit(self, seconds: float, setup_max: float = 0.0) -> float:
        limit = self.multiple * seconds + self.constant + setup_max
        return round(min(self.ceiling, max(self.floor, limit)), 2)

    def limits(self, durations: Mapping[str, float], tests: Iterable[str] | None, *,
               setup_max: float = 0.0, startup: float = 0.0) -> TimeLimits:
        """Limits for a run of ``tests`` (None: the whole suite, as far as it is known)."""
        names = list(durations) if tests is None else list(tests)
        per_test = {t: self.test_limit(durations[t], setup_max) for t in names if t in durations}
        unknown = tests is None or len(per_test) < len(names)
        largest = max([*per_test.values(), *([self.ceiling] if unknown else [])], default=0.0)
        spent = sum(durations.get(t, 0.0) for t in names)
        run = self.run_constant + self.run_multiple * spent + 2 * startup + 2 * largest
        return TimeLimits(tests=per_test, default=self.ceiling, grace=self.grace,
                          run=round(min(self.run_ceiling, run), 2))

    def for_baseline(self, base: Baseline, tests: Iterable[str] | None) -> TimeLimits:
        return self.limits(base.durations, tests, setup_max=base.setup_max,
                           startup=base.startup)

    def unknown(self) -> TimeLimits:
        """Before anything was measured (the baseline's first run): the run's ceiling, and
        for a test the per-test ceiling, at most a quarter of the run's (a test that hangs
        must leave the rest of the suite time to run)."""
        return TimeLimits(default=min(self.ceiling, self.run_ceiling / 4), run=self.run_ceiling,
                          grace=self.grace)


def policy_for(test_timeout: float, per_test_timeout: float) -> TimePolicy:
    """The policy of a run's settings (a test's ceiling never above the run's)."""
    return TimePolicy(ceiling=min(per_test_timeout, test_timeout), run_ceiling=test_timeout)
