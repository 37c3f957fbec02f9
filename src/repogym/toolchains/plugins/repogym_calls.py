"""pytest plugin: records what selected tests call in the project's code (a call tracer).

Loaded as an extra run plugin (``repogym.toolchains.base.RunPlugin``) under a random module
name. Its settings are the JSON file beside it (``<this file without .py>.json``, read and
deleted at import)::

    {"tests": [node ids], "out": path,
     "targets": [{"path": "pkg/mod.py", "qualname": "Stack.push", "first_line": 10,
                  "last_line": 20, "kind": "function" | "class" | "module"}, ...],
     "max_calls": 40, "max_repr": 80, "max_events": 1000000}

During the *call phase* of each listed test only, a trace function (``sys.settrace``,
chained to one already set, removed afterwards) watches the calls the test makes into the
project's code. An *entry* is the outermost project frame (a file under the work tree that
is neither test code nor an installed package): the function or method the test called, not
the private helpers beneath it. Entries whose dynamic extent reaches a target are written
to ``out``, one JSON object per line, flushed::

    {"event": "start", "test", "index", "function", "kind", "args", "reached",
     "receiver" (methods: the instance's short repr)}
        when the entry first reaches a target (a run killed while it runs keeps this)
    {"event": "call", ... the same ..., "result": repr} or {..., "raised": "Type: msg"}
        when it ends
    {"event": "drop", "test", "index"}
        the tracer stopped while the entry ran (its budget was spent): no outcome known

``function`` is the public dotted name a user imports (the shortest import path of the
package that exports the same object), with the instance's class for methods; ``args``
and ``result`` are short reprs that never show an object address (``<Foo object>``), and a
lambda, a function or a class the test itself defines is shown as ``<function>`` /
``<object>``. Only the entry frame gets a local trace function (without line events), so
the cost is one call of the trace function per Python call in the listed tests; after
``max_events`` calls in one test the tracer removes itself for the rest of that test (what it
wrote stays), so a hot loop costs about a second more, not a timeout.

This file is copied into the sandbox as is: the standard library and pytest only.
"""

import json
import os
import re
import sys
import types

import pytest

_CO_GEN = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable/async generator
_RETURNS = set()
for _name in ("RETURN_VALUE", "RETURN_CONST"):
    import dis as _dis

    if _name in _dis.opmap:
        _RETURNS.add(_dis.opmap[_name])
_SKIP_DIRS = ("site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "node_modules")
_TEST_DIRS = ("tests", "test", "testing")


def _load():
    path = os.path.splitext(__file__)[0] + ".json"
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return {}
    try:
        os.unlink(path)
    except OSError:
        pass
    return config if isinstance(config, dict) else {}


_CONFIG = _load()
_TESTS = set(_CONFIG.get("tests") or ())
_MAX_CALLS = int(_CONFIG.get("max_calls") or 40)
_MAX_REPR = int(_CONFIG.get("max_repr") or 80)
_MAX_EVENTS = int(_CONFIG.get("max_events") or 1000000)
_ROOTS = [os.path.join(os.path.realpath(os.getcwd()), "")]
_TEST_FILES: set = set()


class _Targets:
    """Which code objects are targets (cached per code object)."""

    def __init__(self, raw):
        self.by_path = {}
        for t in raw or ():
            try:
                key = str(t["path"]) + "::" + str(t["qualname"])
                item = (str(t["qualname"]), int(t["first_line"]), int(t["last_line"]),
                        str(t.get("kind") or "function"), key)
            except (KeyError, TypeError, ValueError):
                continue
            self.by_path.setdefault(str(t["path"]).replace(os.sep, "/"), []).append(item)
        self.cache = {}

    def key(self, code):
        try:
            return self.cache[code]
        except KeyError:
            found = self.cache[code] = self._find(code)
            return found

    def _find(self, code):
        items = self.by_path.get(_relative(code.co_filename, self.by_path))
        if not items:
            return None
        qual = getattr(code, "co_qualname", None)
        line = code.co_firstlineno
        for name, first, last, kind, key in items:
            if kind == "module":
                return key
            if not first <= line <= last:
                continue
            bare = qual is None and name.rsplit(".", 1)[-1] == code.co_name  # Python < 3.11
            if kind == "class" or name == qual or bare:
                return key
        return None


_REL: dict = {}


def _relative(filename, paths=()):
    """The repo-relative path of a code file (an installed copy: by its path's tail)."""
    try:
        return _REL[filename]
    except KeyError:
        pass
    real = os.path.realpath(filename)
    rel = None
    for root in _ROOTS:
        if real.startswith(root):
            rel = real[len(root):].replace(os.sep, "/")
            break
    if rel is None:
        for path in paths:
            tails = {path, path[4:] if path.startswith(("src/", "lib/")) else path}
            if any(real.replace(os.sep, "/").endswith("/" + tail) for tail in tails):
                rel = path
                break
    _REL[filename] = rel
    return rel


def _is_test_path(rel):
    parts = rel.split("/")
    base = parts[-1]
    return (base == "conftest.py" or base.startswith("test_") or base.endswith("_test.py")
            or any(p in _TEST_DIRS for p in parts[:-1]))


_KIND: dict = {}  # filename -> "project" | "test" | "other"


def _file_kind(filename):
    try:
        return _KIND[filename]
    except KeyError:
        pass
    real = os.path.realpath(filename)
    rel = _relative(filename, _TARGETS.by_path)
    if real in _TEST_FILES:
        kind = "test"
    elif rel is None or filename.startswith("<") or any(
            d in real.split(os.sep) for d in _SKIP_DIRS):
        kind = "project" if rel in _TARGETS.by_path else "other"
    else:
        kind = "test" if _is_test_path(rel) else "project"
    _KIND[filename] = kind
    return kind


def _from_tests(obj):
    """A function or class the tests define (its name means nothing to a user)."""
    obj = getattr(obj, "__func__", obj)
    code = getattr(obj, "__code__", None)
    if code is not None:
        return _file_kind(code.co_filename) == "test"
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    return bool(path) and _file_kind(path) == "test"


def _anonymous(func):
    """A lambda, a nested function, or one the tests define: shown as ``<function>``."""
    qual = getattr(func, "__qualname__", "") or ""
    return "<lambda>" in qual or "<locals>" in qual or _from_tests(func)


_PUBLIC: dict = {}


def _public_module(modname, attr, obj):
    """The shortest public package path that exports ``obj`` as ``attr``, else ``modname``."""
    key = (modname, attr)
    if key in _PUBLIC:
        return _PUBLIC[key]
    parts = modname.split(".")
    found = modname
    for i in range(1, len(parts) + 1):
        if any(p.startswith("_") for p in parts[:i]) and i < len(parts):
            continue
        module = sys.modules.get(".".join(parts[:i]))
        if module is not None and getattr(module, attr, None) is obj:
            found = ".".join(parts[:i])
            break
    _PUBLIC[key] = found
    return found


def _class_name(cls):
    """``pkg.Stack`` for a project class; a class the tests derive is named by its base."""
    for klass in getattr(cls, "__mro__", (cls,)):
        if not _from_tests(klass):
            cls = klass
            break
    top = cls.__qualname__.split(".")[0]
    module = sys.modules.get(cls.__module__)
    owner = getattr(module, top, None) if module is not None else None
    prefix = _public_module(cls.__module__, top, owner) if owner is not None else cls.__module__
    return cls.__qualname__ if prefix == "builtins" else prefix + "." + cls.__qualname__


def _callable_name(obj):
    """How a short repr shows a function or class passed as a value."""
    if isinstance(obj, type):
        return "<class>" if _from_tests(obj) else _class_name(obj)
    if _anonymous(obj):
        return "<function>"
    func = getattr(obj, "__func__", obj)
    module = getattr(func, "__module__", None) or ""
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", "?")
    if module in ("builtins", ""):
        return qual
    top = qual.split(".")[0]
    owner = getattr(sys.modules.get(module), top, None)
    return (_public_module(module, top, owner) if owner is not None else module) + "." + qual


_OBJECT = re.compile(r"<([\w.]+) object at 0x[0-9a-fA-F]+>")
_FUNCTION = re.compile(r"<function ([\w.<>]+) at 0x[0-9a-fA-F]+>")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+| id='\d+'")


def _test_module(name):
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return bool(path) and _file_kind(path) == "test"


def _object_text(match):
    module, _, name = match.group(1).rpartition(".")
    return "<object>" if module and _test_module(module) else "<%s object>" % name


def _function_text(match):
    name = match.group(1)
    return "<function>" if "<" in name else "<function %s>" % name


def _scrub(text):
    """No object addresses, and no names of the tests' own classes or local functions:
    ``<pkg.X object at 0x..>`` -> ``<X object>``, a test's class -> ``<object>``."""
    text = _OBJECT.sub(_object_text, text)
    text = _FUNCTION.sub(_function_text, text)
    return _ADDRESS.sub("", text)


def _repr(value, depth=0):
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                          type)):
        return _callable_name(value)
    if isinstance(value, str) and len(value) > 2 * _MAX_REPR:
        return repr(value[:2 * _MAX_REPR])
    if isinstance(value, (list, tuple, set, frozenset, dict)) and depth < 3:
        return _container(value, depth)
    if type(value).__repr__ is object.__repr__:
        return "<object>" if _from_tests(type(value)) else _fields(value, depth)
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not break the test
        return "<%s object>" % type(value).__name__
    if " at 0x" in text and _from_tests(type(value)):
        return "<object>"
    return text[:4 * _MAX_REPR]


def _fields(value, depth):
    """A default repr made useful: ``<Point x=1, y=3>`` (a few public attributes), else
    ``<Point object>``."""
    name = type(value).__name__
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict) and 0 < len(attrs) <= 4 and depth < 2 and all(
            isinstance(k, str) and not k.startswith("_") for k in attrs):
        inner = ", ".join("%s=%s" % (k, _repr(v, depth + 1)) for k, v in attrs.items())
        if len(inner) <= _MAX_REPR:
            return "<%s %s>" % (name, inner)
    return "<%s object>" % name


def _container(value, depth):
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            items.append(_repr(k, depth + 1) + ": " + _repr(v, depth + 1))
            if sum(map(len, items)) > _MAX_REPR:
                break
        return "{" + ", ".join(items) + ("}" if len(items) == len(value) else ", …}")
    items = []
    for v in value:
        items.append(_repr(v, depth + 1))
        if sum(map(len, items)) > _MAX_REPR:
            break
    rest = "" if len(items) == len(value) else ", …"
    if isinstance(value, list):
        return "[" + ", ".join(items) + rest + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(items) + ("," if len(value) == 1 else "") + rest + ")"
    if not value:
        return "set()" if isinstance(value, set) else "frozenset()"
    body = "{" + ", ".join(items) + rest + "}"
    return body if isinstance(value, set) else "frozenset(" + body + ")"


def _short(value):
    """A short repr: at most max_repr characters, never an object address."""
    try:
        text = _scrub(_repr(value))
    except Exception:  # noqa: BLE001
        text = "<%s object>" % type(value).__name__
    return text if len(text) <= _MAX_REPR else text[:_MAX_REPR - 1] + "…"


def _raised(exc):
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001
        message = ""
    text = type(exc).__name__ + (": " + _scrub(message) if message else "")
    return text if len(text) <= 2 * _MAX_REPR else text[:2 * _MAX_REPR - 1] + "…"


_TARGETS = _Targets(_CONFIG.get("targets"))


def _param_names(code):
    """Positional names, keyword-only names, ``*args`` name, ``**kwargs`` name."""
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    i = npos + nkw
    star = names[i] if code.co_flags & 0x04 else None
    i += 1 if star else 0
    starstar = names[i] if code.co_flags & 0x08 else None
    return names[:npos], names[npos:npos + nkw], star, starstar


def _function_object(frame, owner):
    """The function whose code runs in ``frame`` (for its defaults), if it can be found."""
    code = frame.f_code
    if owner is not None:
        for klass in getattr(owner, "__mro__", ()):
            candidate = klass.__dict__.get(code.co_name)
            candidate = getattr(candidate, "__func__", getattr(candidate, "fget", candidate))
            if getattr(candidate, "__code__", None) is code:
                return candidate
        return None
    candidate = frame.f_globals.get(code.co_name)
    return candidate if getattr(candidate, "__code__", None) is code else None


def _args(frame, code, skip_first, func):
    """Short reprs of the call's arguments; trailing ones left at their defaults dropped."""
    positional, kwonly, star, starstar = _param_names(code)
    local = frame.f_locals
    defaults = getattr(func, "__defaults__", None) or ()
    kwdefaults = getattr(func, "__kwdefaults__", None) or {}
    start = 1 if skip_first else 0
    values = [local.get(n) for n in positional[start:]]
    first_default = len(positional) - len(defaults)
    while values and not star:
        i = start + len(values) - 1
        if i < first_default or values[-1] is not defaults[i - first_default]:
            break
        values.pop()
    out = [_short(v) for v in values]
    if star:
        out += [_short(v) for v in local.get(star) or ()]
    out += ["%s=%s" % (n, _short(local.get(n))) for n in kwonly
            if n not in kwdefaults or local.get(n) is not kwdefaults[n]]
    if starstar:
        out += ["%s=%s" % (k, _short(v)) for k, v in (local.get(starstar) or {}).items()]
    return out


def _owner(frame, code):
    """The instance (or class, for a classmethod) a method runs on; None for a function."""
    names = code.co_varnames[:code.co_argcount]
    if not names or names[0] not in ("self", "cls"):
        return None
    owner = frame.f_locals.get(names[0])
    if names[0] == "cls" and not isinstance(owner, type):
        return None
    return owner


def _describe(frame):
    """(public name, kind, args, instance or None) of an entry frame."""
    code = frame.f_code
    owner = _owner(frame, code)
    if owner is not None:
        klass = owner if isinstance(owner, type) else type(owner)
        func = _function_object(frame, klass)
        if code.co_name == "__init__":
            name, kind = _class_name(klass), "constructor"
        elif isinstance(_lookup(klass, code.co_name), property):
            name, kind = _class_name(klass) + "." + code.co_name, "property"
        else:
            name, kind = _class_name(klass) + "." + code.co_name, "method"
        return name, kind, _args(frame, code, True, func), owner
    qual = getattr(code, "co_qualname", None) or code.co_name
    module = frame.f_globals.get("__name__") or "?"
    top = qual.split(".")[0]
    prefix = _public_module(module, top, frame.f_globals.get(top))
    func = _function_object(frame, None)
    return prefix + "." + qual, "function", _args(frame, code, False, func), None


def _lookup(klass, name):
    for k in getattr(klass, "__mro__", ()):
        if name in k.__dict__:
            return k.__dict__[name]
    return None


_UNSEEN = object()


class _Entry:
    """The outermost project call running now, and what it has reached."""

    __slots__ = ("frame", "name", "kind", "args", "owner", "receiver", "reached", "exc",
                 "started", "rename")

    def __init__(self, frame):
        self.frame = frame
        self.name, self.kind, self.args, self.owner = _describe(frame)
        method = self.kind in ("method", "property") and not isinstance(self.owner, type)
        self.receiver = _short(self.owner) if method else None
        self.reached = []
        self.exc = None
        self.started = False
        self.rename = "<locals>" in self.name  # a wrapper: named after what it wraps


class _Recorder:
    """The trace function of one test's call phase."""

    def __init__(self, nodeid, previous, out):
        self.nodeid, self.previous, self.out = nodeid, previous, out
        self.entry = None
        self.index = 0
        self.full = False
        self.budget = _MAX_EVENTS

    def __call__(self, frame, event, arg):
        theirs = self.previous(frame, event, arg) if self.previous is not None else None
        self.budget -= 1
        if self.budget < 0:
            self._stop()
            return theirs
        mine = None if self.full else self._on_call(frame)
        if theirs is None or mine is None:
            return mine or theirs
        return _Both(mine, theirs)

    def _stop(self):
        """Out of budget: forget the entry in flight and hand tracing back for this test."""
        if self.entry is not None and self.entry.started:
            self.out.write(json.dumps({"event": "drop", "test": self.nodeid,
                                       "index": self.index}) + "\n")
            self.out.flush()
        self.entry, self.full = None, True
        sys.settrace(self.previous)

    def _on_call(self, frame):
        code = frame.f_code
        entry = self.entry
        if entry is not None:
            key = _TARGETS.cache.get(code, _UNSEEN)
            if key is _UNSEEN:
                key = _TARGETS.key(code)
            if entry.rename and frame.f_back is entry.frame \
                    and _file_kind(code.co_filename) == "project":
                self._rename(entry, frame)
            if key is not None and key not in entry.reached:
                entry.reached.append(key)
                self._start(entry)
            return None
        if code.co_flags & _CO_GEN or _file_kind(code.co_filename) != "project":
            return None
        self.entry = entry = _Entry(frame)
        key = _TARGETS.key(code)
        if key is not None:
            entry.reached.append(key)
            self._start(entry)
        frame.f_trace_lines = False
        return self._local

    def _rename(self, entry, frame):
        name = _describe(frame)[0]
        if "<locals>" not in name:
            entry.name, entry.rename = name, False

    def _local(self, frame, event, arg):
        entry = self.entry
        if entry is None or frame is not entry.frame:
            return None
        if event == "exception":
            entry.exc = arg[1]
        elif event == "return":
            self.entry = None
            self._finish(entry, frame, arg)
        return self._local

    def _start(self, entry):
        if not entry.started:
            entry.started = True
            self._write("start", entry, {})

    def _finish(self, entry, frame, value):
        if not entry.reached:
            return
        code = frame.f_code.co_code
        returned = frame.f_lasti < len(code) and code[frame.f_lasti] in _RETURNS
        if returned or entry.exc is None:
            shown = entry.owner if entry.kind == "constructor" else value
            self._write("call", entry, {"result": _short(shown)})
        else:
            self._write("call", entry, {"raised": _raised(entry.exc)})
        self.index += 1
        self.full = self.index >= _MAX_CALLS

    def _write(self, event, entry, extra):
        record = {"event": event, "test": self.nodeid, "index": self.index,
                  "function": entry.name, "kind": entry.kind, "args": entry.args,
                  "reached": entry.reached}
        if entry.receiver is not None:
            record["receiver"] = entry.receiver
        record.update(extra)
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()


class _Both:
    """Two local trace functions on one frame (ours, and the one set before ours)."""

    __slots__ = ("mine", "theirs")

    def __init__(self, mine, theirs):
        self.mine, self.theirs = mine, theirs

    def __call__(self, frame, event, arg):
        if self.mine is not None:
            self.mine = self.mine(frame, event, arg)
        if self.theirs is not None:
            self.theirs = self.theirs(frame, event, arg)
        return self if self.mine is not None or self.theirs is not None else None


_OUT = None


def _stream():
    global _OUT
    if _OUT is None:
        _OUT = open(_CONFIG["out"], "a", encoding="utf-8")
    return _OUT


def pytest_collection_modifyitems(session, config, items):
    """Every collected test module is test code, wherever it lives."""
    for item in items:
        path = getattr(item, "path", None) or getattr(item, "fspath", None)
        if path is not None:
            _TEST_FILES.add(os.path.realpath(str(path)))
    root = getattr(config, "rootpath", None) or getattr(config, "rootdir", None)
    if root is not None:
        extra = os.path.join(os.path.realpath(str(root)), "")
        if extra not in _ROOTS:
            _ROOTS.append(extra)
    _KIND.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if item.nodeid not in _TESTS or not _CONFIG.get("out"):
        yield
        return
    previous = sys.gettrace()
    recorder = _Recorder(item.nodeid, previous, _stream())
    sys.settrace(recorder)
    try:
        yield
    finally:
        sys.settrace(previous)
