"""The report plugin inside a real pytest process (no sandbox needed)."""

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

from repogym.schemas.records import Outcome
from repogym.toolchains.python import parse_report

SUITE = '''
import pytest

def test_pass(): assert True
def test_fail(): assert 1 + 1 == 3, "math is broken"
@pytest.fixture
def broken(): raise RuntimeError("fixture")
def test_error(broken): pass
@pytest.mark.skip(reason="no")
def test_skip(): pass
@pytest.mark.xfail
def test_xfail(): assert False
@pytest.mark.xfail
def test_xpass(): assert True
@pytest.mark.parametrize("n", [1, 2])
def test_param(n): assert n == 1
'''


def run_plugin(tmp_path: Path, select=None, exitfirst=False,
               extra: dict[str, str] | None = None) -> tuple[str, int]:
    (tmp_path / "test_suite.py").write_text(SUITE)
    for name, text in (extra or {}).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "test_broken_import.py").write_text("import no_such_module_xyz\n")
    plugin_dir = resources.files("repogym.toolchains.plugins")
    report, config = tmp_path / "r.jsonl", tmp_path / "cfg.json"
    config.write_text(json.dumps({"report": str(report), "nonce": "N", "select": select,
                                  "exitfirst": exitfirst}))
    env = {**os.environ, "PYTHONPATH": str(plugin_dir), "REPOGYM_PLUGIN_CONFIG": str(config)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "repogym_report", "-q",
                           "-p", "no:cacheprovider", "--continue-on-collection-errors"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert not config.exists(), "the plugin deletes its config before tests run"
    return report.read_text(), proc.returncode


def test_real_pytest_run_reports_every_outcome(tmp_path):
    raw, code = run_plugin(tmp_path)
    run = parse_report(raw, nonce="N", exit_code=code, duration=1)
    got = {n.split("::")[-1]: r.outcome for n, r in run.results.items()}
    assert got == {"test_pass": Outcome.passed, "test_fail": Outcome.failed,
                   "test_error": Outcome.error, "test_skip": Outcome.skipped,
                   "test_xfail": Outcome.xfail, "test_xpass": Outcome.xpass,
                   "test_param[1]": Outcome.passed, "test_param[2]": Outcome.failed,
                   "test_broken_import.py": Outcome.error}
    assert "math is broken" in run.results["test_suite.py::test_fail"].message
    assert run.trusted, run.problems


def test_selection_runs_only_named_tests(tmp_path):
    raw, code = run_plugin(tmp_path, select=["test_suite.py::test_pass", "test_suite.py::test_fail"])
    run = parse_report(raw, nonce="N", exit_code=code, duration=1)
    assert set(run.results) - {"test_broken_import.py"} == {
        "test_suite.py::test_pass", "test_suite.py::test_fail"}


FREEZER = '''
import sys, time
import pytest

REAL = time.monotonic


@pytest.fixture(autouse=True)
def frozen_clock():
    """What freezegun does: every module global that is the real clock is replaced."""
    patched = []
    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if value is REAL:
                setattr(module, name, lambda: 1e12)  # as an epoch date would be
                patched.append((module, name))
    time.monotonic = lambda: 1e12
    yield
    time.monotonic = REAL
    for module, name in patched:
        setattr(module, name, REAL)
'''


def _run_with_limits(tmp_path, *, default: float, grace: float):
    """pytest with the report plugin and these time limits in ``tmp_path``: the run as read
    from its report, and the finished process."""
    plugin_dir = resources.files("repogym.toolchains.plugins")
    report, config = tmp_path / "r.jsonl", tmp_path / "cfg.json"
    config.write_text(json.dumps({"report": str(report), "nonce": "N",
                                  "limits": {"default": default, "grace": grace, "tests": {}}}))
    env = {**os.environ, "PYTHONPATH": str(plugin_dir), "REPOGYM_PLUGIN_CONFIG": str(config)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "repogym_report", "-q",
                           "-p", "no:cacheprovider"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    return parse_report(report.read_text(), nonce="N", exit_code=proc.returncode,
                        duration=1), proc


def test_a_frozen_clock_in_tests_does_not_fool_the_time_limits(tmp_path):
    """freezegun-style clocks replace module globals that are ``time.monotonic``: the
    plugin's watchdog must keep real time (no test may time out for it, none hang)."""
    (tmp_path / "conftest.py").write_text(FREEZER)
    (tmp_path / "test_clock.py").write_text(
        "import time\n\n\ndef test_takes_a_while():\n    time.sleep(0.3)\n\n\n"
        "def test_quick():\n    assert True\n")
    run, proc = _run_with_limits(tmp_path, default=1.0, grace=1.0)
    assert run.passing() == {"test_clock.py::test_quick", "test_clock.py::test_takes_a_while"}, (
        run.results, proc.stdout[-1500:])


def test_exitfirst_stops_at_the_first_test_that_does_not_pass(tmp_path):
    raw, code = run_plugin(tmp_path, select=["test_suite.py::test_pass", "test_suite.py::test_fail",
                                             "test_suite.py::test_xpass"], exitfirst=True)
    run = parse_report(raw, nonce="N", exit_code=code, duration=1)
    assert run.trusted, run.problems
    assert set(run.results) - set(run.collection_errors) == {"test_suite.py::test_pass",
                                                           "test_suite.py::test_fail"}


SUBTESTS = '''
import unittest


class T(unittest.TestCase):
    def test_one_subtest_skipped(self):
        for i in range(3):
            with self.subTest(i=i):
                if i == 0:
                    self.skipTest("not for 0")
                self.assertGreater(i, 0)
'''


def test_exitfirst_goes_on_past_a_skipped_subtest(tmp_path):
    """A skipped subtest leaves its test passing: grading (exitfirst) must not stop there,
    or every test after it is missing and a correct patch scores 0 (python-slugify)."""
    wanted = ["test_sub.py::T::test_one_subtest_skipped", "test_suite.py::test_pass"]
    raw, code = run_plugin(tmp_path, select=wanted, exitfirst=True,
                           extra={"test_sub.py": SUBTESTS})
    run = parse_report(raw, nonce="N", exit_code=code, duration=1)
    assert run.trusted, run.problems
    assert {t: run.outcome(t) for t in wanted} == {t: Outcome.passed for t in wanted}


SLOW_REPORTING = '''
import time


def pytest_runtest_logreport(report):
    if report.when == "call" and report.nodeid.endswith("test_near_its_limit"):
        time.sleep(1.0)  # pytest's own work after the call phase, on a starved CPU
'''


def test_a_limit_reached_between_a_tests_phases_does_not_end_the_session(tmp_path):
    """The limit expires in pytest's own code between a test's phases (a reporting hook here;
    on a loaded machine, anywhere): the interrupt must not be raised there -- it would end
    the session with an internal error, and with a finish event, the tests after it
    silently never run. The test is marked as past its limit; every other test runs."""
    (tmp_path / "conftest.py").write_text(SLOW_REPORTING)
    (tmp_path / "test_edge.py").write_text(
        "import time\n\n\ndef test_near_its_limit():\n    time.sleep(0.5)\n\n\n"
        "def test_after():\n    assert True\n\n\ndef test_last():\n    assert True\n")
    run, proc = _run_with_limits(tmp_path, default=1.0, grace=5.0)
    assert "INTERNALERROR" not in proc.stdout + proc.stderr, proc.stdout[-1500:]
    assert run.trusted and run.finished, (run.problems, proc.stdout[-1500:])
    assert set(run.results) == {"test_edge.py::test_near_its_limit", "test_edge.py::test_after",
                                "test_edge.py::test_last"}, run.results
    assert run.results["test_edge.py::test_near_its_limit"].timed_out, run.results
    assert {"test_edge.py::test_after", "test_edge.py::test_last"} <= run.passing(), run.results


GC_COUNT = '''
import gc

import pytest


def escape(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@pytest.mark.parametrize("n", range(20))
def test_no_object_leaks(n):
    """markupsafe's test_markup_leaks, in pure Python: the count of objects the collector
    tracks is the same after every round of work."""
    counts = set()
    for _ in range(20):
        for _ in range(1000):
            escape("foo"), escape("<foo>")
        counts.add(len(gc.get_objects()))
    assert len(counts) == 1, counts
'''


def test_the_time_limits_do_not_disturb_what_a_test_measures(tmp_path):
    """The watchdog that enforces the time limits runs no code while a test runs within
    its limit: a watchdog waking every 20 ms moved the collector's runs in the test's own
    thread, and a test counting gc.get_objects() failed in about a third of the rounds
    (markupsafe: in half of the graded runs, in none of the plain ones)."""
    (tmp_path / "test_gc.py").write_text(GC_COUNT)
    run, proc = _run_with_limits(tmp_path, default=10.0, grace=1.0)
    assert run.trusted and len(run.results) == 20, (run.problems, proc.stdout[-1500:])
    assert run.passing() == set(run.results), {
        t: r.message[:200] for t, r in run.results.items() if t not in run.passing()}
