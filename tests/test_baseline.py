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
