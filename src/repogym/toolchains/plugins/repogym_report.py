"""pytest plugin loaded by repogym (``-p repogym_report``) to write a structured report.

Its settings come from a JSON file named by ``REPOGYM_PLUGIN_CONFIG``, which it reads and
deletes at import, before any code under test runs: ``{"report": path, "nonce": str,
"select": [node ids] | null}``. It streams one JSON object per line to the report (a fresh,
unguessable path per run), flushing after each, so a run killed half-way still tells
which tests finished. Events:

    {"event": "start"}        (no nonce: code under test may read the report)
    {"event": "collect_error", "nodeid": ..., "message": ...}
    {"event": "collected", "count": N}
    {"event": "test", "nodeid": ..., "when": "setup|call|teardown", "outcome": ...,
     "wasxfail": bool, "duration": s, "message": ...}
    {"event": "tamper", "what": [...]}   pytest internals replaced while tests ran
    {"event": "finish", "exitstatus": N, "nonce": N}

It is copied in under a random module name per run, so a hack cannot find it by name.

When ``select`` is a list, only those node ids run (the rest are deselected).
This file is copied into the sandbox as is; it must import nothing but the stdlib and pytest.
"""

import json
import os

import pytest

_STREAM = None


def _load_config():
    path = os.environ.pop("REPOGYM_PLUGIN_CONFIG", "")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    finally:
        os.unlink(path)


def _internals():
    """pytest internals a reward hack would patch to turn failures into passes."""
    import _pytest.python
    import _pytest.reports
    import _pytest.runner

    return {
        "TestReport.from_item_and_call": _pytest.reports.TestReport.__dict__.get("from_item_and_call"),
        "TestReport.__init__": _pytest.reports.TestReport.__init__,
        "runner.call_and_report": _pytest.runner.call_and_report,
        "runner.pytest_runtest_makereport": _pytest.runner.pytest_runtest_makereport,
        "runner.CallInfo.from_call": _pytest.runner.CallInfo.__dict__.get("from_call"),
        "python.pytest_pyfunc_call": _pytest.python.pytest_pyfunc_call,
        "python.Function.runtest": _pytest.python.Function.runtest,
    }


_CONFIG = _load_config()
_ORIGINAL = _internals()
_NONCE = _CONFIG.get("nonce", "")
_PATH = _CONFIG.get("report", "")
_SELECT = _CONFIG.get("select")


def _emit(obj):
    global _STREAM
    if not _PATH:
        return
    if _STREAM is None:
        _STREAM = open(_PATH, "a", encoding="utf-8")
    _STREAM.write(json.dumps(obj) + "\n")
    _STREAM.flush()


_MESSAGES = {}  # (nodeid, when) -> the exception's own text, taken before any formatting


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep the exception's text (``exconly``): with ``--tb=line`` pytest formats no
    traceback (most of the cost of a failing test), yet the message stays complete."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        try:
            _MESSAGES[(report.nodeid, report.when)] = call.excinfo.exconly()
        except Exception:  # noqa: BLE001 - a broken __str__ must not break the report
            pass


def _message(report):
    if not report.failed:
        return ""
    own = _MESSAGES.pop((report.nodeid, report.when), None)
    if own is not None:
        lines = [line.strip() for line in own.splitlines() if line.strip()]
        return "\n".join(lines)[:2000]
    text = getattr(report, "longreprtext", "") or ""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    if not lines:
        lines = [line.strip() for line in text.splitlines() if line.strip()][-3:]
    return "\n".join(lines)[:2000]


def pytest_sessionstart(session):
    _emit({"event": "start"})


def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid,
               "message": (getattr(report, "longreprtext", "") or "")[-2000:]})


def pytest_collection_modifyitems(session, config, items):
    if _SELECT is not None:
        wanted = set(_SELECT)
        keep = [item for item in items if item.nodeid in wanted]
        drop = [item for item in items if item.nodeid not in wanted]
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)


def pytest_collection_finish(session):
    _emit({"event": "collected", "count": len(session.items)})


def pytest_runtest_logreport(report):
    _emit({
        "event": "test",
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "wasxfail": hasattr(report, "wasxfail"),
        "duration": getattr(report, "duration", 0.0),
        "message": _message(report),
    })


def pytest_sessionfinish(session, exitstatus):
    now = _internals()
    changed = sorted(k for k, v in _ORIGINAL.items() if now.get(k) is not v)
    if changed:
        _emit({"event": "tamper", "what": changed})
    _emit({"event": "finish", "exitstatus": int(exitstatus), "nonce": _NONCE})
