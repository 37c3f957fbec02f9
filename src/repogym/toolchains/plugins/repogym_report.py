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
    {"event": "side_effects", "nodeid": ..., "what": [...]}   after the test's teardown
    {"event": "tamper", "what": [...]}   pytest internals replaced while tests ran
    {"event": "finish", "exitstatus": N, "nonce": N}

It is copied in under a random module name per run, so a hack cannot find it by name.

When ``select`` is a list, only those node ids run (the rest are deselected).

Side effects: while a test runs (setup to teardown), an audit hook notes what a test that
only computes has no reason to do -- try the network beyond loopback, or write, create or
delete files outside the work tree and the temporary folders -- and after its teardown, the
processes it started that are still running (found by a marker in their environment, so a
daemon that left the process group or session is still found; looked for only after a test
that started a process, so the rest cost nothing). A test that passes while
doing any of that is kept out of the tasks' test lists: the sandbox contains it, but its
outcome depends on what the sandbox allows. This is best effort against honest code (a test
can scrub the marker, or use a raw syscall); the sandbox, not this hook, is the boundary.
This file is copied into the sandbox as is; it must import nothing but the stdlib and pytest.
"""

import ipaddress
import json
import os
import socket
import sys
import time

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


_MARK_NAME = "REPOGYM_TEST_PROCESS"
_MARK = os.urandom(8).hex()
os.environ[_MARK_NAME] = _MARK  # inherited by every process a test starts
_ROOT = os.getcwd()
_WRITABLE = tuple(os.path.join(p, "") for p in ("/tmp", "/var/tmp", "/dev", "/proc/self"))
_HOSTNAME = socket.gethostname()
_MAX_EFFECTS = 10
_LINGER = 1.0  # seconds a test's processes get to finish exiting after its teardown
_current = None  # node id of the running test, None between tests
_effects = []
_before = None  # the processes alive when the running test first started one
_SPAWNS = {"os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system",
           "subprocess.Popen"}
_busy = False  # the hook's own calls raise audit events too


def _note(text):
    if len(_effects) < _MAX_EFFECTS and text not in _effects:
        _effects.append(text)


def _local_host(host):
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).split("%", 1)[0]
    if host in ("", "localhost", _HOSTNAME) or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def _literal(host):
    """An address written out (no name to look up)."""
    try:
        ipaddress.ip_address(host.decode("ascii") if isinstance(host, bytes) else host)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _remote(address):
    return isinstance(address, tuple) and address and not _local_host(address[0])


def _outside(path):
    """A path a test writes that is neither in the work tree nor a temporary folder."""
    if isinstance(path, int) or path is None:
        return None
    try:
        path = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None
    if "/__pycache__/" in path or path == _ROOT or path.startswith(os.path.join(_ROOT, "")):
        return None
    if path.startswith(_WRITABLE) or path + "/" in _WRITABLE:
        return None
    return path


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {  # event -> positions of the paths it changes
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1),
    "os.symlink": (1,), "os.link": (1,), "os.truncate": (0,), "os.chmod": (0,),
    "os.chown": (0,), "shutil.rmtree": (0,),
}


def _audit(event, args):
    global _busy
    if _current is None or _busy:
        return
    _busy = True
    try:
        _observe(event, args)
    except Exception:  # noqa: BLE001 - the hook must never change what the test sees
        pass
    finally:
        _busy = False


def _observe(event, args):
    global _before
    if event in _SPAWNS:
        if _before is None:  # audit events come before the act: the new process is not in it
            _before = _pids()
    elif event == "open":
        path, mode, flags = args
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(
            (flags or 0) & _WRITE_FLAGS)
        where = writes and _outside(path)
        if where:
            _note(f"writes outside the work tree: {where}")
    elif event in _PATH_EVENTS:
        for i in _PATH_EVENTS[event]:
            where = _outside(args[i]) if i < len(args) else None
            if where:
                _note(f"{event.split('.')[-1]} outside the work tree: {where}")
    elif event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[-1]
        if getattr(sock, "family", None) != getattr(socket, "AF_UNIX", -1) and _remote(address):
            _note(f"network: {event.split('.')[-1]} to {address[0]}:{address[1]}")
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                   "socket.gethostbyaddr"):
        if not _local_host(args[0]) and not _literal(args[0]):
            _note(f"network: name lookup of {args[0]!r}")


sys.addaudithook(_audit)


def _pids():
    try:
        return {int(p) for p in os.listdir("/proc") if p.isdigit()}
    except OSError:
        return set()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


try:
    _OWN_ENVIRON = _read("/proc/self/environ")  # what a fork without exec shows
except OSError:
    _OWN_ENVIRON = None


def _started_here(pid):
    """A live (not zombie) process started from this one: it carries the marker in its
    environment (exec'd since) or this process's own environment (forked, not exec'd)."""
    try:
        if _read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()[0] == b"Z":
            return False
        environ = _read(f"/proc/{pid}/environ")
    except (OSError, IndexError):
        return False
    return environ == _OWN_ENVIRON or f"{_MARK_NAME}={_MARK}".encode() in environ.split(b"\0")


def _command(pid):
    try:
        return _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(
            "utf-8", "replace").strip()[:120]
    except OSError:
        return "?"


def _left_running(before):
    deadline = time.monotonic() + _LINGER
    while True:
        left = sorted(p for p in _pids() - before - {os.getpid()} if _started_here(p))
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _current, _before
    _effects.clear()
    _before = None
    _current = item.nodeid
    try:
        yield
    finally:
        _current = None
    left = [] if _before is None else _left_running(_before)  # no process started, none left
    if left:
        _note(f"left {len(left)} process(es) running, e.g. pid {left[0]}: {_command(left[0])}")
    if _effects:
        _emit({"event": "side_effects", "nodeid": item.nodeid, "what": list(_effects)})


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
