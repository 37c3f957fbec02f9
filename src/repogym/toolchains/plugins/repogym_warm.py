"""A warm pytest process that forks one child per test run (started by repogym's judge).

Why: a fresh ``python -m pytest`` spends most of a short run starting the interpreter,
importing pytest and the project's dependencies and collecting. This server does that once:
it imports pytest, runs one collection of the whole suite (which imports every third-party
module the tests use), then forgets every module that lives in the work tree. Each run
forks; the child re-imports the project's code and tests *from disk* (so the files as they
are now, with whatever patch was applied) and runs pytest with repogym's report plugin,
exactly as a fresh run would, in its own session.

When the test runner itself holds on to the project's code (the project is pytest, one of
its dependencies, or a plugin it loads), forgetting the modules cannot work: the server
answers ``warm: false`` and repogym runs fresh processes instead.

Protocol (JSON lines; answers are ``"<tag> <json>"``, tag = ``argv[1]``)::

    {"op": "start"} -> {"pid": N, "warm": bool, "why": str, "seconds": s, "forgot": n}
    {"op": "run", "dir": scratch, "plugin": name, "source": text, "config": text,
     "launcher": name, "launcher_source": text (repogym_launch.py: pinned configuration),
     "args": [...], "paths": [...], "env": {...}, "timeout": s,
     "plugins": [{"module": name, "source": text, "config": text, "out": path}, ...]}
        -> {"exit_code": n, "timed_out": bool, "duration": s, "report": text, "log": text,
            "extras": {module: what it wrote to its "out"}}

``paths`` are test files to collect (only those that exist are passed to pytest).
This file runs inside the sandbox with the standard library and pytest only.
"""

import gc
import json
import os
import shutil
import signal
import sys
import time
import types

LOG_TAIL = 4000


def _under(path, root):
    try:
        real = os.path.realpath(path)
    except (TypeError, ValueError):
        return False
    return real == root or real.startswith(root + os.sep)


def _project_modules(root):
    names = set()
    for name, module in list(sys.modules.items()):
        files = [getattr(module, "__file__", None)] + list(getattr(module, "__path__", None) or [])
        if any(f and _under(f, root) for f in files):
            names.add(name)
    return names


def _holders(forgotten):
    """Modules that stay loaded but refer to a forgotten one (or to something defined there)."""
    held = []
    for name, module in list(sys.modules.items()):
        if name in forgotten or module is None:
            continue
        for value in list(vars(module).values()):
            owner = value.__name__ if isinstance(value, types.ModuleType) else getattr(
                value, "__module__", None)
            if isinstance(owner, str) and owner in forgotten:
                held.append("%s (uses %s)" % (name, owner))
                break
    return held


def _quietly(fn):
    """Run ``fn`` with fds 1 and 2 on /dev/null (fd 1 is the answer stream)."""
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        return fn()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def _memoize_compiles(root):
    """Compile each (file, content) of the work tree once, in the server.

    Children inherit the code objects: a module whose bytes are unchanged is not compiled
    (or, for test files, assertion-rewritten) again; a patched one has other bytes and is
    compiled anew. Keyed by a hash of the content, never by mtime (a same-size patch
    applied within the second must not hit a stale entry).
    """
    import hashlib
    import importlib._bootstrap_external as bootstrap

    memo = {}

    def key(path, data, extra):
        return (path, hashlib.sha256(data).digest(), extra)

    compile_source = bootstrap.SourceLoader.source_to_code

    def source_to_code(self, data, path, *, _optimize=-1):
        if not isinstance(path, str) or not _under(path, root):
            return compile_source(self, data, path, _optimize=_optimize)
        k = key(path, bytes(data), _optimize)
        if k not in memo:
            memo[k] = compile_source(self, data, path, _optimize=_optimize)
        return memo[k]

    bootstrap.SourceLoader.source_to_code = source_to_code
    try:
        import _pytest.assertion.rewrite as rewrite
    except ImportError:
        return
    rewrite_test = getattr(rewrite, "_rewrite_test", None)
    if rewrite_test is None:
        return

    def _rewrite_test(fn, config):
        try:
            k = key(str(fn), fn.read_bytes(), "pytest-rewrite")
        except OSError:
            return rewrite_test(fn, config)
        if k not in memo:
            memo[k] = rewrite_test(fn, config)
        return memo[k]

    rewrite._rewrite_test = _rewrite_test


def op_start(req, root):
    start = time.monotonic()
    sys.dont_write_bytecode = True  # no .pyc in the work tree (mtime-keyed: could go stale)
    import ipaddress  # noqa: E401,F401 - what the report plugin imports

    import pytest  # noqa: F401 - warmed here, used by every child

    early = _project_modules(root)
    if early:
        return {"warm": False, "why": "the test runner imports the project: "
                + ", ".join(sorted(early)[:5])}
    _memoize_compiles(root)
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    _quietly(lambda: pytest.main(args + list(req.get("args") or [])))
    forgotten = _project_modules(root)
    for name in forgotten:
        del sys.modules[name]
    held = _holders(forgotten)
    if held:
        return {"warm": False, "why": "loaded modules keep the project's code: "
                + ", ".join(held[:5])}
    gc.collect()
    gc.freeze()  # children never scan (and so never copy) the server's objects
    return {"warm": True, "why": "", "seconds": time.monotonic() - start,
            "forgot": len(forgotten)}


def _child(req, root):
    os.setsid()
    log = os.open(os.path.join(req["dir"], "log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ.update(req.get("env") or {})
    sys.dont_write_bytecode = True
    sys.path.insert(0, req["dir"])
    os.chdir(root)
    import pytest

    paths = [p for p in req.get("paths") or [] if os.path.exists(p)]
    extra = [arg for p in req.get("plugins") or [] for arg in ("-p", p["module"])]
    code = 4
    try:
        __import__(req["plugin"])  # before any project code, as the launcher does
        code = int(pytest.main(req["pinned"] + list(req.get("args") or [])
                               + ["-p", req["plugin"]] + extra + paths))
    except BaseException:  # noqa: BLE001 - the log tells the host what went wrong
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid, timeout):
    """Wait for ``pid``; kill its session at the deadline. (exit code, timed out)."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            return (128 - code if code < 0 else code), False
        if time.monotonic() >= deadline:
            _kill(pid)
            os.waitpid(pid, 0)
            return -9, True
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def _kill(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path):
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(fh.tell() - LOG_TAIL, 0))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


_LAUNCHERS: dict = {}  # launcher source -> its module (run here, in the server)
_PINNED: dict = {}  # (HEAD, the configuration files' stats) -> the pinned arguments


def _head(root):
    """The commit checked out (read from .git: no subprocess)."""
    git = os.path.join(root, ".git")
    try:
        with open(os.path.join(git, "HEAD"), encoding="utf-8") as fh:
            head = fh.read().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        try:
            with open(os.path.join(git, ref), encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError:
            with open(os.path.join(git, "packed-refs"), encoding="utf-8") as fh:
                for line in fh:
                    if line.rstrip().endswith(" " + ref):
                        return line.split()[0]
    except OSError:
        pass
    return None


def _pinned(req, root):
    """The launcher's pinned arguments, worked out once per commit and config files."""
    source = req["launcher_source"]
    launcher = _LAUNCHERS.get(source)
    if launcher is None:
        launcher = types.ModuleType("repogym_launcher")
        exec(compile(source, "repogym_launch.py", "exec"), launcher.__dict__)
        _LAUNCHERS[source] = launcher
    stats = []
    for name in launcher.config_names():
        try:
            st = os.stat(os.path.join(root, name))
            stats.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    key = (_head(root), tuple(stats))
    if key[0] is None or key not in _PINNED:
        _PINNED[key] = launcher.pinned_args(root)
    return _PINNED[key]


def op_run(req, root):
    os.makedirs(req["dir"], mode=0o700)
    with open(os.path.join(req["dir"], req["plugin"] + ".py"), "w", encoding="utf-8") as fh:
        fh.write(req["source"])
    with open(os.path.join(req["dir"], "config.json"), "w", encoding="utf-8") as fh:
        fh.write(req["config"])
    with open(os.path.join(req["dir"], req["launcher"] + ".py"), "w", encoding="utf-8") as fh:
        fh.write(req["launcher_source"])
    for plugin in req.get("plugins") or []:
        for suffix, text in ((".py", plugin["source"]), (".json", plugin["config"])):
            with open(os.path.join(req["dir"], plugin["module"] + suffix), "w",
                      encoding="utf-8") as fh:
                fh.write(text)
    req["pinned"] = _pinned(req, root)
    start = time.monotonic()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        _child(req, root)
    code, timed_out = _wait(pid, float(req.get("timeout") or 600.0))
    _kill(pid)  # what the run left behind in its session
    answer = {"exit_code": code, "timed_out": timed_out, "duration": time.monotonic() - start,
              "log": _tail(os.path.join(req["dir"], "log"))}
    answer["report"] = _text(req["report"])
    answer["extras"] = {p["module"]: _text(p["out"]) for p in req.get("plugins") or []}
    shutil.rmtree(req["dir"], ignore_errors=True)
    return answer


def main():
    tag = sys.argv[1]
    root = os.path.realpath(os.getcwd())
    sys.path[0:0] = [root]  # as `python -m pytest` has it
    ops = {"start": op_start, "run": op_run}
    for line in sys.stdin:
        try:
            req = json.loads(line)
            answer = ops[req["op"]](req, root)
        except Exception as exc:  # noqa: BLE001 - reported to the host, which falls back
            answer = {"error": "%s: %s" % (type(exc).__name__, exc)}
        if req.get("op") == "start":
            answer["pid"] = os.getpid()
        sys.stdout.write(tag + " " + json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
