"""The pytest report: outcome folding and the cross-checks that make it hard to spoof."""

import json

from repogym.schemas.records import Outcome
from repogym.toolchains.python import parse_report

NONCE = "n0nce"


def lines(*events: dict) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\n"


def ev(nodeid: str, when: str, outcome: str, wasxfail: bool = False, message: str = "") -> dict:
    return {"event": "test", "nodeid": nodeid, "when": when, "outcome": outcome,
            "wasxfail": wasxfail, "duration": 0.01, "message": message}


def finish(code: int, nonce: str = NONCE) -> dict:
    return {"event": "finish", "exitstatus": code, "nonce": nonce}


def full(nodeid: str, call: str, **kw) -> list[dict]:
    return [ev(nodeid, "setup", "passed"), ev(nodeid, "call", call, **kw),
            ev(nodeid, "teardown", "passed")]


def test_every_outcome_kind_is_folded():
    raw = lines(
        {"event": "start", "nonce": NONCE},
        *full("t.py::ok", "passed"),
        *full("t.py::bad", "failed", message="assert 1 == 2"),
        ev("t.py::err", "setup", "failed", message="fixture broke"),
        ev("t.py::skip", "setup", "skipped"),
        *full("t.py::xf", "skipped", wasxfail=True),
        *full("t.py::xp", "passed", wasxfail=True),
        *full("t.py::td", "passed")[:2], ev("t.py::td", "teardown", "failed"),
        {"event": "collect_error", "nodeid": "t2.py", "message": "ImportError"},
        finish(1),
    )
    run = parse_report(raw, nonce=NONCE, exit_code=1, duration=1.0)
    got = {n: r.outcome for n, r in run.results.items()}
    assert got == {
        "t.py::ok": Outcome.passed, "t.py::bad": Outcome.failed, "t.py::err": Outcome.error,
        "t.py::skip": Outcome.skipped, "t.py::xf": Outcome.xfail, "t.py::xp": Outcome.xpass,
        "t.py::td": Outcome.error, "t2.py": Outcome.error,
    }
    assert run.results["t.py::bad"].message == "assert 1 == 2"
    assert run.collection_errors == ("t2.py",)
    assert run.trusted and run.passing() == {"t.py::ok"}


def test_missing_finish_means_untrusted():
    run = parse_report(lines(*full("t.py::ok", "passed")), nonce=NONCE, exit_code=0, duration=1)
    assert not run.finished and not run.trusted


def test_forged_finish_with_wrong_nonce_is_a_problem():
    raw = lines(*full("t.py::ok", "passed"), finish(0, nonce="guess"))
    run = parse_report(raw, nonce=NONCE, exit_code=0, duration=1)
    assert not run.trusted and "foreign nonce" in run.problems[0]


def test_exit_code_must_agree_with_report():
    raw = lines(*full("t.py::bad", "failed"), finish(1))
    run = parse_report(raw, nonce=NONCE, exit_code=0, duration=1)
    assert not run.trusted


def test_all_pass_report_with_failing_exit_code_is_untrusted():
    raw = lines(*full("t.py::ok", "passed"), finish(0))
    run = parse_report(raw, nonce=NONCE, exit_code=1, duration=1)
    assert not run.trusted


def test_test_killed_mid_call_counts_as_error():
    raw = lines(ev("t.py::hang", "setup", "passed"))
    run = parse_report(raw, nonce=NONCE, exit_code=-9, duration=5, timed_out=True)
    assert run.results["t.py::hang"].outcome is Outcome.error
    assert not run.trusted


def test_garbage_lines_are_ignored():
    raw = "PASSED t.py::fake\nnot json\n" + lines(*full("t.py::ok", "passed"), finish(0))
    run = parse_report(raw, nonce=NONCE, exit_code=0, duration=1)
    assert set(run.results) == {"t.py::ok"} and run.trusted
