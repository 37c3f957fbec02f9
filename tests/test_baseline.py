from repogym.baseline import fold_runs
from repogym.schemas.records import Outcome, TestResult, TestRun


def run(**outcomes: str) -> TestRun:
    return TestRun(results={n: TestResult(nodeid=n, outcome=Outcome(o), duration=1.0)
                            for n, o in outcomes.items()}, exit_code=1, duration=1, finished=True)


def test_fold_finds_passing_and_flaky():
    runs = [run(a="passed", b="passed", c="failed", d="passed"),
            run(a="passed", b="failed", c="failed", d="passed"),
            run(a="passed", b="passed", c="failed")]
    base = fold_runs(runs, repo="r", commit="c", image="i", seconds=1)
    assert base.passing == ("a",)
    assert base.flaky == ("b", "d")  # d went missing in one run
    assert base.stable_passing() == {"a"}
    assert base.outcomes["c"] is Outcome.failed


def test_a_finished_run_that_left_collected_tests_unrun_is_not_a_baseline():
    """A report can finish although the session broke down half-way (pytest's internal
    error writes the finish event too): the tests it never ran must not just go missing."""
    import pytest

    from repogym.baseline import _check_run
    from repogym.errors import TestRunError

    broken = run(a="passed", b="failed").model_copy(update={"collected": 5})
    with pytest.raises(TestRunError, match="ended after 2 of the 5 tests it collected"):
        _check_run(broken, "r", 0)
    whole = run(a="passed", b="failed", **{"t.py": "error"}).model_copy(
        update={"collected": 2, "collection_errors": ("t.py",)})
    _check_run(whole, "r", 0)  # a collection error is no collected test
