"""The in-container agent: runs a sandbox's commands without one ``docker exec`` each.

Started once per container by :class:`~repogym.sandboxes.docker.DockerSandbox` (as root,
with the system ``python3``, through one ``docker exec`` whose stdin stays open), it reads
one JSON request per line on stdin and writes one JSON answer per line on stdout:

    {"op": "exec", "argv": [...], "user": "repogym", "env": {...}, "cwd": "/repo",
     "timeout": 60.0, "limit": 1048576}
        -> {"exit_code": 0, "stdout": [head b64, tail b64, bytes dropped],
            "stderr": [...], "duration": s, "timed_out": false}
    {"op": "write", "path": "/abs", "data": b64, "mode": 420, "user": "repogym"}
        -> {"ok": true}
    {"op": "read", "path": "/abs"} -> {"data": b64} | {"missing": true}
    {"op": "ping"} -> {"pid": N}

Any failure of the agent itself is answered ``{"error": "..."}``. A command runs in its own
session as the requested user (uid, gid, no supplementary groups, that user's HOME) and is
killed with its whole process group when it overruns ``timeout``; the host enforces the
same limit again from outside (it kills the container when no answer comes in time).

An answer is one line ``"<tag> <json>"``: ``<tag>`` is a random token the host passes as
``argv[1]``, so nothing else that might reach the stream is ever taken for an answer.

This file runs inside the sandbox with nothing but the standard library (Python >= 3.9).
"""

import base64
import json
import os
import pwd
import selectors
import signal
import subprocess
import sys
import time


def _identity(user):
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid, entry.pw_dir


def _b64(data):
    return base64.b64encode(data).decode("ascii")


class Capped:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts the rest."""

    def __init__(self, limit):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data):
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.half
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess


def _collect(proc, timeout, limit):
    """Read both pipes until they close, keeping head and tail; kill at the deadline.

    Returns (stdout cap, stderr cap, timed_out, deadline). Once the command itself has
    exited, what is left of its session is killed and the pipes get a short grace to drain.
    """
    caps = {proc.stdout.fileno(): Capped(limit), proc.stderr.fileno(): Capped(limit)}
    sel = selectors.DefaultSelector()
    for fd in caps:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    timed_out, ended = False, None
    while sel.get_map():
        now = time.monotonic()
        if ended is None and proc.poll() is not None:
            _kill_group(proc.pid)
            ended = now
        if ended is not None and now - ended > 0.5:
            break
        if now >= deadline:
            if timed_out:
                break
            timed_out = True
            _kill_group(proc.pid)
            deadline = now + 2.0
        for key, _events in sel.select(timeout=min(max(deadline - now, 0.0), 0.05)):
            try:
                data = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if data:
                caps[key.fd].add(data)
            else:
                sel.unregister(key.fd)
    sel.close()
    return caps[proc.stdout.fileno()], caps[proc.stderr.fileno()], timed_out, deadline


def op_exec(req):
    user = req.get("user") or "root"
    uid, gid, home = _identity(user)
    env = dict(os.environ)
    env.update({"HOME": home, "USER": user, "LOGNAME": user})
    env.update(req.get("env") or {})
    timeout = max(float(req.get("timeout") or 60.0), 0.01)
    start = time.monotonic()
    kwargs = {}
    if uid != os.getuid():
        kwargs = {"user": uid, "group": gid, "extra_groups": []}
    proc = subprocess.Popen(req["argv"], cwd=req.get("cwd") or "/", env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, **kwargs)
    try:
        out, err, timed_out, deadline = _collect(proc, timeout, int(req.get("limit") or 1 << 20))
        try:  # the pipes may close a moment before the command exits
            code = proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            code = proc.wait()
    finally:
        _kill_group(proc.pid)  # what the command left running in its session goes too
        proc.stdout.close()
        proc.stderr.close()
    answer = {"exit_code": -9 if timed_out else code,
              "duration": time.monotonic() - start, "timed_out": timed_out}
    for name, cap in (("stdout", out), ("stderr", err)):
        answer[name] = [_b64(bytes(cap.head)), _b64(bytes(cap.tail)), cap.dropped]
    return answer


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def op_write(req):
    uid, gid, _home = _identity(req.get("user") or "root")
    path = req["path"]
    parent = os.path.dirname(path)
    missing = []
    while parent and not os.path.isdir(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(missing):
        os.mkdir(directory)
        os.chown(directory, uid, gid)
    tmp = "%s.rg-%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, base64.b64decode(req["data"]))
        os.fchown(fd, uid, gid)
        os.fchmod(fd, int(req.get("mode") or 0o644))
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return {"ok": True}


def op_read(req):
    try:
        with open(req["path"], "rb") as fh:
            return {"data": _b64(fh.read())}
    except FileNotFoundError:
        return {"missing": True}


OPS = {"exec": op_exec, "write": op_write, "read": op_read,
       "ping": lambda req: {"pid": os.getpid()}}


def main():
    tag = sys.argv[1]
    out = sys.stdout
    for line in sys.stdin:
        try:
            req = json.loads(line)
            answer = OPS[req["op"]](req)
        except Exception as exc:  # noqa: BLE001 - reported to the host, which decides
            answer = {"error": "%s: %s" % (type(exc).__name__, exc)}
        out.write(tag + " " + json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
