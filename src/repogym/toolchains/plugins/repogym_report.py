"""pytest plugin loaded by repogym (``-p <random name>``) to write a structured report.

Its settings come from a JSON file named by ``REPOGYM_PLUGIN_CONFIG``, which it reads and
deletes at import, before any code under test runs::

    {"report": path, "nonce": str, "select": [node ids] | null, "exclude": [node ids],
     "limits": {"default": s | null, "tests": {node id: s}, "grace": s} | null,
     "check_runner": bool (default true: the integrity checks below; off for runs of
                           repogym's own candidates, which cannot tamper),
     "exitfirst": bool (stop at the first test that fails, errors or is skipped)}

It streams one JSON object per line to the report (a fresh, unguessable path per run),
written with ``os.write`` as each event happens, so a run killed half-way still tells which
tests finished and which one was running. Events:

    {"event": "start"}        (no nonce: code under test may read the report)
    {"event": "collect_error", "nodeid": ..., "message": ...}
    {"event": "collected", "count": N}
    {"event": "plugins", "files": [...]}  work-tree modules loaded as plugins (no conftests)
    {"event": "begin", "nodeid": ...}     a test's setup starts
    {"event": "test", "nodeid": ..., "when": "setup|call|teardown", "outcome": ...,
     "wasxfail": bool, "duration": s, "message": ..., "body": bool | null}
    {"event": "timeout", "nodeid": ..., "limit": s, "hard": bool}
    {"event": "side_effects", "nodeid": ..., "what": [...]}   after the test's teardown
    {"event": "runner_changed", "what": [...], "when": "collection|finish"}
    {"event": "finish", "exitstatus": N, "nonce": N}

The test runner's integrity, checked without trusting anything code under test can reach:

* this module binds every function it uses (serialisation is its own, writes are
  ``os.write`` on a descriptor it opened, clocks, signals) when it is imported -- repogym's
  launcher imports it before pytest loads any plugin, conftest or project module;
* it snapshots every function, class and method of the runner's own modules (``pytest``,
  ``_pytest``, ``pluggy``, ``unittest``) and the standard-library functions it binds, by
  identity and code, then compares them after collection and at the end; the pytest
  plugins registered before the first conftest loads and their hook implementations are
  compared too, and a plugin registered later must be a conftest, a module a
  ``pytest_plugins`` names, or an instance of a class loaded before project code ran.
  Every difference is reported as ``runner_changed``; the host decides which differences
  are the environment's own (a plugin of the env image patching pytest at the clean state
  too) and which are tamper;
* ``body``: whether the test's own code object was entered during its call phase (a
  profile hook watches only until it is), so a runner that skips test bodies cannot pass.

Time limits: with ``limits``, a watchdog thread gives every test (setup to teardown) its
limit; past it the test is interrupted with ``SIGALRM`` (it fails as timed out and the run
goes on) and, when it does not come back within ``grace`` seconds, the process group is
killed after a ``timeout`` event with ``hard: true`` (the host then knows which test it was
and runs the rest again). Either way the processes that test started and left running are
stopped and killed (a fork bomb that left the session would otherwise starve every test
after it, which would then fail for want of processes or memory, not for what they test).

It is copied in under a random module name per run, so a hack cannot find it by name.
When ``select`` is a list, only those node ids run (an entry without ``::`` selects every
test of that file); ``exclude`` ids never run.

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
It is imported before pytest starts, so pytest must not try to rewrite its asserts (it
would warn, and a suite that turns warnings into errors would stop): PYTEST_DONT_REWRITE.
"""

import _json
import _thread
import builtins
import ipaddress
import json
import os
import signal
import socket
import sys
import time
import types
import unittest  # noqa: F401 - imported now, so its snapshot is from before project code

import pytest

# -- everything this plugin calls, bound before code under test runs ------------------------

_BOUND = {  # watched name -> (module, attribute): compared at the end like the runner's
    "os.write": (os, "write"), "os.open": (os, "open"), "os.close": (os, "close"),
    "os.killpg": (os, "killpg"), "os.getpgid": (os, "getpgid"), "os._exit": (os, "_exit"),
    "os.getpid": (os, "getpid"), "os.listdir": (os, "listdir"), "os.kill": (os, "kill"),
    "time.monotonic": (time, "monotonic"), "time.sleep": (time, "sleep"),
    "signal.signal": (signal, "signal"), "signal.pthread_kill": (signal, "pthread_kill"),
    "sys.setprofile": (sys, "setprofile"), "sys.getprofile": (sys, "getprofile"),
    "_thread.start_new_thread": (_thread, "start_new_thread"),
    "_thread.get_ident": (_thread, "get_ident"), "builtins.open": (builtins, "open"),
    "builtins.isinstance": (builtins, "isinstance"), "builtins.len": (builtins, "len"),
    "builtins.ord": (builtins, "ord"), "builtins.repr": (builtins, "repr"),
    "builtins.str": (builtins, "str"), "builtins.getattr": (builtins, "getattr"),
    "builtins.int": (builtins, "int"), "builtins.float": (builtins, "float"),
    "builtins.hasattr": (builtins, "hasattr"), "builtins.callable": (builtins, "callable"),
    "builtins.vars": (builtins, "vars"), "builtins.id": (builtins, "id"),
    "builtins.min": (builtins, "min"), "builtins.max": (builtins, "max"),
    "json.load": (json, "load"),
    "_json.encode_basestring_ascii": (_json, "encode_basestring_ascii"),
}
_BOUND_VALUES = {name: getattr(mod, attr) for name, (mod, attr) in _BOUND.items()}


class _Bound:
    """The functions the plugin calls, held in an instance, not as module globals: tools
    such as freezegun replace every module global that *is* ``time.monotonic`` (ours too),
    while they leave what an object holds alone."""

    __slots__ = ("write", "open", "kill", "killpg", "getpgid", "exit", "getpid", "monotonic",
                 "sleep",
                 "signal", "pthread_kill", "setprofile", "getprofile", "start_thread",
                 "get_ident")

    def __init__(self):
        self.write, self.open, self.kill = os.write, os.open, os.kill
        self.killpg, self.getpgid, self.exit, self.getpid = (os.killpg, os.getpgid, os._exit,
                                                             os.getpid)
        self.monotonic, self.sleep = time.monotonic, time.sleep
        self.signal, self.pthread_kill = signal.signal, signal.pthread_kill
        self.setprofile, self.getprofile = sys.setprofile, sys.getprofile
        self.start_thread, self.get_ident = _thread.start_new_thread, _thread.get_ident


_B = _Bound()
_isinstance, _len, _ord, _repr, _str, _getattr = isinstance, len, ord, repr, str, getattr
_min, _max = min, max
_int, _float, _hasattr, _callable, _vars, _id = int, float, hasattr, callable, vars, id
_FunctionType, _BuiltinType, _CodeType, _ModuleType = (
    types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.ModuleType)
_Failed = pytest.fail.Exception
_Function = pytest.Function
_MAIN_THREAD = _B.get_ident()


def _quote_slowly(text):
    """A JSON string: every character outside printable ASCII escaped (no library code)."""
    out = ['"']
    for ch in text:
        code = _ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 32 <= code < 127:
            out.append(ch)
        elif code < 0x10000:
            out.append("\\u%04x" % code)
        else:
            code -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
    out.append('"')
    return "".join(out)


try:  # the C function json itself uses, bound here: replacing json's attributes does nothing
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - CPython always has it
    _quote = _quote_slowly


def _encode(value):
    """JSON for the plugin's own events (dicts, lists, strings, numbers, bools, None)."""
    if value is None or value is True or value is False:
        return {None: "null", True: "true", False: "false"}[value]
    if _isinstance(value, _str):
        return _quote(value)
    if _isinstance(value, _float):
        return _float.__repr__(value)
    if _isinstance(value, _int):
        return _int.__repr__(value)
    if _isinstance(value, dict):
        return "{" + ", ".join(_quote(_str(k)) + ": " + _encode(v) for k, v in value.items()) + "}"
    if _isinstance(value, (list, tuple)):
        return "[" + ", ".join(_encode(v) for v in value) + "]"
    return _quote(_repr(value))


def _load_config():
    path = os.environ.pop("REPOGYM_PLUGIN_CONFIG", "")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    finally:
        os.unlink(path)


_CONFIG = _load_config()
_NONCE = _CONFIG.get("nonce", "")
_PATH = _CONFIG.get("report", "")
_SELECT = _CONFIG.get("select")
_EXCLUDE = frozenset(_CONFIG.get("exclude") or ())
_LIMITS = _CONFIG.get("limits") or None
_CHECK_RUNNER = _CONFIG.get("check_runner", True) is not False
_EXITFIRST = bool(_CONFIG.get("exitfirst"))
_SESSION = [None]
_FD = [None]


def _emit(obj):
    if not _PATH:
        return
    if _FD[0] is None:
        _FD[0] = _B.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    data = (_encode(obj) + "\n").encode("utf-8")
    while data:
        data = data[_B.write(_FD[0], data):]


# -- the runner's own code, as it was before any project code ran ---------------------------

_WATCHED = ("pytest", "_pytest", "pluggy", "unittest")


def _code(value):
    """What a callable runs: its code object, or the object itself for builtins."""
    value = _getattr(value, "__func__", value)
    return _getattr(value, "__code__", value)


def _facts(value):
    """What identifies a callable's behaviour: the object, its code, its defaults."""
    return (value, _code(value), _getattr(value, "__defaults__", None),
            _getattr(value, "__kwdefaults__", None))


def _members(owner, prefix, out):
    for attr, value in list(_vars(owner).items()):
        if _isinstance(value, property):
            out[prefix + attr] = (value, *(_code(f) for f in (value.fget, value.fset, value.fdel)))
        elif _isinstance(value, (staticmethod, classmethod)):
            out[prefix + attr] = (value, *_facts(value.__func__))
        elif _callable(value):
            out[prefix + attr] = _facts(value)


_BUILTIN_NAMES = frozenset(_vars(builtins))


def _runner_state():
    """Watched name -> (object, its code, ...): the runner's functions, classes, methods,
    and module globals that shadow a builtin (a module looks those up before builtins)."""
    state = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in _WATCHED:
            continue
        for attr, value in list(_vars(module).items()):
            if _isinstance(value, type) and value.__module__ == name:
                state[f"{name}.{attr}"] = (value,)
                _members(value, f"{name}.{attr}.", state)
            elif _isinstance(value, (_FunctionType, _BuiltinType)) or (
                    attr in _BUILTIN_NAMES and not attr.startswith("__")):
                state[f"{name}.{attr}"] = _facts(value)
    for name in _BOUND:
        state[name] = _facts(_BOUND_VALUES[name])
    return state


def _state_now(before):
    """The watched names' current values (looked up again), for the names in ``before``."""
    now = _runner_state()
    for name, (module, attr) in _BOUND.items():
        now[name] = _facts(_getattr(module, attr, None))
    return now


def _callables(value):
    """The function objects a watched value runs (a property's accessors, a wrapped
    static or class method's function, or the value itself)."""
    if _isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if f is not None]
    if _isinstance(value, (staticmethod, classmethod)):
        return [value.__func__]
    return [value]


def _known(value):
    """True when the runner (or a pytest plugin loaded before project code) already had
    every function this value runs: pytest moving its own functions around (its
    ``legacypath`` plugin does at configure time) is not tamper."""
    return all(_id(f) in _KNOWN for f in _callables(value))


def _differences(before, now):
    changed = []
    for key, was in before.items():
        cur = now.get(key)
        if cur is None or (_len(cur) != _len(was) or any(a is not b for a, b in zip(cur, was))
                           ) and not _known(cur[0]):
            changed.append(key)
    for key in now.keys() - before.keys():
        owner, _, attr = key.rpartition(".")
        new = (owner in before and _isinstance(before[owner][0], type)) or (
            owner in sys.modules and attr in _BUILTIN_NAMES)
        if new and not _known(now[key][0]):  # a method added to a watched class, a builtin
            changed.append(key)  # shadowed
    return sorted(changed)


_RUNNER = _runner_state() if _CHECK_RUNNER else {}
_KNOWN = {_id(f) for facts in _RUNNER.values() for f in _callables(facts[0])}
_KEEP: list = []
_PLUGINS = {"plugins": None, "impls": None, "modules": None}


def _learn(module):
    """Remember the functions of a plugin module loaded before project code."""
    for value in list(_vars(module).values()):
        if _isinstance(value, type) and value.__module__ == module.__name__:
            for member in list(_vars(value).values()):
                _KEEP.append(member)  # ids stay unique while the objects live
                _KNOWN.update(_id(f) for f in _callables(member))
        elif _isinstance(value, _FunctionType):
            _KEEP.append(value)
            _KNOWN.add(_id(value))


def _plugin_snapshot(pm):
    """Before the first conftest: the registered plugins, every hook implementation's
    function, and the modules loaded (classes from them may register instances later)."""
    if not _CHECK_RUNNER:
        return
    _PLUGINS["plugins"] = {_id(p) for p in pm.get_plugins()}
    for plugin in pm.get_plugins():
        if _isinstance(plugin, _ModuleType):
            _learn(plugin)
    _PLUGINS["impls"] = {_id(impl): (impl, impl.function) for impl in _hook_impls(pm)}
    _PLUGINS["modules"] = dict(sys.modules)


def _hook_impls(pm):
    for caller in list(_vars(pm.hook).values()):
        get = _getattr(caller, "get_hookimpls", None)
        if get is not None:
            yield from get()


def _legit_plugin(pm, plugin, named):
    """Registered before the first conftest; a conftest; a module some ``pytest_plugins``
    names; or an instance of a class from a module loaded before project code ran."""
    if _id(plugin) in _PLUGINS["plugins"]:
        return True
    if _isinstance(plugin, _ModuleType):
        conftests = _getattr(pm, "_conftest_plugins", ())
        return (plugin in conftests or plugin.__name__ in named or pm.get_name(plugin) in named
                or (not conftests and (_getattr(plugin, "__file__", "") or "").endswith(
                    "conftest.py")))
    cls = type(plugin)
    module = _PLUGINS["modules"].get(cls.__module__)
    if module is None:
        return False
    if "." not in cls.__qualname__:
        return _getattr(module, cls.__name__, None) is cls
    return _hasattr(module, cls.__qualname__.split(".")[0])


def _plugin_changes(pm):
    if _PLUGINS["plugins"] is None:
        return []
    named = set()
    for plugin in pm.get_plugins():
        spec = _getattr(plugin, "pytest_plugins", ()) if _isinstance(plugin, _ModuleType) else ()
        named.update([spec] if _isinstance(spec, _str) else list(spec or ()))
    changed = [f"plugin:{pm.get_name(p) or type(p).__name__}" for p in pm.get_plugins()
               if not _legit_plugin(pm, p, named)]
    live = {_id(impl) for impl in _hook_impls(pm)}
    for key, (impl, function) in _PLUGINS["impls"].items():
        if key not in live or impl.function is not function:
            changed.append(f"hookimpl:{impl.plugin_name}.{function.__name__}")
    return sorted(set(changed))


def _check_runner(session, when):
    if not _CHECK_RUNNER:
        return
    changed = _differences(_RUNNER, _state_now(_RUNNER)) + _plugin_changes(
        session.config.pluginmanager)
    if changed:
        _emit({"event": "runner_changed", "when": when, "what": changed[:50]})


# -- per-test time limits -------------------------------------------------------------------

_CLOCK = [None]  # (nodeid, deadline, limit, stage) of the running test, replaced whole
_TIMED_OUT = [False]  # the running test ran past its limit (its timeout event is written)
_INTERRUPTED = [False]  # ... and the interrupt was raised in one of its phases
_IN_PHASE = [False]  # the main thread is in the running test's setup, call or teardown
_WATCHING = [False]
_GRACE = _float((_LIMITS or {}).get("grace") or 1.0)
_POLL = 0.02  # how often the watchdog interrupts again a test past its limit
# The watchdog sleeps until the running test's deadline and runs no code before it: a
# thread that woke every few milliseconds shifted when the collector ran in the test's own
# thread, so a test counting gc.get_objects() (markupsafe's test_markup_leaks) failed in
# about half of the graded runs and passed in every plain one. _arm sets the clock, wakes
# it through _WAKE and waits (on _READY) until it has seen the new clock: it is asleep
# again before the test starts.
_WAKE, _READY = _thread.allocate_lock(), _thread.allocate_lock()
_WAKE.acquire()
_READY.acquire()
_SEEN = [None]  # the clock the watchdog waits on
_TIMEOUT_MAX = _thread.TIMEOUT_MAX


def _limit_of(nodeid):
    if not _LIMITS:
        return None
    limit = (_LIMITS.get("tests") or {}).get(nodeid, _LIMITS.get("default"))
    return _float(limit) if limit else None


def _release(lock):
    try:
        lock.release()
    except RuntimeError:  # not held: already released, nobody took it since
        pass


def _wait_for(state):
    """How long the watchdog sleeps on ``state`` (-1: until woken)."""
    if state is None:
        return -1
    left = _max(0.0, state[1] - _B.monotonic())
    return _min(left, _POLL) if state[3] == 1 else _min(left, _TIMEOUT_MAX)


def _watchdog():
    while True:
        state = _CLOCK[0]
        _SEEN[0] = state
        _release(_READY)
        if _WAKE.acquire(True, _wait_for(state)) or _CLOCK[0] is not state:
            continue  # woken for a new clock, or the test ended: look again
        nodeid, deadline, limit, stage = state
        if stage == 1 and not _INTERRUPTED[0]:
            _interrupt()  # it has not landed in a phase of the test yet: again
        if _B.monotonic() < deadline:
            continue
        if stage == 0:
            _CLOCK[0] = (nodeid, deadline + _GRACE, limit, 1)
            _TIMED_OUT[0] = True
            _emit({"event": "timeout", "nodeid": nodeid, "limit": limit, "hard": False})
            _interrupt()
            continue
        _emit({"event": "timeout", "nodeid": nodeid, "limit": limit, "hard": True})
        try:
            if _before is not None:  # what it started outside the process group dies too
                _reap(_before)
            _B.killpg(_B.getpgid(0), signal.SIGKILL)
        finally:
            _B.exit(137)


def _interrupt():
    try:
        _B.pthread_kill(_MAIN_THREAD, signal.SIGALRM)
    except OSError:
        pass


def _on_alarm(signum, frame):
    """Interrupt a test past its limit, but only inside one of its phases: there pytest
    turns the exception into that phase's report; raised in pytest's own code between the
    phases (a slow reporting hook, a starved CPU) it would end the session with an
    internal error, and every test after this one would silently not run. Elsewhere the
    watchdog sends the signal again until it lands in a phase, the test ends (it ran past
    its limit all the same: its timeout event is written) or the grace runs out."""
    state = _CLOCK[0]
    if state is None or state[3] != 1:
        if _callable(_PREVIOUS_ALARM):
            _PREVIOUS_ALARM(signum, frame)
        return
    if _IN_PHASE[0] and not _INTERRUPTED[0]:
        _INTERRUPTED[0] = True
        raise _Failed(f"Timeout: the test ran past its limit of {state[2]:.1f}s", pytrace=False)


_PREVIOUS_ALARM = None
if _LIMITS:
    _PREVIOUS_ALARM = _B.signal(signal.SIGALRM, _on_alarm)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    _IN_PHASE[0] = True
    try:
        yield
    finally:
        _IN_PHASE[0] = False


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    _IN_PHASE[0] = True
    try:
        yield
    finally:
        _IN_PHASE[0] = False


def _arm(nodeid):
    limit = _limit_of(nodeid)
    if limit is None:
        return
    if not _WATCHING[0]:
        _WATCHING[0] = True
        _B.start_thread(_watchdog, ())
    _set_clock((nodeid, _B.monotonic() + limit, limit, 0))


def _disarm():
    # not woken: the next test's _arm wakes it (a test without a limit, or the session's
    # end, may see it wake once, at this test's deadline, and go back to sleep)
    _CLOCK[0] = None


def _set_clock(state):
    """Give the watchdog ``state`` and wait until it sleeps on it (see _WAKE)."""
    _CLOCK[0] = state
    if _SEEN[0] is state:
        return
    _release(_WAKE)
    until = _B.monotonic() + 1.0  # it only has to take the GIL: never a test's time
    while _SEEN[0] is not state and _B.monotonic() < until:
        _READY.acquire(True, 0.05)


# -- evidence that a test's body ran --------------------------------------------------------

_BODY = {"target": None, "seen": None, "previous": None, "profile": None}


def _innermost_code(item):
    """The code object of the test function itself (through decorators' ``__wrapped__``)."""
    obj = _getattr(item, "obj", None) if _isinstance(item, _Function) else None
    seen = 0
    while obj is not None and seen < 20:
        seen += 1
        inner = _getattr(_getattr(obj, "hypothesis", None), "inner_test", None)
        inner = inner or _getattr(obj, "__wrapped__", None)
        if inner is None:
            break
        obj = inner
    code = _getattr(_getattr(obj, "__func__", obj), "__code__", None)
    return code if _isinstance(code, _CodeType) else None


_TARGET = [None]  # the running test's code object while its body is watched


def _profile_alone(frame, event, arg):
    if event == "call" and frame.f_code is _TARGET[0]:
        _body_entered()


def _profile_chained(frame, event, arg):
    if event == "call" and frame.f_code is _TARGET[0]:
        _body_entered()
    previous = _BODY["previous"]
    if previous is not None:
        previous(frame, event, arg)


def _body_entered():
    _BODY["seen"] = True
    _TARGET[0] = None
    _stop_watching_body()


def _stop_watching_body():
    body = _BODY
    if body["profile"] is not None and _B.getprofile() is body["profile"]:
        _B.setprofile(body["previous"])
    body["profile"] = None


def _expect_body(item):
    """Note the test's own code object; its body has not run yet."""
    code = _innermost_code(item)
    _BODY.update(target=code, seen=None if code is None else False, previous=None,
                 profile=None)


def _watch_body():
    """From now until the test's code object is entered (cheap: only the calls between
    here and the test function pay the profile hook)."""
    code = _BODY["target"]
    if code is None or _BODY["profile"] is not None or _BODY["seen"]:
        return
    _TARGET[0] = code
    previous = _B.getprofile()
    _BODY["previous"] = previous
    _BODY["profile"] = _profile_alone if previous is None else _profile_chained
    _B.setprofile(_BODY["profile"])


_FUNCTION_RUNTEST = _Function.runtest  # through pytest_pyfunc_call (unittest items are not)


# -- reports ---------------------------------------------------------------------------------

_MESSAGES: dict = {}  # (nodeid, when) -> the exception's own text, taken before any formatting
_BODIES: dict = {}  # nodeid -> whether its body ran (None: not a Python function)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    _plugin_snapshot(early_config.pluginmanager)
    yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    _IN_PHASE[0] = True
    _expect_body(item)
    if type(item).runtest is not _FUNCTION_RUNTEST:  # unittest items: watch from here
        _watch_body()
    try:
        yield
    finally:
        _IN_PHASE[0] = False
        _stop_watching_body()
        _TARGET[0] = None
        _BODIES[item.nodeid] = _BODY["seen"]


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    _watch_body()  # the test function is called next
    yield


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
    text = _getattr(report, "longreprtext", "") or ""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    if not lines:
        lines = [line.strip() for line in text.splitlines() if line.strip()][-3:]
    return "\n".join(lines)[:2000]


# -- side effects ----------------------------------------------------------------------------

_MARK_NAME = "REPOGYM_TEST_PROCESS"
_MARK = os.urandom(8).hex()
os.environ[_MARK_NAME] = _MARK  # inherited by every process a test starts
_ROOT = os.getcwd()
_WRITABLE = tuple(os.path.join(p, "") for p in ("/tmp", "/var/tmp", "/dev", "/proc/self"))
_HOSTNAME = socket.gethostname()
_MAX_EFFECTS = 10
_LINGER = 1.0  # seconds a test's processes get to finish exiting after its teardown
_REAP_FOR = 10.0  # seconds at most to kill what a test that ran past its limit left running
_RUNAWAY = 16  # processes left running by one test: a runaway (a fork bomb), killed too
_current = None  # node id of the running test, None between tests
_effects: list = []
_before = None  # the processes alive when the running test first started one
_SPAWNS = {"os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system",
           "subprocess.Popen"}
_busy = False  # the hook's own calls raise audit events too


def _note(text):
    if _len(_effects) < _MAX_EFFECTS and text not in _effects:
        _effects.append(text)


def _local_host(host):
    if host is None:
        return True
    if _isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = _str(host).split("%", 1)[0]
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
        ipaddress.ip_address(host.decode("ascii") if _isinstance(host, bytes) else host)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _remote(address):
    return _isinstance(address, tuple) and address and not _local_host(address[0])


def _outside(path):
    """A path a test writes that is neither in the work tree nor a temporary folder."""
    if _isinstance(path, int) or path is None:
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
        writes = any(c in mode for c in "wax+") if _isinstance(mode, _str) else bool(
            (flags or 0) & _WRITE_FLAGS)
        where = writes and _outside(path)
        if where:
            _note(f"writes outside the work tree: {where}")
    elif event in _PATH_EVENTS:
        for i in _PATH_EVENTS[event]:
            where = _outside(args[i]) if i < _len(args) else None
            if where:
                _note(f"{event.split('.')[-1]} outside the work tree: {where}")
    elif event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[-1]
        if _getattr(sock, "family", None) != _getattr(socket, "AF_UNIX", -1) and _remote(address):
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


def _state(pid):
    """The process's state letter (``b"R"``, ``b"T"`` for stopped, ...); None once gone."""
    try:
        return _read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return None


def _reap(before):
    """Stop, then kill, every process the running test started that is still alive, for up
    to ``_REAP_FOR`` seconds. Only for a test that ran past its limit or left at least
    ``_RUNAWAY`` processes: what it left is a runaway by then, and would starve the tests
    after it of processes and memory (a server a fixture started is left alone).

    Two passes, so that a fork bomb cannot outrun them however loaded the machine: first
    every such process is stopped (a stopped process forks no more, and while none dies no
    process slot is freed for a new one; a fork with a stop pending is restarted, so none
    slips through), until a listing finds none still running; only then are they killed."""
    deadline = _B.monotonic() + _REAP_FOR
    own = _B.getpid()
    while _B.monotonic() < deadline:
        running = [p for p in _pids() - before - {own}
                   if _state(p) not in (None, b"T", b"t", b"Z", b"X") and _started_here(p)]
        if not running:
            break
        _signal(running, signal.SIGSTOP)
    while _B.monotonic() < deadline + 1.0:
        left = [p for p in _pids() - before - {own} if _started_here(p)]
        if not left:
            return
        _signal(left, signal.SIGKILL)
        _B.sleep(0.01)


def _signal(pids, sig):
    for pid in pids:
        try:
            _B.kill(pid, sig)
        except OSError:  # gone meanwhile
            pass


def _left_running(before):
    deadline = _B.monotonic() + _LINGER
    while True:
        left = sorted(p for p in _pids() - before - {_B.getpid()} if _started_here(p))
        if not left or _B.monotonic() >= deadline:
            return left
        _B.sleep(0.05)


# -- the session -----------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _current, _before
    _effects.clear()
    _before = None
    _TIMED_OUT[0] = _INTERRUPTED[0] = False
    _current = item.nodeid
    _emit({"event": "begin", "nodeid": item.nodeid})
    _arm(item.nodeid)
    try:
        yield
    finally:
        _disarm()
        _current = None
    left = [] if _before is None else _left_running(_before)  # no process started, none left
    if left:
        _note(f"left {_len(left)} process(es) running, e.g. pid {left[0]}: {_command(left[0])}")
        if _TIMED_OUT[0] or _len(left) >= _RUNAWAY:
            _reap(_before)
    if _effects:
        _emit({"event": "side_effects", "nodeid": item.nodeid, "what": list(_effects)})


def pytest_sessionstart(session):
    _SESSION[0] = session
    _emit({"event": "start"})


def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid,
               "message": (_getattr(report, "longreprtext", "") or "")[-2000:]})


# -- test files the configuration does not name --------------------------------------------

_COLLECT = frozenset(os.path.normpath(f) for f in (
    *(_CONFIG.get("collect") or ()), *(n.split("::")[0] for n in _SELECT or ()))
    if f.endswith(".py"))  # a test patch's files, and those of the tests asked for


def _not_named(fspath, parent):
    """Whether ``fspath`` is a file to collect that pytest's own rules pass over (a test
    file at a commit whose ``python_files`` looks elsewhere, e.g. ``test.py``)."""
    if not _COLLECT or os.path.relpath(fspath, _ROOT) not in _COLLECT:
        return False
    try:
        if parent.session.isinitpath(fspath):
            return False
        from _pytest.pathlib import fnmatch_ex
    except (AttributeError, ImportError, TypeError):
        return False
    patterns = [*parent.config.getini("python_files"), "__init__.py"]
    return not any(fnmatch_ex(pattern, fspath) for pattern in patterns)


if _getattr(pytest, "version_tuple", (0,))[0] >= 7:
    def pytest_collect_file(file_path, parent):
        if _not_named(str(file_path), parent):
            return parent.session.gethookproxy(file_path).pytest_pycollect_makemodule(
                module_path=file_path, parent=parent)
        return None
else:  # pytest 6 and older: py.path arguments
    def pytest_collect_file(path, parent):
        if _not_named(str(path), parent):
            return parent.session.gethookproxy(path).pytest_pycollect_makemodule(
                path=path, parent=parent)
        return None


def pytest_collection_modifyitems(session, config, items):
    wanted = None if _SELECT is None else set(_SELECT)
    keep, drop = [], []
    for item in items:
        chosen = wanted is None or item.nodeid in wanted or item.nodeid.split("::")[0] in wanted
        ok = chosen and item.nodeid not in _EXCLUDE
        (keep if ok else drop).append(item)
    if drop:
        items[:] = keep
        config.hook.pytest_deselected(items=drop)


def _work_tree_plugins(pm):
    """Files of the work tree that pytest loaded as plugins, conftests aside."""
    files = []
    for plugin in pm.get_plugins():
        path = _getattr(plugin, "__file__", None) if _isinstance(plugin, _ModuleType) else None
        if _isinstance(path, _str) and path.startswith(os.path.join(_ROOT, "")) and \
                not path.endswith("conftest.py"):
            files.append(os.path.relpath(path, _ROOT))
    return sorted(files)


def pytest_collection_finish(session):
    _emit({"event": "collected", "count": _len(session.items)})
    _emit({"event": "plugins", "files": _work_tree_plugins(session.config.pluginmanager)})
    _check_runner(session, "collection")


def pytest_runtest_logreport(report):
    # a subtest's report (pytest 9's SubtestReport, for unittest's subTest and the subtests
    # fixture): its failure fails the test; its skip or pass leaves the test's own outcome
    subtest = _hasattr(report, "context") and _getattr(
        _getattr(report, "__class__", None), "__name__", "") == "SubtestReport"
    _emit({
        "event": "test",
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "subtest": subtest,
        "wasxfail": _hasattr(report, "wasxfail"),
        "duration": _getattr(report, "duration", 0.0),
        "message": _message(report),
        "body": _BODIES.get(report.nodeid) if report.when == "call" else None,
    })
    # only a failure, or the test's own call skipped (not a subtest's), stops the session
    if _EXITFIRST and _SESSION[0] is not None and not _SESSION[0].shouldfail and (
            report.failed or (report.when == "call" and report.skipped and not subtest)):
        _SESSION[0].shouldfail = "repogym: stopping at the first test that does not pass"
        # pytest exits 1 even when the test that stopped it was skipped: the host must know
        _emit({"event": "stopped", "nodeid": report.nodeid, "nonce": _NONCE})


def pytest_sessionfinish(session, exitstatus):
    _check_runner(session, "finish")
    _emit({"event": "finish", "exitstatus": _int(exitstatus), "nonce": _NONCE})
